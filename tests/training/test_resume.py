"""What a run starts from: --resume-from a checkpoint, or --no-resume."""

import gc
import glob
import logging
import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import TrainingError
from tensorfx import training
from tensorfx.models import nn

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_resume')]


class _AtBegin(training.Callback):
  """Records the optimizer's state when training begins (after restore)."""

  def __init__(self):
    super().__init__()
    self.state = None

  def on_train_begin(self, logs):
    optimizer = self.context.builder.optimizer
    self.state = {
      'step': logs['step'],
      'iterations': int(optimizer.iterations.numpy()),
      'slots': {
        v.name: v.numpy()
        for v in optimizer.variables
        if v.name.startswith(('m/', 'v/'))
      },
    }


def _train(output, dataset, *extra, hidden='8'):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output, '--hidden-layers:1', hidden, '--batch-size', '16', *extra
    ),
    parse_job=True,
  )
  builder = nn.FeedForwardClassification(args, dataset)
  begin = _AtBegin()
  training.ModelTrainer(callbacks=[begin]).train(builder, job)
  return begin.state


def _job(output):
  return yaml.safe_load((output / 'job.yaml').read_text())


@pytest.fixture(scope='module')
def first(tmp_path_factory, iris_dataset_factory):
  """A job trained to step 10 with checkpoints at steps 5 and 10."""
  output = tmp_path_factory.mktemp('resume') / 'first'
  _train(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '10',
    '--checkpoint-interval-steps',
    '5',
  )
  return output


def _slots(prefix):
  """The Adam slots and iteration count a checkpoint holds."""
  reader = tf.train.load_checkpoint(prefix)
  slots, iterations = {}, None
  for key in reader.get_variable_to_shape_map():
    if '_optimizer' in key and key.endswith('.ATTRIBUTES/VARIABLE_VALUE'):
      value = reader.get_tensor(key)
      if np.ndim(value) == 0 and 'iter' in key:
        iterations = int(value)
      elif np.ndim(value):
        slots[key] = value
  return iterations, slots


def test_resume_from_a_checkpoint_restores_the_optimizer_state(
  tmp_path, first, iris_dataset_factory
):
  prefix = str(first / 'checkpoints' / 'ckpt-5')
  iterations, slots = _slots(prefix)
  assert iterations == 5 and len(slots) == 8  # m and v of 4 variables.
  output = tmp_path / 'branch'
  state = _train(
    output, iris_dataset_factory(), '--max-steps', '8', '--resume-from', prefix
  )
  assert state['step'] == 5
  assert state['iterations'] == 5
  # Adam's m and v, each as the checkpoint holds it.
  assert sorted(
    np.round(np.sum(v), 6) for v in state['slots'].values()
  ) == sorted(np.round(np.sum(v), 6) for v in slots.values())
  assert _job(output)['global_step'] == 8
  # The state resumed from was saved into this output first.
  assert os.path.exists(output / 'checkpoints' / 'ckpt-5.index')
  assert tf.train.latest_checkpoint(output / 'checkpoints').endswith('ckpt-8')


@pytest.mark.release
def test_a_restarted_job_resumes_its_own_checkpoint_not_path_again(
  tmp_path, first, iris_dataset_factory
):
  prefix = str(first / 'checkpoints' / 'ckpt-5')
  output = tmp_path / 'branch'
  _train(
    output, iris_dataset_factory(), '--max-steps', '7', '--resume-from', prefix
  )
  # The same command again (a preempted job restarted): from step 7.
  state = _train(
    output, iris_dataset_factory(), '--max-steps', '9', '--resume-from', prefix
  )
  assert state['step'] == 7 and state['iterations'] == 7
  assert _job(output)['global_step'] == 9


def test_resume_from_an_earlier_checkpoint_of_the_same_output(
  tmp_path, first, iris_dataset_factory
):
  output = tmp_path / 'job'
  _train(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '10',
    '--checkpoint-interval-steps',
    '5',
  )
  state = _train(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '10',
    '--resume-from',
    str(output / 'checkpoints' / 'ckpt-5'),
  )
  assert state['step'] == 5 and state['iterations'] == 5
  assert _job(output)['global_step'] == 10


