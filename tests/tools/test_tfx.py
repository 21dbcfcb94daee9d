"""`python -m tensorfx.tools.tfx`: the original's tool over tensorfx's CLI.

Training and predicting through it are in tests/samples/test_original_iris;
here, what each `tfx` command line runs.
"""

import os
import subprocess
import sys

import pytest

from tensorfx.tools import tfx


def test_train_runs_tensorfx_train_with_an_absolute_output():
  command = tfx.translate(
    [
      'train',
      '--module',
      'trainer.csv',
      '--output',
      'out',
      '--max-steps',
      '10',
      '--hidden-layers:1',
      '20',
    ]
  )
  assert command == [
    'train',
    '--module',
    'trainer.csv',
    '--output',
    os.path.abspath('out'),
    '--max-steps',
    '10',
    '--hidden-layers:1',
    '20',
  ]


def test_distributed_runs_a_master_a_worker_and_a_parameter_server():
  command = tfx.translate(['train', '--module', 'm', '--distributed'])
  assert command[command.index('--cluster') + 1] == 'ps=1,workers=1'


def test_train_output_defaults_to_output_as_the_original():
  command = tfx.translate(['train', '--module', 'm'])
  assert command[command.index('--output') + 1] == os.path.abspath('output')


def test_predict_reads_csv_instances_in_batches():
  assert tfx.translate(
    [
      'predict',
      '--model',
      'job/model',
      '--input',
      'in.csv',
      '--output',
      'out.json',
    ]
  ) == [
    'predict',
    '--model',
    'job/model',
    '--batch-size',
    '10',
    '--format',
    'csv',
    '--input',
    'in.csv',
    '--output',
    'out.json',
  ]


def test_scaffold_passes_its_flags_on():
  assert tfx.translate(['scaffold', '--dir', 'p', '--model', 'custom']) == [
    'scaffold',
    '--model',
    'custom',
    '--dir',
    'p',
  ]


def test_unknown_flags_of_predict_are_errors(capsys):
  with pytest.raises(SystemExit) as exit_info:
    tfx.translate(['predict', '--model', 'm', '--nope'])
  assert exit_info.value.code == 2
  assert '--nope' in capsys.readouterr().err


def test_it_runs_as_a_module_and_requires_a_command():
  result = subprocess.run(
    [sys.executable, '-m', 'tensorfx.tools.tfx', '--help'],
    capture_output=True,
    text=True,
    check=False,
  )
  assert result.returncode == 0
  for command in ('train', 'predict', 'scaffold'):
    assert command in result.stdout
  result = subprocess.run(
    [sys.executable, '-m', 'tensorfx.tools.tfx'],
    capture_output=True,
    text=True,
    check=False,
  )
  assert result.returncode == 2 and 'COMMAND' in result.stderr
