"""Training guards: NaN restore, --thres-loss, a step that does not count."""

import math
import types

import numpy as np
import pytest
import tensorflow as tf
import yaml

from tensorfx import HighLossError
from tensorfx import TrainingError
from tensorfx.models import nn
from tensorfx.training._engine import guards as _guards
from test_trainer import _Exploding
from test_trainer import _train


class _NanOnce(nn.FeedForwardClassification):
  """A NaN loss at the step from global step 6, the first time only."""

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    # Not tracked (a SimpleNamespace): restoring a checkpoint leaves it.
    self._trap = types.SimpleNamespace(armed=tf.Variable(True))

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    armed = self._trap.armed
    fire = tf.logical_and(tf.equal(global_steps, 6), armed)
    armed.assign(tf.logical_and(armed, tf.logical_not(fire)))
    return loss + tf.where(fire, float('nan'), 0.0), optimizer


class _Diverging(nn.FeedForwardClassification):
  """The loss jumps by 1000 from the step from global step 3."""

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    return loss + tf.where(global_steps >= 3, 1000.0, 0.0), optimizer


class _Stuck(nn.FeedForwardClassification):
  """A training step that takes the global step back: it never advances."""

  def build_inference(self, inputs, training):
    self._tracing_training = training  # Read by build_training's trace.
    return super().build_inference(inputs, training)

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    if getattr(self, '_tracing_training', False):
      with tf.control_dependencies([global_steps.assign_sub(1)]):
        loss = tf.identity(loss)
    return loss, optimizer


def test_nan_restore_goes_back_to_the_checkpoint_and_trains_on(
  tmp_path, iris_dataset_factory
):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '12',
    '--checkpoint-interval-steps',
    '5',
    '--log-interval-steps',
    '3',
    '--nan-restore',
    '1',
    builder_type=_NanOnce,
  )
  assert int(builder.global_step.numpy()) == 12
  assert all(np.isfinite(v.numpy()).all() for v in builder.trainable_variables)
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  # The NaN came at step 7; training went back to ckpt-5 and on to 12.
  assert job['nan_restores'] == [7]
  assert math.isfinite(job['metrics']['loss'])


def test_nan_restore_is_bounded(tmp_path, iris_dataset_factory):
  # Before the first periodic checkpoint: the guard wrote one at step 0.
  with pytest.raises(
    TrainingError,
    match=r'loss is nan at step 7 after 2 restores '
    r'\(--nan-restore 2\)',
  ):
    _train(
      tmp_path,
      iris_dataset_factory(),
      '--max-steps',
      '20',
      '--nan-restore',
      '2',
      builder_type=_Exploding,
    )
  assert tf.train.latest_checkpoint(tmp_path / 'checkpoints').endswith('ckpt-0')


def test_loss_above_thres_loss_is_a_distinct_error(
  tmp_path, iris_dataset_factory
):
  with pytest.raises(
    HighLossError,
    match=r'loss is 10\d\d\.?\d* at step 4, above '
    r'--thres-loss 100',
  ) as raised:
    _train(
      tmp_path,
      iris_dataset_factory(),
      '--max-steps',
      '20',
      '--log-interval-steps',
      '10',
      '--thres-loss',
      '100',
      builder_type=_Diverging,
    )
  assert isinstance(raised.value, TrainingError)
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'failed'
  assert job['error'].startswith('HighLossError')


def test_thres_loss_lets_a_normal_run_through(tmp_path, iris_dataset_factory):
  builder, _ = _train(
    tmp_path, iris_dataset_factory(), '--max-steps', '6', '--thres-loss', '100'
  )
  assert int(builder.global_step.numpy()) == 6


def test_a_step_that_does_not_advance_the_global_step_fails(
  tmp_path, iris_dataset_factory
):
  with pytest.raises(
    TrainingError, match='5 training steps advanced the global step from 0 to 0'
  ):
    _train(
      tmp_path,
      iris_dataset_factory(),
      '--max-steps',
      '10',
      '--log-interval-steps',
      '5',
      '--steps-per-loop',
      '5',
      builder_type=_Stuck,
    )


def test_guard_decisions():
  guard = _guards.LossGuard(thres_loss=2.0, nan_restores=1)
  assert guard.limit == 2.0
  assert guard.check(None, 0, 0, 0) == _guards.OK  # Nothing ran.
  assert guard.check(1.5, 10, 0, 10) == _guards.OK
  assert guard.check(float('inf'), 12, 10, 2) == _guards.RESTORE
  assert guard.restores == [12]
  with pytest.raises(
    TrainingError, match='loss is nan at step 13 after 1 restores'
  ):
    guard.check(float('nan'), 13, 12, 1, checkpoint='/c/ckpt-10')
  with pytest.raises(HighLossError, match='above --thres-loss 2'):
    guard.check(2.5, 14, 13, 1)
  assert _guards.LossGuard().limit == math.inf
  with pytest.raises(ValueError, match='thres_loss must be a positive'):
    _guards.LossGuard(thres_loss=0)