@pytest.mark.parametrize(
  'name, expected',
  [
    ('missing', ConfigurationError),
    ('not-a-checkpoint.txt', ConfigurationError),
    ('empty-dir', ConfigurationError),
  ],
)
def test_resume_from_what_is_not_a_checkpoint_names_the_path(
  tmp_path, iris_dataset_factory, name, expected
):
  path = tmp_path / name
  if name.endswith('.txt'):
    path.write_text('hello\n')
  elif name == 'empty-dir':
    path.mkdir()
  with pytest.raises(expected, match=f'--resume-from {path}'):
    _train(
      tmp_path / 'out',
      iris_dataset_factory(),
      '--max-steps',
      '2',
      '--resume-from',
      str(path),
    )


def test_resume_from_another_models_checkpoint_names_the_path(
  tmp_path, first, iris_dataset_factory
):
  prefix = str(first / 'checkpoints' / 'ckpt-5')
  with pytest.raises(
    TrainingError, match=f'The checkpoint {prefix} does not match'
  ):
    _train(
      tmp_path / 'out',
      iris_dataset_factory(),
      '--max-steps',
      '2',
      '--resume-from',
      prefix,
      hidden='5',
    )


def test_a_corrupt_checkpoint_names_the_path(
  tmp_path, first, iris_dataset_factory
):
  copy = tmp_path / 'copy'
  copy.mkdir()
  for path in glob.glob(str(first / 'checkpoints' / 'ckpt-5.*')):
    data = pathlib.Path(path).read_bytes()
    if path.endswith('.index'):
      data = data[: len(data) // 2]  # Cut short, as by a failed copy.
    (copy / os.path.basename(path)).write_bytes(data)
  with pytest.raises(
    TrainingError, match=f'Cannot read the checkpoint {copy}/ckpt-5'
  ):
    _train(
      tmp_path / 'out',
      iris_dataset_factory(),
      '--max-steps',
      '2',
      '--resume-from',
      str(copy / 'ckpt-5'),
    )


def test_no_resume_starts_afresh_and_moves_the_old_run_aside(
  tmp_path, iris_dataset_factory
):
  output = tmp_path / 'job'
  _train(output, iris_dataset_factory(), '--max-steps', '6')
  state = _train(
    output, iris_dataset_factory(), '--max-steps', '3', '--no-resume'
  )
  assert state['step'] == 0 and state['iterations'] == 0
  assert _job(output)['global_step'] == 3
  assert tf.train.latest_checkpoint(output / 'checkpoints').endswith('ckpt-3')
  assert not glob.glob(str(output / 'checkpoints' / 'ckpt-6.*'))
  # Nothing deleted: the earlier run's checkpoints and summaries, aside.
  (old_checkpoints,) = glob.glob(str(output / 'checkpoints.old-*'))
  assert tf.train.latest_checkpoint(old_checkpoints).endswith('ckpt-6')
  (old_summaries,) = glob.glob(str(output / 'summaries.old-*'))
  assert glob.glob(os.path.join(old_summaries, 'train', 'events.*'))
  assert (
    old_summaries.rsplit('.old-', 1)[1] == old_checkpoints.rsplit('.old-', 1)[1]
  )


@pytest.mark.parametrize(
  'flags, message',
  [
    (
      ['--resume-from', '/x/ckpt-5', '--no-resume'],
      '--resume-from PATH and --no-resume contradict each other',
    ),
    (
      ['--resume-from', '/x/ckpt-5', '--warm-start', '/y'],
      '--resume-from resumes a checkpoint.*Received: --resume-from=/x/ckpt-5 '
      '--warm-start=/y',
    ),
  ],
)
def test_contradicting_flags(flags, message):
  with pytest.raises(ConfigurationError, match=message):
    training.ModelArguments.parse(flags)


@pytest.mark.release
def test_a_resumed_run_prints_nothing_of_tensorflows(
  tmp_path, iris_dataset_factory, capfd, caplog
):
  output = tmp_path / 'job'
  _train(output, iris_dataset_factory(), '--max-steps', '2')
  capfd.readouterr()
  library = logging.getLogger('tensorflow')
  library.addHandler(caplog.handler)
  try:
    with caplog.at_level(logging.INFO, logger='tensorflow'):
      state = _train(output, iris_dataset_factory(), '--max-steps', '4')
      gc.collect()  # What warns of unrestored values does so when deleted.
  finally:
    library.removeHandler(caplog.handler)
  assert state['step'] == 2  # It did resume.
  said = capfd.readouterr().err + '\n'.join(
    r.getMessage() for r in caplog.records if r.name == 'tensorflow'
  )
  for internal in (
    'unrestored values',
    'could not be found in the restored object',
    'save_counter',
    'expect_partial',
  ):
    assert internal not in said, said[-3000:]
