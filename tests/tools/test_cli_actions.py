"""`tensorfx evaluate` and `tensorfx export` on the iris sample's trainer."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import IRIS
from tensorfx.tools import main

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

# The flags the shared iris model (conftest.iris_model) was trained with.
_TRAINER_FLAGS = [
  '--data-train',
  'data/train.csv',
  '--data-eval',
  'data/eval.csv',
  '--data-schema',
  'schema.yaml',
  '--data-features',
  'features.yaml',
  '--hidden-layers:1',
  '20',
  '--hidden-layers:2',
  '10',
]


def _run(*args):
  return subprocess.run(
    [sys.executable, '-m', 'tensorfx', *args],
    capture_output=True,
    text=True,
    cwd=IRIS,
    timeout=600,
    check=False,
  )


@pytest.mark.release
def test_evaluate_prints_and_writes_the_latest_checkpoint_results(
  iris_model, iris_analysis
):
  output, _ = iris_model
  result = _run(
    'evaluate',
    '--module',
    'trainer',
    '--output',
    output,
    *_TRAINER_FLAGS,
    '--data-metadata',
    iris_analysis,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  summary = json.loads(result.stdout.strip().splitlines()[-1])
  assert summary['step'] == 300
  assert summary['checkpoint'] == os.path.join(
    output, 'checkpoints', 'ckpt-300'
  )
  record = yaml.safe_load(
    pathlib.Path(os.path.join(output, 'job.yaml')).read_text()
  )
  for name, value in record['metrics'].items():
    assert np.isclose(summary['results']['eval'][name], value, rtol=1e-5)
  assert os.path.exists(os.path.join(output, 'evaluations', 'ckpt-300.json'))


@pytest.mark.release
def test_export_writes_a_model_of_the_checkpoint(
  iris_model, iris_analysis, tmp_path
):
  output, model = iris_model
  result = _run(
    'export',
    '--module',
    'trainer',
    '--output',
    output,
    '--checkpoint',
    os.path.join(output, 'checkpoints'),
    '--export-dir',
    str(tmp_path / 'exported'),
    *_TRAINER_FLAGS,
    '--data-metadata',
    iris_analysis,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  from tensorfx.prediction import Model

  exported = Model.load(str(tmp_path / 'exported'))
  instances = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2']
  for a, b in zip(exported.predict(instances), model.predict(instances)):
    assert a['label'] == b['label']
    np.testing.assert_allclose(a['scores'], b['scores'], rtol=1e-5)


def test_evaluate_without_a_checkpoint_fails_clearly(tmp_path, capsys):
  code = main(
    [
      'evaluate',
      '--module',
      os.path.join(IRIS, 'trainer.py'),
      '--output',
      str(tmp_path / 'nothing'),
      '--data-train',
      os.path.join(IRIS, 'data', 'train.csv'),
      '--data-schema',
      os.path.join(IRIS, 'schema.yaml'),
      '--data-features',
      os.path.join(IRIS, 'features.yaml'),
    ]
  )
  assert code == 1
  assert 'The dataset has not been analyzed' in capsys.readouterr().err


def test_help_lists_the_actions(capsys):
  try:
    main(['--help'])
  except SystemExit as e:
    assert e.code == 0
  out = capsys.readouterr().out
  for command in ('evaluate', 'export'):
    assert command in out
