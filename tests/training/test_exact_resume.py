"""Exact resume: a run stopped anywhere ends as if it had never stopped.

With `--seed`, a job preempted (SIGTERM) or killed (SIGKILL) at any step
and started again with the same command ends with the same variables, bit
for bit, as its twin that ran through: the checkpoint carries the input's
position, and the seeded input yields the same batches again. The runs
shuffle, read the data several times over (iris: 8 epochs in 60 steps of
16), and are stopped at seeded-random steps between checkpoints.

The standard tier runs one chain of real processes (preempted, resumed
and killed, resumed to the end) with `--cache` on. The release tier runs
the same promise through `tensorfx chaos` (tests/tools/test_chaos.py):
with `--cache none` until the data ends (`--epochs`), and on a
two-worker MultiWorkerMirrored cluster killed as a whole.
"""

import logging
import os
import random
import signal
import subprocess
import sys
import types

import pytest
import tensorflow as tf

from conftest import IRIS
from conftest import IRIS_SMALL
import dropout_trainer
from tensorfx import _faults
from tensorfx import training
from tensorfx.models import nn
from tensorfx.tools import _drill
from tensorfx.training import _settings
from tensorfx.training._checkpoints import checkpoints as _checkpoints
from tensorfx.training._run import exactness
from tensorfx.training._run import input_position

pytestmark = [pytest.mark.xdist_group('test_exact_resume')]

_FLAGS = IRIS_SMALL
_STEPS = ('--max-steps', '60')
_TIMEOUT = 300


def _arguments(output, analysis, *extra):
  return [
    '--output',
    str(output),
    '--data-train',
    os.path.join(IRIS, 'data', 'train.csv'),
    '--data-schema',
    os.path.join(IRIS, 'schema.yaml'),
    '--data-features',
    os.path.join(IRIS, 'features.yaml'),
    '--data-metadata',
    analysis,
    *_FLAGS,
    *extra,
  ]


def _train(output, analysis, *extra, fault=None, module='trainer'):
  """`tensorfx train` of a trainer of the iris data, in its own process.

  `module`: the iris sample's `trainer`, or a trainer's .py path.
  """
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  env.pop(_faults.VARIABLE, None)
  if fault:
    env[_faults.VARIABLE] = fault
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    module,
    *_arguments(output, analysis, *extra),
  ]
  # run() kills the process when it outlives the timeout.
  return subprocess.run(
    command,
    cwd=IRIS,
    env=env,
    capture_output=True,
    text=True,
    timeout=_TIMEOUT,
    check=False,
  )


def _dropout_twin(output, analysis, *extra):
  """The uninterrupted run of `dropout_trainer`, in this process."""
  training.ModelTrainer().train(
    *dropout_trainer.builder(_arguments(output, analysis, *extra))
  )
  return _latest(output)


def _latest(output):
  return tf.train.latest_checkpoint(str(output / 'checkpoints'))


def _step_of(prefix):
  return int(prefix.rsplit('-', 1)[1])


def assert_same_variables(expected, actual):
  """Every variable of two checkpoints, bit for bit (not the save count)."""
  names, differ = _drill.compare_checkpoints(expected, actual)
  assert any('kernel' in name for name in names), names
  assert not differ, f'{actual} differs from {expected} in {differ}'


def _stops(seed, last):
  """A preemption step, then a kill step a few steps past a checkpoint.

  Both seeded-random and off the checkpoint interval (10): the kill
  loses the steps since the checkpoint before it.
  """
  rng = random.Random(seed)
  preempt = rng.choice([s for s in range(11, 30) if s % 10])
  kill = rng.choice([s for s in range(preempt + 12, last - 5) if s % 10])
  return preempt, kill


def _preempt_kill_resume(output, analysis, *extra, seed, last, module):
  """Runs the same command three times: preempted, killed, to the end.

  Returns:
    The third run's final checkpoint.
  """
  preempt, kill = _stops(seed, last)
  first = _train(
    output, analysis, *extra, fault=f'train.step:{preempt}:TERM', module=module
  )
  # 143 = 128 + SIGTERM: it saved where it stopped.
  assert first.returncode == 143, first.stderr[-3000:]
  assert _step_of(_latest(output)) == preempt
  second = _train(
    output, analysis, *extra, fault=f'train.step:{kill}', module=module
  )
  assert second.returncode == -signal.SIGKILL, second.stderr[-3000:]
  assert f'Resumed from {output}/checkpoints/ckpt-{preempt} ' in second.stderr
  saved = _step_of(_latest(output))
  # Killed between checkpoints: the steps since the last one are lost.
  assert preempt <= saved < kill
  third = _train(output, analysis, *extra, module=module)
  assert third.returncode == 0, third.stderr[-3000:]
  assert f'ckpt-{saved} at step {saved}' in third.stderr
  assert f'after the {saved} batches read before' in third.stderr
  assert 'is not exact' not in third.stderr
  return _latest(output)


