"""A damaged checkpoint is never fatal while an older readable one exists.

Each test damages real checkpoint files of an iris job the way a full
disk, a killed copy or a partial upload does, then resumes, evaluates or
exports: the damaged checkpoint is named in a warning and moved aside
(`*.damaged`), the newest readable one is used, and when none is readable
the run stops with one line naming the directory.
"""

import logging
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from conftest import iris_args
from tensorfx import TrainingError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._checkpoints import damaged as _damaged

# On one worker: the job is trained to step 1000 once (fixture `trained`).
pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_damaged_checkpoints'),
  pytest.mark.release,
]

_INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']
_FLAGS = (
  '--hidden-layers:1',
  '8',
  '--seed',
  '4',
  '--checkpoint-interval-steps',
  '200',
)


def _builder(output, dataset, *flags):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, *_FLAGS, *flags), parse_job=True
  )
  return nn.FeedForwardClassification(args, dataset), job


@pytest.fixture(scope='module')
def trained(tmp_path_factory, iris_dataset_factory):
  """An iris job trained to step 1000 with checkpoints every 200 steps."""
  output = tmp_path_factory.mktemp('damaged') / 'job'
  builder, job = _builder(output, iris_dataset_factory(), '--max-steps', '1000')
  training.ModelTrainer().train(builder, job)
  return output


@pytest.fixture
def job(trained, tmp_path):
  """A fresh copy of the trained job, to damage."""
  copy = tmp_path / 'job'
  shutil.copytree(trained, copy)
  return copy


def _data(output, step):
  return output / 'checkpoints' / f'ckpt-{step}.data-00000-of-00001'


