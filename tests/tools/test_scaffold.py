"""`tensorfx scaffold`: a new project that trains, tests and submits as is."""

import json
import os
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement
import pytest

from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.tools import main
from tensorfx.tools import tfx

MODELS = ['nn.FeedForwardClassification', 'custom']


def _scaffold(tmp_path, model, name='churn'):
  directory = tmp_path / name
  assert (
    main(
      ['scaffold', '--name', name, '--dir', str(directory), '--model', model]
    )
    == 0
  )
  return directory


@pytest.mark.parametrize('model', MODELS)
def test_it_writes_a_package_data_a_readme_and_a_test(tmp_path, model, capsys):
  project = _scaffold(tmp_path, model)
  out = capsys.readouterr().out
  files = sorted(
    os.path.relpath(os.path.join(root, f), project)
    for root, _, names in os.walk(project)
    for f in names
  )
  expected = [
    '.gitignore',
    'README.md',
    'churn/__init__.py',
    'churn/task.py',
    'data/eval.csv',
    'data/train.csv',
    'features.yaml',
    'pyproject.toml',
    'schema.yaml',
    'tests/test_churn.py',
  ]
  if model == 'custom':
    expected.append('churn/model.py')
  assert files == sorted(expected)
  assert f'Wrote {len(expected)} files' in out
  schema = Schema.load(str(project / 'schema.yaml'))
  FeatureSet.load(str(project / 'features.yaml')).validate(schema)
  # The YAML templates explain themselves.
  assert (project / 'schema.yaml').read_text().startswith('#')
  rows = (project / 'data' / 'train.csv').read_text().splitlines()
  assert len(rows) == 150 and all(len(r.split(',')) == 4 for r in rows)
  readme = (project / 'README.md').read_text()
  for command in (
    'tensorfx train --module churn.task',
    '--cluster ps=1,workers=2',
    'tensorfx submit',
    '--package-path . --module-name churn.task',
    'pytest',
  ):
    assert command in readme, command
  if model == 'custom':
    assert (
      'class Model(tfx.training.ModelBuilder)'
      in (project / 'churn' / 'model.py').read_text()
    )


def test_next_says_how_to_install_what_the_test_needs(tmp_path, capsys):
  project = _scaffold(tmp_path, 'nn.FeedForwardClassification')
  out = capsys.readouterr().out
  command = 'pip install -e ".[test]" && pytest'
  # The documented install has no pytest: the project's test extra has it.
  assert out.rstrip().endswith(
    f'Next: cd {project} && {command} (or see README.md to train).'
  )
  with open(project / 'pyproject.toml', 'rb') as f:
    extras = tomllib.load(f)['project']['optional-dependencies']
  assert [Requirement(r).name for r in extras['test']] == ['pytest']
  readme = (project / 'README.md').read_text()
  assert 'pip install -e ".[test]"' in readme


def test_git_ignores_what_python_pip_and_pytest_write(tmp_path, capsys):
  project = _scaffold(tmp_path, 'custom')
  capsys.readouterr()
  git = ['git', '-c', 'init.defaultBranch=main']
  subprocess.run([*git, 'init', '-q', str(project)], check=True, timeout=60)
  written = [
    'churn/__pycache__/task.cpython-312.pyc',
    'churn.egg-info/PKG-INFO',
    'build/lib/churn/task.py',
    'dist/churn-0.1.0.tar.gz',
    '.pytest_cache/v/cache/nodeids',
    '.venv/bin/python',
  ]
  kept = ['churn/task.py', 'pyproject.toml', 'data/train.csv', '.gitignore']
  result = subprocess.run(
    [*git, 'check-ignore', '--no-index', *written, *kept],
    cwd=project,
    capture_output=True,
    text=True,
    timeout=60,
    check=False,
  )
  assert result.stdout.split() == written, result.stderr


