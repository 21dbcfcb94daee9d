"""The package installs by its distribution name and runs, on each Python.

The wheel is built once; for every supported interpreter found on this
machine (the versions pyproject.toml's requires-python admits, looked up as
pythonX.Y on PATH and under ~/.pyenv/versions), a fresh virtual environment
installs `tensorfx-sdk` from it (dependencies from the package index) and
runs the iris sample as the README's first command does, for a few steps.

Slow (a full TensorFlow install per interpreter): marked `install`, so
`pytest -m "not install"` leaves it out while working.
`TENSORFX_INSTALL_PYTHONS=3.11,3.12` limits the versions tried.

The interpreter running the tests already has every dependency installed
(CI's `pip install -e ".[test]"` proved them installable from the declared
requirements): its venv sees them and pip installs only the wheel, which
saves CI a minutes-long TensorFlow install. "Its" packages are those of the
environment the tests run in, which is often a virtualenv: the new venv
lists that environment's site-packages directories in a .pth file (plain
paths, so this checkout's editable install stays out), where
`--system-site-packages` would show only the base interpreter's. The other
interpreters install everything from the package index, with uv.
"""

import ast
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib

from packaging.specifiers import SpecifierSet
import pytest

from conftest import IRIS
from conftest import README_TRAIN
from conftest import ROOT

# One worker builds the wheel and the installs (module fixtures) once.
pytestmark = [
  pytest.mark.install,
  pytest.mark.slow,
  pytest.mark.xdist_group('test_install'),
  pytest.mark.release,
]

DISTRIBUTION = 'tensorfx-sdk'
# Minor versions that could exist; requires-python picks the supported ones.
_CANDIDATES = [f'3.{minor}' for minor in range(8, 16)]


def _project():
  with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
    return tomllib.load(f)['project']


def supported_versions():
  specifier = SpecifierSet(_project()['requires-python'])
  return [v for v in _CANDIDATES if specifier.contains(f'{v}.0')]


def find_interpreter(version):
  """A pythonX.Y interpreter: on PATH, else the newest pyenv build."""
  found = shutil.which(f'python{version}')
  if found and not found.endswith('/shims/python' + version):
    return found
  builds = sorted(
    glob.glob(
      os.path.expanduser(f'~/.pyenv/versions/{version}.*/bin/python{version}')
    ),
    key=lambda p: [int(x) for x in p.split('/')[-3].split('.') if x.isdigit()],
  )
  return builds[-1] if builds else None


def _wanted():
  chosen = os.environ.get('TENSORFX_INSTALL_PYTHONS')
  versions = supported_versions()
  if chosen:
    versions = [v for v in versions if v in chosen.split(',')]
  return versions


def _clean_env(**extra):
  """The environment without this checkout on the path."""
  env = {
    k: v
    for k, v in os.environ.items()
    if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV')
  }
  env.update(CUDA_VISIBLE_DEVICES='', no_proxy='127.0.0.1,localhost', **extra)
  return env


def test_every_supported_python_includes_3_11_and_3_12():
  assert {'3.11', '3.12'} <= set(supported_versions())
  assert _project()['name'] == DISTRIBUTION


