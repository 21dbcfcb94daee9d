"""The public surface: explicit exports, nothing private leaking."""

import importlib
import os
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


_KERAS_PROBE = """
import os, sys
import tensorfx
import tensorflow as tf
import tf_keras
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
print(os.environ.get('TF_USE_LEGACY_KERAS'), isinstance(model, tf_keras.Model),
      'keras.src.optimizers' in sys.modules)
"""


@pytest.mark.parametrize(
  ('environ', 'expected'),
  [
    # Keras 2 before TensorFlow's import: Keras 3 is never loaded.
    ({}, '1 True False'),
    # A user's own choice stands.
    ({'TF_USE_LEGACY_KERAS': '0'}, '0 False True'),
  ],
  ids=['default', 'users-choice'],
)
def test_importing_tensorfx_first_makes_tf_keras_keras_2(environ, expected):
  env = {k: v for k, v in os.environ.items() if k != 'TF_USE_LEGACY_KERAS'}
  result = subprocess.run(
    [sys.executable, '-c', _KERAS_PROBE],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
    env={**env, **environ},
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split()[-3:] == expected.split()