def test_the_directory_defaults_to_the_name(tmp_path, monkeypatch, capsys):
  monkeypatch.chdir(tmp_path)
  assert main(['scaffold', '--name', 'fresh']) == 0
  assert (tmp_path / 'fresh' / 'fresh' / 'task.py').is_file()
  capsys.readouterr()


def test_it_refuses_a_non_empty_directory(tmp_path, capsys):
  (tmp_path / 'busy').mkdir()
  (tmp_path / 'busy' / 'notes.txt').write_text('mine')
  assert (
    main(['scaffold', '--name', 'busy', '--dir', str(tmp_path / 'busy')]) == 1
  )
  err = capsys.readouterr().err
  assert 'is not empty (notes.txt)' in err and 'never overwrites' in err
  assert os.listdir(tmp_path / 'busy') == ['notes.txt']
  # An empty directory is fine.
  (tmp_path / 'empty').mkdir()
  assert main(['scaffold', '--dir', str(tmp_path / 'empty')]) == 0
  assert (tmp_path / 'empty' / 'empty' / 'task.py').is_file()


@pytest.mark.parametrize(
  'argv, message',
  [
    (['--name', 'My-Project'], 'must be a Python package name'),
    (['--name', 'class'], 'must be a Python package name'),
    ([], 'needs --name'),
  ],
)
def test_bad_names_are_refused(tmp_path, monkeypatch, capsys, argv, message):
  monkeypatch.chdir(tmp_path)
  assert main(['scaffold', *argv]) == 1
  assert message in capsys.readouterr().err
  assert os.listdir(tmp_path) == []


def test_an_unknown_model_is_an_argument_error(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    main(
      [
        'scaffold',
        '--name',
        'x',
        '--dir',
        str(tmp_path / 'x'),
        '--model',
        'nn.Transformer',
      ]
    )
  assert exit_info.value.code == 2
  assert 'nn.FeedForwardClassification, custom' in capsys.readouterr().err


def test_the_tfx_spelling_scaffolds_too(tmp_path, capsys):
  assert (
    tfx.main(
      ['scaffold', '--dir', str(tmp_path / 'legacy'), '--model', 'Custom']
    )
    == 0
  )
  assert (tmp_path / 'legacy' / 'legacy' / 'model.py').is_file()
  capsys.readouterr()


def _files(project):
  return sorted(
    os.path.relpath(os.path.join(root, name), project)
    for root, folders, names in os.walk(project)
    for name in names + folders
  )


def test_submit_dry_run_accepts_the_project_and_writes_nothing_in_it(
  tmp_path, capsys
):
  project = _scaffold(tmp_path, 'custom')
  capsys.readouterr()
  before = _files(project)
  assert (
    main(
      [
        'submit',
        '--dry-run',
        '--project',
        'my-project',
        '--region',
        'us-central1',
        '--staging-bucket',
        'gs://my-bucket/staging',
        '--package-path',
        str(project),
        '--module-name',
        'churn.task',
        '--job-name',
        'churn_1',
        '--job-dir',
        'gs://my-bucket/churn/1',
        '--',
        '--data-train',
        'gs://my-bucket/churn/train.csv',
      ]
    )
    == 0
  )
  request = json.loads(capsys.readouterr().out)
  container = request['customJob']['jobSpec']['workerPoolSpecs'][0][
    'containerSpec'
  ]
  assert container['command'][-3:] == ['--module', 'churn.task', '--']
  assert any(
    uri.endswith('/churn-0.1.0.tar.gz')
    for uri in container['command'][5].split(',')
  )
  # The package was built from the project, not into it (no
  # churn.egg-info/).
  assert _files(project) == before


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.parametrize('model', MODELS)
def test_the_project_passes_its_own_test(tmp_path, model, capsys):
  project = _scaffold(tmp_path, model)
  capsys.readouterr()
  result = subprocess.run(
    [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider'],
    cwd=project,
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
  assert '1 passed' in result.stdout