def test_a_venv_of_the_running_python_sees_its_packages(tmp_path):
  # Also when the tests run in a virtualenv, whose packages a venv made
  # with --system-site-packages would not see.
  venv = tmp_path / 'venv'
  subprocess.run(
    [sys.executable, '-m', 'venv', '--without-pip', str(venv)],
    check=True,
    timeout=120,
    env=_clean_env(),
  )
  _see_running_packages(venv / 'bin' / 'python')
  found = subprocess.run(
    [
      str(venv / 'bin' / 'python'),
      '-c',
      'import importlib.util as u; print(u.find_spec("tensorflow").origin);'
      'tensorfx = u.find_spec("tensorfx"); print(tensorfx and '
      'tensorfx.origin)',
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
    env=_clean_env(),
    cwd=tmp_path,
  )
  assert found.returncode == 0, found.stderr
  tensorflow, tensorfx = found.stdout.split('\n')[:2]
  import tensorflow as tf

  assert os.path.dirname(tensorflow) == os.path.dirname(tf.__file__)
  # This checkout's editable install is not: the wheel is what is tested.
  assert not tensorfx.startswith(ROOT), tensorfx


@pytest.fixture(scope='module')
def wheelhouse(tmp_path_factory):
  """The wheel, built once from this checkout."""
  out = tmp_path_factory.mktemp('wheelhouse')
  result = subprocess.run(
    [sys.executable, '-m', 'build', '--wheel', '--outdir', str(out), ROOT],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
    env=_clean_env(),
  )
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  shutil.rmtree(os.path.join(ROOT, 'build'), ignore_errors=True)
  wheels = glob.glob(str(out / 'tensorfx_sdk-*-py3-none-any.whl'))
  assert len(wheels) == 1, os.listdir(out)
  return out


def test_the_wheel_carries_license_and_type_marker(wheelhouse):
  import zipfile

  (wheel,) = glob.glob(str(wheelhouse / '*.whl'))
  names = zipfile.ZipFile(wheel).namelist()
  assert 'tensorfx/py.typed' in names
  assert any(n.endswith('licenses/LICENSE') for n in names)
  assert not any(n.startswith(('tests/', 'samples/', 'docs/')) for n in names)


def test_a_plain_install_brings_optuna_for_tune(wheelhouse):
  import zipfile

  from packaging.requirements import Requirement

  (wheel,) = glob.glob(str(wheelhouse / '*.whl'))
  with zipfile.ZipFile(wheel) as archive:
    (metadata,) = [
      n for n in archive.namelist() if n.endswith('.dist-info/METADATA')
    ]
    text = archive.read(metadata).decode('utf-8')
  required = [
    Requirement(line.split(':', 1)[1])
    for line in text.splitlines()
    if line.startswith('Requires-Dist:')
  ]
  plain = {r.name.lower() for r in required if r.marker is None}
  # `tensorfx tune` is a main command: no extra to name, none to forget.
  assert {'optuna', 'sqlalchemy', 'alembic'} <= plain
  assert 'tune' not in {
    line.split(':', 1)[1].strip()
    for line in text.splitlines()
    if line.startswith('Provides-Extra:')
  }


def _running_site_packages():
  """Where the environment running the tests has its packages.

  Its sys.path without the standard library, PYTHONPATH and this checkout:
  the site-packages directories (the virtualenv's, the base's where it
  sees them, the user's) and any directory their .pth files added.
  """
  paths = sysconfig.get_paths()
  standard = {
    os.path.realpath(p)
    for p in (
      paths['stdlib'],
      paths['platstdlib'],
      os.path.join(paths['platstdlib'], 'lib-dynload'),
    )
  }
  given = os.environ.get('PYTHONPATH', '').split(os.pathsep)
  skipped = standard | {os.path.realpath(p) for p in given if p}
  found = []
  for entry in sys.path:
    real = os.path.realpath(entry or os.curdir)
    if (
      os.path.isdir(real)
      and real not in skipped
      and real not in found
      and not (real + os.sep).startswith(os.path.realpath(ROOT) + os.sep)
    ):
      found.append(real)
  return found


def _see_running_packages(python):
  """Makes `python`'s venv import what the running environment has."""
  purelib = subprocess.run(
    [
      str(python),
      '-c',
      'import sysconfig; print(sysconfig.get_paths()["purelib"])',
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=True,
    env=_clean_env(),
  ).stdout.strip()
  # Plain directories, after the venv's own: its .pth files (this
  # checkout's editable install among them) are not run.
  with open(
    os.path.join(purelib, 'running_environment.pth'), 'w', encoding='utf-8'
  ) as f:
    f.write(''.join(f'{d}\n' for d in _running_site_packages()))


def _uv():
  """The uv installer (a test dependency) of the running environment."""
  import uv

  return uv.find_uv_bin()


def _install_and_run(version, wheelhouse, work):
  """venv + `pip install tensorfx-sdk` + the iris sample, for one Python."""
  running = version == '{}.{}'.format(*sys.version_info[:2])
  python = sys.executable if running else find_interpreter(version)
  if python is None:
    return None
  venv = work / 'venv'
  subprocess.run(
    [python, '-m', 'venv', str(venv)], check=True, timeout=120, env=_clean_env()
  )
  bin_dir = venv / 'bin'
  if running:
    _see_running_packages(bin_dir / 'python')
  if running:
    # Beside the running interpreter's packages (this checkout installed
    # among them), pip installs the wheel over them, without dependencies.
    command = [
      str(bin_dir / 'python'),
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--find-links',
      str(wheelhouse),
      '--force-reinstall',
      '--no-deps',
      DISTRIBUTION,
    ]
  else:
    # Everything from the package index, resolved from the wheel's declared
    # requirements. uv, not pip: the same wheels from the same index, in
    # about 30 s where pip took 9 min (downloads in parallel, no bytecode
    # compiled). pip's own resolution of those requirements is what CI's
    # `pip install -e ".[test]"` checks.
    command = [
      _uv(),
      'pip',
      'install',
      '--quiet',
      '--python',
      str(bin_dir / 'python'),
      '--find-links',
      str(wheelhouse),
      DISTRIBUTION,
    ]
  install = subprocess.run(
    command,
    capture_output=True,
    text=True,
    timeout=1200,
    check=False,
    env=_clean_env(),
  )
  if install.returncode:
    return {'venv': venv, 'install': install}
  # The sample from a copy, so nothing of this checkout is importable.
  sample = work / 'iris'
  shutil.copytree(IRIS, sample)
  env = _clean_env(PATH=f'{bin_dir}{os.pathsep}{os.environ["PATH"]}')
  run = subprocess.run(
    [
      str(bin_dir / 'tensorfx'),
      *README_TRAIN,
      '--output',
      str(work / 'output'),
      '--max-steps',
      '300',
    ],
    cwd=sample,
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
    env=env,
  )
  where = subprocess.run(
    [
      str(bin_dir / 'python'),
      '-c',
      'import sys, tensorfx, importlib.metadata as m; '
      'print(tensorfx.__file__); print(m.version("tensorfx-sdk")); '
      'print(sys.version_info[:2])',
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
    env=env,
    cwd=work,
  )
  return {'venv': venv, 'install': install, 'run': run, 'where': where}


@pytest.fixture(scope='module')
def installs(wheelhouse, tmp_path_factory):
  """Every wanted Python's install and run, one after another.

  With pip, three interpreters in turn took 8 min on the 2-core machine
  (side by side 11.7 min, under other load); uv's installs take about
  half a minute each, so they still run in turn;
  TENSORFX_INSTALL_WORKERS=N runs N at a time.
  """
  import concurrent.futures

  versions = _wanted()
  workers = int(os.environ.get('TENSORFX_INSTALL_WORKERS', '1'))
  with concurrent.futures.ThreadPoolExecutor(max(workers, 1)) as pool:
    futures = {
      v: pool.submit(
        _install_and_run, v, wheelhouse, tmp_path_factory.mktemp(f'py{v}')
      )
      for v in versions
    }
    return {v: f.result() for v, f in futures.items()}


@pytest.mark.parametrize('version', _wanted())
def test_fresh_venv_installs_by_name_and_runs_iris(version, installs):
  result = installs[version]
  if result is None:
    pytest.skip(f'no Python {version} interpreter on this machine')
  assert result['install'].returncode == 0, result['install'].stderr[-4000:]
  run = result['run']
  assert run.returncode == 0, run.stderr[-4000:]
  predictions = ast.literal_eval(run.stdout.strip().splitlines()[-1])
  assert len(predictions) == 3
  assert {p['label'] for p in predictions} <= {
    'setosa',
    'versicolor',
    'virginica',
  }
  assert predictions[1]['label'] == 'setosa'  # the easy one
  assert all(abs(sum(p['scores']) - 1) < 1e-4 for p in predictions)
  assert result['where'].returncode == 0, result['where'].stderr[-3000:]
  path, installed, info = result['where'].stdout.split('\n')[:3]
  assert path.startswith(str(result['venv'])), path
  assert ast.literal_eval(info) == tuple(int(x) for x in version.split('.'))
  with open(os.path.join(ROOT, 'tensorfx', '_version.py')) as f:
    assert f"'{installed}'" in f.read()
