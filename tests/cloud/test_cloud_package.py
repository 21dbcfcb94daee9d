"""Trainer packaging: the shapes --package-path takes, and module checks."""

import os
import tarfile

import pytest

from conftest import IRIS
from tensorfx import ConfigurationError
from tensorfx import cloud


def _members(sdist):
  with tarfile.open(sdist) as tar:
    return {name.split('/', 1)[1] for name in tar.getnames() if '/' in name}


def _tree(root):
  return sorted(
    os.path.relpath(os.path.join(d, f), root)
    for d, _, files in os.walk(root)
    for f in files
    if '__pycache__' not in d
  )


def test_gcloud_style_package_gets_a_generated_setup(tmp_path):
  before = _tree(IRIS)
  sdist = cloud.build_sdist(IRIS, 'iris.trainer', tmp_path / 'dist')
  assert os.path.basename(sdist) == 'iris-0.0.0.tar.gz'
  members = _members(sdist)
  assert {
    'setup.py',
    'iris/__init__.py',
    'iris/trainer.py',
    'iris/schema.yaml',
    'iris/features.yaml',
  } <= members
  # Data is read from gs:// in a job; it does not ride in the package.
  assert not any(m.endswith('.csv') for m in members)
  # The user's tree is never written to (no egg-info, no setup.py).
  assert _tree(IRIS) == before


def test_project_with_setup_py_is_built_as_is(tmp_path):
  project = tmp_path / 'project'
  (project / 'trainer').mkdir(parents=True)
  (project / 'trainer' / '__init__.py').write_text('')
  (project / 'trainer' / 'task.py').write_text('print("hi")\n')
  (project / 'setup.py').write_text(
    'import setuptools\n'
    'setuptools.setup(name="mytrainer", version="1.2.3", '
    'packages=["trainer"])\n'
  )
  before = _tree(project)
  sdist = cloud.build_sdist(project, 'trainer.task', tmp_path / 'dist')
  assert os.path.basename(sdist) == 'mytrainer-1.2.3.tar.gz'
  assert 'trainer/task.py' in _members(sdist)
  # Built where it is, and left as it was: no mytrainer.egg-info/, no build/.
  assert _tree(project) == before
  assert sorted(os.listdir(project)) == ['setup.py', 'trainer']


def test_package_inside_a_project_builds_the_project(tmp_path):
  project = tmp_path / 'project'
  (project / 'trainer').mkdir(parents=True)
  (project / 'trainer' / '__init__.py').write_text('')
  (project / 'trainer' / 'task.py').write_text('')
  (project / 'setup.py').write_text(
    'import setuptools\n'
    'setuptools.setup(name="proj", version="2.0", packages=["trainer"])\n'
  )
  sdist = cloud.build_sdist(
    project / 'trainer', 'trainer.task', tmp_path / 'dist'
  )
  assert os.path.basename(sdist) == 'proj-2.0.tar.gz'


def test_directory_of_packages_gets_a_generated_setup(tmp_path):
  code = tmp_path / 'code'
  (code / 'trainer' / 'sub').mkdir(parents=True)
  (code / 'trainer' / '__init__.py').write_text('')
  (code / 'trainer' / 'sub' / '__init__.py').write_text('')
  (code / 'trainer' / 'sub' / 'task.py').write_text('')
  sdist = cloud.build_sdist(code, 'trainer.sub.task', tmp_path / 'dist')
  assert os.path.basename(sdist) == 'code-0.0.0.tar.gz'
  assert 'trainer/sub/task.py' in _members(sdist)
  assert not os.path.exists(code / 'setup.py')


@pytest.mark.parametrize(
  'module', ['iris.trainr', 'trainer', 'iris.data', 'other.trainer']
)
def test_module_not_in_the_package_is_named(module):
  with pytest.raises(ConfigurationError) as raised:
    cloud.check_module(IRIS, module)
  message = str(raised.value)
  assert message.startswith(
    f'--module-name: module {module!r} is not in the package at {IRIS}'
  )
  assert 'packages found there: iris' in message


def test_package_with_main_runs_as_a_module(tmp_path):
  (tmp_path / 'trainer').mkdir()
  (tmp_path / 'trainer' / '__init__.py').write_text('')
  with pytest.raises(ConfigurationError, match="module 'trainer' is not"):
    cloud.check_module(tmp_path / 'trainer', 'trainer')
  (tmp_path / 'trainer' / '__main__.py').write_text('')
  cloud.check_module(tmp_path / 'trainer', 'trainer')


@pytest.mark.parametrize('module', ['', 'trainer.', '1x.task', 'a-b'])
def test_module_name_must_be_dotted_identifiers(module):
  with pytest.raises(
    ConfigurationError, match='expected a dotted Python module name'
  ):
    cloud.check_module(IRIS, module)


def test_missing_package_path(tmp_path):
  with pytest.raises(
    ConfigurationError, match='--package-path: no such directory'
  ):
    cloud.build_sdist(tmp_path / 'nope', 'trainer.task', tmp_path / 'dist')


def test_failed_build_shows_its_output(tmp_path):
  project = tmp_path / 'project'
  (project / 'trainer').mkdir(parents=True)
  (project / 'trainer' / '__init__.py').write_text('')
  (project / 'trainer' / 'task.py').write_text('')
  (project / 'setup.py').write_text('raise SystemExit("setup is broken")\n')
  with pytest.raises(
    ConfigurationError,
    match='(?s)building a source distribution of .* failed.*setup is broken',
  ):
    cloud.build_sdist(project, 'trainer.task', tmp_path / 'dist')