def _truncate(path):
  with open(path, 'r+b') as f:
    f.truncate(os.path.getsize(path) // 2)


def _flip(path):
  content = bytearray(path.read_bytes())
  content[len(content) // 2] ^= 0x10
  path.write_bytes(bytes(content))


def _resume(output, dataset, max_steps='1200'):
  builder, job = _builder(output, dataset, '--max-steps', max_steps)
  model = training.ModelTrainer().train(builder, job)
  return builder, model


def _warnings(caplog):
  return [
    r.getMessage()
    for r in caplog.records
    if r.levelno == logging.WARNING and r.name.startswith('tensorfx')
  ]


@pytest.mark.parametrize(
  'damage',
  [
    pytest.param(lambda o: _truncate(_data(o, 1000)), id='truncated-data'),
    pytest.param(
      lambda o: _truncate(o / 'checkpoints' / 'ckpt-1000.index'),
      id='truncated-index',
    ),
    pytest.param(lambda o: _flip(_data(o, 1000)), id='bit-flipped-data'),
  ],
)
def test_damaged_newest_checkpoint_is_moved_aside_and_training_resumes(
  job, iris_dataset_factory, caplog, damage
):
  damage(job)
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    builder, model = _resume(job, iris_dataset_factory())
  (warning,) = [w for w in _warnings(caplog) if 'damaged' in w]
  assert f'{job}/checkpoints/ckpt-1000 is damaged' in warning
  assert 'using ckpt-800' in warning
  assert any(
    f'Resumed from {job}/checkpoints/ckpt-800 at step 800' in r.getMessage()
    for r in caplog.records
  )
  # Moved aside, not deleted.
  aside = sorted(p.name for p in (job / 'checkpoints').glob('*.damaged'))
  assert aside == [
    'ckpt-1000.data-00000-of-00001.damaged',
    'ckpt-1000.index.damaged',
  ]
  assert int(builder.global_step.numpy()) == 1200
  assert yaml.safe_load((job / 'job.yaml').read_text())['global_step'] == 1200
  assert tf.train.latest_checkpoint(str(job / 'checkpoints')).endswith(
    'ckpt-1200'
  )
  assert [p['label'] for p in model.predict(_INSTANCES)] == [
    'virginica',
    'setosa',
    'versicolor',
  ]


def test_state_file_naming_missing_checkpoint(
  job, iris_dataset_factory, caplog
):
  for path in (job / 'checkpoints').glob('ckpt-1000.*'):
    path.unlink()
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    builder, _ = _resume(job, iris_dataset_factory())
  assert any(
    'ckpt-1000 is damaged (no index file ckpt-1000.index)' in w
    for w in _warnings(caplog)
  )
  assert any(
    'Resumed from' in r.getMessage() and 'ckpt-800' in r.getMessage()
    for r in caplog.records
  )
  assert int(builder.global_step.numpy()) == 1200


def test_unreadable_state_file_loses_no_checkpoint(
  job, iris_dataset_factory, caplog
):
  # TensorFlow reads a garbled state file as "no checkpoint", which would
  # train from step 0 and overwrite the job's checkpoints.
  (job / 'checkpoints' / 'checkpoint').write_text('model_checkpoint_pa')
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    builder, _ = _resume(job, iris_dataset_factory(), max_steps='1000')
  assert any('state file' in w and 'unreadable' in w for w in _warnings(caplog))
  assert any(
    'Resumed from' in r.getMessage()
    and 'ckpt-1000 at step 1000' in r.getMessage()
    for r in caplog.records
  )
  assert int(builder.global_step.numpy()) == 1000
  state = tf.train.get_checkpoint_state(str(job / 'checkpoints'))
  assert state.model_checkpoint_path.endswith('ckpt-1000')
  assert len(state.all_model_checkpoint_paths) == 5


def test_no_readable_checkpoint_stops_with_one_line_and_moves_nothing(
  job, iris_dataset_factory
):
  for data in (job / 'checkpoints').glob('ckpt-*.data-*'):
    _truncate(data)
  with pytest.raises(TrainingError) as raised:
    _resume(job, iris_dataset_factory())
  message = str(raised.value)
  assert '\n' not in message
  assert message.startswith(
    f'No readable checkpoint in {job}/checkpoints: ckpt-1000: truncated data'
  )
  assert 'ckpt-200: truncated data' in message
  assert 'Restore the directory from a copy' in message
  assert not list((job / 'checkpoints').glob('*.damaged'))


def test_evaluate_and_export_use_the_newest_readable_checkpoint(
  job, iris_dataset_factory, tmp_path
):
  _truncate(_data(job, 1000))
  builder, config = _builder(job, iris_dataset_factory())
  summary = training.ModelTrainer().evaluate(builder, config)
  assert summary['checkpoint'] == str(job / 'checkpoints' / 'ckpt-800')
  assert summary['step'] == 800
  assert (
    job / 'checkpoints' / 'ckpt-1000.data-00000-of-00001.damaged'
  ).exists()
  builder, config = _builder(job, iris_dataset_factory())
  model = training.ModelTrainer().export(
    builder, config, directory=str(tmp_path / 'model')
  )
  assert len(model.predict(_INSTANCES)) == 3


def test_a_damaged_checkpoint_named_explicitly_is_an_error(
  job, iris_dataset_factory
):
  _flip(_data(job, 800))
  builder, config = _builder(job, iris_dataset_factory())
  with pytest.raises(
    TrainingError,
    match=r'Cannot read the checkpoint '
    r'.*ckpt-800 \(--checkpoint\): it is damaged \(.*'
    r'Checksum does not match.*\)\. Give an older '
    'checkpoint',
  ):
    training.ModelTrainer().evaluate(
      builder, config, str(job / 'checkpoints' / 'ckpt-800')
    )


def test_warm_start_skips_but_does_not_move_another_runs_damage(
  job, iris_dataset_factory, tmp_path, caplog
):
  _truncate(_data(job, 1000))
  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    builder, config = _builder(
      tmp_path / 'new',
      iris_dataset_factory(),
      '--max-steps',
      '10',
      '--warm-start',
      str(job),
    )
    training.ModelTrainer().train(builder, config)
  assert any('ckpt-1000 is damaged' in w for w in _warnings(caplog))
  assert not list((job / 'checkpoints').glob('*.damaged'))


def test_problem_names_each_kind_of_damage(job):
  checkpoints = job / 'checkpoints'
  assert _damaged.problem(str(checkpoints / 'ckpt-600')) is None
  _truncate(_data(job, 600))
  assert _damaged.problem(str(checkpoints / 'ckpt-600')).startswith(
    'truncated data'
  )
  _flip(_data(job, 400))
  assert 'Checksum does not match' in _damaged.problem(
    str(checkpoints / 'ckpt-400')
  )
  assert (
    _damaged.problem(str(checkpoints / 'ckpt-7'))
    == 'no index file ckpt-7.index'
  )


@pytest.mark.slow
def test_the_issue_scenario_on_the_command_line(trained, tmp_path):
  """Issue 19 as a user met it.

  `tensorfx train` to 1000 with checkpoints every 200, the newest data file
  damaged, then on to 1200.
  """
  output = tmp_path / 'job'
  shutil.copytree(trained, output)
  _truncate(_data(output, 1000))
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--data-train',
    'data/train.csv',
    '--data-eval',
    'data/eval.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    *_FLAGS,
    '--max-steps',
    '1200',
  ]
  result = subprocess.run(
    command, cwd=IRIS, capture_output=True, text=True, timeout=300, check=False
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Traceback' not in result.stderr
  assert 'ckpt-1000 is damaged (truncated data' in result.stderr
  assert 'Resumed from' in result.stderr and 'at step 800' in result.stderr
  assert (
    yaml.safe_load((output / 'job.yaml').read_text())['global_step'] == 1200
  )

  # Every checkpoint damaged: one line naming the directory, exit code 1.
  for data in (output / 'checkpoints').glob('ckpt-*.data-00000-of-00001'):
    _truncate(data)
  result = subprocess.run(
    command[:-1] + ['1400'],
    cwd=IRIS,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 1
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith(
    'tensorfx train: error: No readable checkpoint in '
    f'{output}/checkpoints: ckpt-1200: truncated data'
  )
  assert 'Traceback' not in result.stderr


@pytest.mark.slow
def test_the_evaluator_skips_and_moves_aside_a_damaged_checkpoint(
  job, iris_analysis
):
  """The evaluator task, in its own process, on a finished job's checkpoints.

  The damaged one is named, moved aside, never evaluated.
  """
  import json

  _flip(_data(job, 800))
  env = dict(
    os.environ,
    TF_CONFIG=json.dumps(
      {
        'cluster': {'chief': ['127.0.0.1:1'], 'evaluator': ['127.0.0.1:2']},
        'task': {'type': 'evaluator', 'index': 0},
      }
    ),
    # The job (which ended before this process began) is this one.
    TENSORFX_JOB_STARTED='0',
  )
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      str(job),
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      iris_analysis,
      *_FLAGS,
      '--max-steps',
      '1000',
    ],
    cwd=IRIS,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert (
    f'The checkpoint {job}/checkpoints/ckpt-800 is damaged' in result.stderr
  )
  evaluated = json.loads(
    (job / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  assert evaluated['evaluated'] == [200, 400, 600, 1000]
  assert (job / 'checkpoints' / 'ckpt-800.data-00000-of-00001.damaged').exists()
