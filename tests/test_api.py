"""The public surface: explicit exports, nothing private leaking."""

import importlib
import subprocess
import sys
import types

import pytest

PACKAGES = [
  'tensorfx',
  'tensorfx.cloud',
  'tensorfx.data',
  'tensorfx.embeddings',
  'tensorfx.training',
  'tensorfx.prediction',
  'tensorfx.models',
  'tensorfx.models.nn',
  'tensorfx.tools',
  'tensorfx.tuning',
]

SEED_API = {
  'tensorfx.training.ModelArguments': [
    'build_parser',
    'default',
    'parse',
    'process',
  ],
  'tensorfx.training.ModelBuilder': [
    'args',
    'dataset',
    'build_evaluation',
    'build_evaluation_graph',
    'build_graph_interfaces',
    'build_inference',
    'build_init',
    'build_input',
    'build_output',
    'build_prediction_graph',
    'build_training',
    'build_training_graph',
  ],
  'tensorfx.training.Configuration': [
    'cluster',
    'create_device_setter',
    'create_server',
    'device',
    'distributed',
    'environment',
    'job',
    'local',
    'master',
    'param_server',
    'task',
    'worker',
    'evaluator',
  ],
  'tensorfx.training.ModelTrainer': ['config', 'train'],
  'tensorfx.prediction.Model': ['load', 'predict'],
}


@pytest.mark.parametrize('name', PACKAGES)
def test_exports_are_explicit_and_public(name):
  module = importlib.import_module(name)
  exported = set(module.__all__)
  assert all(not n.startswith('_') or n == '__version__' for n in exported)
  for export in exported:
    value = getattr(module, export)
    if not isinstance(value, types.ModuleType):
      assert getattr(value, '__module__', 'tensorfx').startswith('tensorfx')
  public = {n for n in dir(module) if not n.startswith('_')}
  assert public <= exported | {'annotations'}, public - exported


@pytest.mark.parametrize('qualified', sorted(SEED_API))
def test_seed_api_members_exist(qualified):
  module, name = qualified.rsplit('.', 1)
  cls = getattr(importlib.import_module(module), name)
  missing = [m for m in SEED_API[qualified] if not hasattr(cls, m)]
  assert not missing


def test_import_and_cli_help_do_not_import_tensorflow():
  code = (
    'import sys, tensorfx, tensorfx.training, tensorfx.tools\n'
    'from tensorfx.training import ModelArguments\n'
    'try:\n'
    '  tensorfx.tools.main(["--help"])\n'
    'except SystemExit:\n'
    '  pass\n'
    'assert "tensorflow" not in sys.modules, "tensorflow imported"\n'
  )
  result = subprocess.run(
    [sys.executable, '-c', code],
    capture_output=True,
    text=True,
    timeout=60,
    check=False,
  )
  assert result.returncode == 0, result.stderr
  assert 'train' in result.stdout and 'predict' in result.stdout