@pytest.mark.slow
def test_a_preempted_then_killed_run_ends_bit_identical_to_its_twin(
  tmp_path, iris_analysis
):
  # Its step draws dropout masks: their generators' state resumes too.
  twin = _dropout_twin(tmp_path / 'twin', iris_analysis, *_STEPS)
  resumed = _preempt_kill_resume(
    tmp_path / 'job',
    iris_analysis,
    *_STEPS,
    seed=1,
    last=60,
    module=dropout_trainer.__file__,
  )
  assert _step_of(twin) == _step_of(resumed) == 60
  assert any(
    name.startswith('random_state/')
    for name, _ in tf.train.list_variables(resumed)
  )
  assert_same_variables(twin, resumed)


# The position a checkpoint carries.


def test_a_checkpoint_carries_the_batches_read(tmp_path):
  position = input_position.InputPosition()
  checkpoints = _checkpoints.Checkpoints(
    str(tmp_path),
    tf.Variable(0, dtype=tf.int64),
    input_position=position,
    optional=[input_position.NAME],
  )
  position.advance(7)
  position.advance(5)
  path = checkpoints.save()
  reader = tf.train.load_checkpoint(path)
  assert reader.get_tensor('input_position/.ATTRIBUTES/batches') == 12


def _restore(tmp_path, write):
  """A new run's position after resuming `tmp_path`'s latest checkpoint."""
  step = tf.Variable(0, dtype=tf.int64)
  write(step)
  position = input_position.InputPosition()
  checkpoints = _checkpoints.Checkpoints(
    str(tmp_path), step, input_position=position, optional=[input_position.NAME]
  )
  checkpoints.restore_latest()
  return position, checkpoints


def test_a_resumed_run_starts_at_the_position_and_goes_on_forward(tmp_path):
  def write(step):
    written = input_position.InputPosition()
    written.advance(30)
    step.assign(30)
    _checkpoints.Checkpoints(str(tmp_path), step, input_position=written).save()

  position, checkpoints = _restore(tmp_path, write)
  assert position.batches == 30
  dataset = tf.data.Dataset.range(100)
  read = types.SimpleNamespace(dataset=dataset, input_from=dataset.skip)
  iterator = position.resume(read)
  assert int(next(iterator)) == 30
  position.advance(1)
  # A restore while training reads (the loss guard's) moves the model
  # back, not the input.
  checkpoints.restore_latest()
  assert position.batches == 31
  assert int(next(iterator)) == 31


def test_without_input_from_the_read_batches_are_dropped_from_the_iterator():
  position = input_position.InputPosition()
  position.advance(4)
  read = types.SimpleNamespace(dataset=tf.data.Dataset.range(10))
  assert [int(x) for x in position.resume(read)] == [4, 5, 6, 7, 8, 9]


def test_a_checkpoint_without_a_position_restarts_the_input(tmp_path, caplog):
  def write(step):
    step.assign(20)
    # As earlier releases wrote them: no input position.
    _checkpoints.Checkpoints(str(tmp_path), step).save()

  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    position, _ = _restore(tmp_path, write)
  assert position.batches == 0
  assert 'holds no input_position (it was written by an earlier' in caplog.text


# What a resume cannot make exact, said at start-up.


def _parsed(*flags):
  args = nn.FeedForwardClassificationArguments.parse(list(flags))
  return _settings.Settings.from_args(args)


def _traced(fn):
  loop = tf.function(lambda iterator, steps: fn())
  return types.SimpleNamespace(loop=loop)


def _iterator():
  return iter(tf.data.Dataset.range(3))


def test_without_a_seed_the_start_up_line_says_why(caplog):
  strategy = tf.distribute.get_strategy()
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    reason = exactness.report(
      _parsed(), strategy, _traced(lambda: 0), _iterator()
    )
  assert reason.startswith('without --seed each run shuffles the training')
  assert f'A resumed run is not exact: {reason}' in caplog.text
  unshuffled = exactness.why_inexact(
    _parsed('--no-shuffle'), strategy, _traced(lambda: 0), _iterator()
  )
  assert unshuffled.startswith('without --seed kernels are not made')


def test_a_step_drawing_from_kernel_state_random_ops_is_named():
  settings = _parsed('--seed', '1')
  strategy = tf.distribute.get_strategy()
  reason = exactness.why_inexact(
    settings,
    strategy,
    _traced(lambda: tf.nn.dropout(tf.ones([2, 4]), rate=0.5)),
    _iterator(),
  )
  assert 'random operations (RandomUniform) whose state no checkpoint' in (
    reason
  )
  # Stateless random operations, seeded by the step, resume exactly.
  stateless = _traced(
    lambda: tf.random.stateless_uniform([2], seed=tf.constant([1, 2]))
  )
  assert (
    exactness.why_inexact(settings, strategy, stateless, _iterator()) is None
  )
