"""cloudbuild.yaml runs what .ci/run runs, then builds and publishes."""

import os
import subprocess

import yaml

from conftest import ROOT


def _load():
  with open(os.path.join(ROOT, 'cloudbuild.yaml')) as f:
    return yaml.safe_load(f)


def _script(step):
  """A bash step's script as bash sees it (Cloud Build turns $$ into $)."""
  assert step['entrypoint'] == 'bash'
  assert step['args'][0] == '-c'
  return step['args'][1].replace('$$', '$')


def _commands(text):
  """Command lines: no shebang, comments or blank lines."""
  return [line.strip() for line in text.splitlines()
          if line.strip() and not line.lstrip().startswith('#')]


def test_steps_in_order_on_python_311():
  build = _load()
  assert [s['id'] for s in build['steps']] == ['test', 'build', 'publish']
  assert build['steps'][0]['name'] == 'python:3.11'
  assert build['steps'][1]['name'] == 'python:3.11'


def test_test_step_runs_exactly_the_ci_commands():
  with open(os.path.join(ROOT, '.ci', 'run')) as f:
    ci = _commands(f.read())
  step = _load()['steps'][0]
  assert _commands(_script(step)) == ci
  # $0 is .ci/run, so its `cd "$(dirname "$0")/.."` reaches the root.
  assert step['args'][2:] == ['.ci/run']


def test_test_step_starts_in_the_repository_root():
  step = _load()['steps'][0]
  lines = _script(step).splitlines()
  # Everything up to the install, then where the script stands.
  prefix = [l for l in lines if not l.startswith('pip install')] + ['pwd']
  result = subprocess.run(['bash', '-c', '\n'.join(prefix), '.ci/run'],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=30, check=True)
  assert result.stdout.strip() == os.path.realpath(ROOT)


def test_build_and_publish_steps():
  steps = _load()['steps']
  build = _script(steps[1])
  assert 'pip install build' in build
  assert 'python -m build --sdist --wheel --outdir dist .' in build
  publish = steps[2]['args'][1]
  assert publish == ('gcloud storage cp dist/*.tar.gz dist/*.whl '
                     'gs://${_BUCKET}/tensorfx/')
  # No default bucket: a build without _BUCKET fails rather than publishing
  # somewhere unintended.
  assert '_BUCKET' not in (_load().get('substitutions') or {})


def test_only_user_substitutions_are_unescaped():
  """Every `$` Cloud Build would substitute is `_BUCKET`; the rest are $$."""
  import re  # pylint: disable=g-import-not-at-top
  with open(os.path.join(ROOT, 'cloudbuild.yaml')) as f:
    text = '\n'.join(l for l in f.read().splitlines()
                     if not l.lstrip().startswith('#'))
  names = re.findall(r'(?<!\$)\$(?!\$)\{?(\w+)', text.replace('$$', ''))
  assert names == ['_BUCKET']
