"""Optimizer controls: choice, schedules, clipping, accumulation, patterns, seed."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx._yaml import load_yaml
from tensorfx.models import nn
from tensorfx.training import ModelArguments
from tensorfx.training import _optimizers
from tensorfx.training import _state as engine_state
from tensorfx.training._builderbase import engine_of


def _optimizer(*flags):
  return _optimizers.build_optimizer(ModelArguments.parse(list(flags)))


# The optimizer and its learning rate.


@pytest.mark.parametrize(
  'name, cls',
  [
    ('adam', tf_keras.optimizers.Adam),
    ('sgd', tf_keras.optimizers.SGD),
    ('rmsprop', tf_keras.optimizers.RMSprop),
    ('adagrad', tf_keras.optimizers.Adagrad),
    ('ftrl', tf_keras.optimizers.Ftrl),
  ],
)
def test_optimizer_choice(name, cls):
  optimizer = _optimizer('--optimizer', name, '--learning-rate', '0.25')
  assert type(optimizer) is cls
  assert float(optimizer.learning_rate) == pytest.approx(0.25)


def test_sgd_momentum_and_nesterov():
  optimizer = _optimizer(
    '--optimizer', 'sgd', '--momentum', '0.9', '--nesterov'
  )
  assert optimizer.momentum == pytest.approx(0.9)
  assert optimizer.nesterov


def test_default_is_adam_at_learning_rate():
  optimizer = _optimizer()
  assert isinstance(optimizer, tf_keras.optimizers.Adam)
  assert float(optimizer.learning_rate) == pytest.approx(0.001)
  # Feed-forward models keep their 0.01.
  args = nn.FeedForwardClassificationArguments.parse([])
  assert float(
    _optimizers.build_optimizer(args).learning_rate
  ) == pytest.approx(0.01)


def test_clipping_flags_reach_the_optimizer():
  assert _optimizer('--clip-norm', '2').global_clipnorm == 2.0
  assert _optimizer('--clip-value', '0.5').clipvalue == 0.5


@pytest.mark.parametrize(
  'flags, message',
  [
    (['--momentum', '0.9'], '--momentum applies to --optimizer sgd or rmsprop'),
    (['--optimizer', 'adam', '--nesterov'], '--nesterov applies to'),
    (['--optimizer', 'sgd', '--momentum', '1'], r'--momentum must be in \[0'),
    (['--clip-norm', '1', '--clip-value', '1'], 'Use one of --clip-norm'),
    (['--clip-norm', '0'], '--clip-norm must be a positive number'),
    (['--learning-rate', '-1'], '--learning-rate must be a positive number'),
    (
      ['--learning-rate-schedule', 'exponential', '--decay-steps', '5'],
      'exponential needs --decay-rate',
    ),
    (['--accumulation-steps', '0'], '--accumulation-steps must be'),
    (['--warmup-steps', '-1'], '--warmup-steps must be zero or more'),
    (['--trainable-pattern', '('], '--trainable-pattern must be a regular'),
  ],
)
def test_invalid_optimizer_flags(flags, message):
  with pytest.raises(ConfigurationError, match=message):
    ModelArguments.parse(flags)


def test_schedule_needs_decay_steps_or_max_steps():
  args = ModelArguments.parse(
    ['--learning-rate-schedule', 'cosine', '--max-steps', '0']
  )
  with pytest.raises(ConfigurationError, match='cosine needs --decay-steps'):
    _optimizers.build_learning_rate(args)
  # By default the decay spans --max-steps / --accumulation-steps updates.
  args = ModelArguments.parse(
    [
      '--learning-rate-schedule',
      'cosine',
      '--max-steps',
      '40',
      '--accumulation-steps',
      '4',
      '--learning-rate',
      '1',
    ]
  )
  schedule = _optimizers.build_learning_rate(args)
  assert float(schedule(10)) == pytest.approx(0.0, abs=1e-6)


def _rates(*flags, steps=(0, 5, 10, 20)):
  rate = _optimizers.build_learning_rate(
    ModelArguments.parse(['--learning-rate', '1', *flags])
  )
  return [float(rate(tf.constant(s))) for s in steps]


def test_learning_rate_schedules():
  approx = pytest.approx
  assert (
    _optimizers.build_learning_rate(
      ModelArguments.parse(['--learning-rate', '0.5'])
    )
    == 0.5
  )
  assert _rates(
    '--learning-rate-schedule',
    'exponential',
    '--decay-steps',
    '10',
    '--decay-rate',
    '0.5',
  ) == approx([1, 0.5**0.5, 0.5, 0.25])
  assert _rates(
    '--learning-rate-schedule',
    'natural-exp',
    '--decay-steps',
    '10',
    '--decay-rate',
    '0.5',
  ) == approx([math.exp(-0.5 * s / 10) for s in (0, 5, 10, 20)])
  assert _rates(
    '--learning-rate-schedule',
    'inverse-time',
    '--decay-steps',
    '10',
    '--decay-rate',
    '1',
  ) == approx([1, 1 / 1.5, 0.5, 1 / 3])
  assert _rates(
    '--learning-rate-schedule',
    'polynomial',
    '--decay-steps',
    '10',
    '--end-learning-rate',
    '0.2',
  ) == approx([1, 0.6, 0.2, 0.2])
  assert _rates(
    '--learning-rate-schedule',
    'cosine',
    '--decay-steps',
    '10',
    '--end-learning-rate',
    '0.2',
  ) == approx([1, 0.6, 0.2, 0.2])
  # Restarts: the second period is twice as long and starts again at 1.
  restarts = _rates(
    '--learning-rate-schedule',
    'cosine-restarts',
    '--decay-steps',
    '10',
    steps=(0, 5, 10, 20),
  )
  assert restarts == approx([1, 0.5, 1, 0.5])
  # Linear cosine: (linear + 0) * cosine, the end rate as the floor.
  linear_cosine = _rates(
    '--learning-rate-schedule', 'linear-cosine', '--decay-steps', '10'
  )
  assert linear_cosine[0] == approx(1)
  assert linear_cosine[1] == approx(0.5 * 0.5 * (1 + math.cos(math.pi * 0.5)))
  assert linear_cosine[2:] == approx([0, 0], abs=1e-6)


def test_warmup_wraps_any_schedule():
  assert _rates('--warmup-steps', '4', steps=range(6)) == pytest.approx(
    [0.25, 0.5, 0.75, 1, 1, 1]
  )
  warm = _rates(
    '--warmup-steps',
    '2',
    '--learning-rate-schedule',
    'polynomial',
    '--decay-steps',
    '4',
    steps=range(7),
  )
  # The decay starts after the warmup.
  assert warm == pytest.approx([0.5, 1, 1, 0.75, 0.5, 0.25, 0.0], abs=1e-6)


# Training a tiny iris model with the controls.


def _train(tmp_path, dataset, steps, *flags):
  """Builds an iris model and runs `steps` training steps in one call."""
  args = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      tmp_path, '--no-shuffle', '--seed', '7', '--hidden-layers', '4', *flags
    )
  )
  builder = nn.FeedForwardClassification(args, dataset)
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  initial = {v.name: v.numpy() for v in builder.trainable_variables}
  interface.loop(iter(interface.dataset), tf.constant(steps, tf.int64))
  final = {v.name: v.numpy() for v in builder.trainable_variables}
  return builder, initial, final


def test_clip_value_bounds_the_update(tmp_path, iris_dataset_factory):
  _, initial, final = _train(
    tmp_path,
    iris_dataset_factory(),
    1,
    '--optimizer',
    'sgd',
    '--learning-rate',
    '10',
    '--clip-value',
    '0.001',
  )
  changes = [np.max(np.abs(final[k] - initial[k])) for k in initial]
  assert max(changes) == pytest.approx(0.01, rel=1e-4)  # lr * clip value.


def test_clip_norm_bounds_the_update(tmp_path, iris_dataset_factory):
  _, initial, final = _train(
    tmp_path,
    iris_dataset_factory(),
    1,
    '--optimizer',
    'sgd',
    '--learning-rate',
    '10',
    '--clip-norm',
    '0.001',
  )
  norm = math.sqrt(
    sum(np.sum(np.square(final[k] - initial[k])) for k in initial)
  )
  assert norm == pytest.approx(0.01, rel=1e-3)  # lr * global norm.


def test_accumulation_equals_one_large_batch(tmp_path, iris_dataset_factory):
  dataset = iris_dataset_factory()
  flags = ('--optimizer', 'sgd', '--learning-rate', '0.5')
  accumulated, initial_a, final_a = _train(
    tmp_path / 'a',
    dataset,
    4,
    *flags,
    '--batch-size',
    '8',
    '--accumulation-steps',
    '4',
  )
  _, initial_b, final_b = _train(
    tmp_path / 'b', dataset, 1, *flags, '--batch-size', '32'
  )
  # The seed gives both the same start.
  for name in initial_a:
    np.testing.assert_array_equal(initial_a[name], initial_b[name])
  changed = False
  for name in final_a:
    np.testing.assert_allclose(
      final_a[name], final_b[name], rtol=1e-5, atol=1e-6
    )
    changed |= not np.allclose(final_a[name], initial_a[name])
  assert changed
  # The global step counts minibatches; the optimizer made one update.
  assert int(accumulated.global_step.numpy()) == 4
  assert int(accumulated.optimizer.iterations.numpy()) == 1
  # The sums were applied and cleared; they are checkpointed variables.
  accumulator = engine_of(accumulated).accumulator
  assert all(not np.any(s.numpy()) for s in accumulator.sums)
  # Checkpointed with the model, under the name earlier releases gave it.
  saved = engine_state.checkpointed(
    accumulated, engine_of(accumulated)
  )._trackable_children()
  assert saved['_accumulator'] is accumulator


def test_accumulation_applies_only_every_n_steps(
  tmp_path, iris_dataset_factory
):
  builder, initial, final = _train(
    tmp_path,
    iris_dataset_factory(),
    3,
    '--optimizer',
    'sgd',
    '--batch-size',
    '8',
    '--accumulation-steps',
    '4',
  )
  for name in initial:
    np.testing.assert_array_equal(initial[name], final[name])
  assert int(builder.optimizer.iterations.numpy()) == 0
  assert any(np.any(s.numpy()) for s in engine_of(builder).accumulator.sums)


def test_trainable_pattern_freezes_the_others(tmp_path, iris_dataset_factory):
  _, initial, final = _train(
    tmp_path, iris_dataset_factory(), 3, '--trainable-pattern', '^output/'
  )
  assert sorted(initial) == [
    'hidden1/bias:0',
    'hidden1/kernel:0',
    'output/bias:0',
    'output/kernel:0',
  ]
  for name in ('hidden1/bias:0', 'hidden1/kernel:0'):
    np.testing.assert_array_equal(initial[name], final[name])
  for name in ('output/bias:0', 'output/kernel:0'):
    assert not np.allclose(initial[name], final[name])


def test_trainable_pattern_must_match(tmp_path, iris_dataset_factory):
  with pytest.raises(
    ConfigurationError,
    match=r'--trainable-pattern must match the name of at '
    r'least one trainable variable \(hidden1/kernel:0',
  ):
    _train(
      tmp_path, iris_dataset_factory(), 1, '--trainable-pattern', 'nothing'
    )


@pytest.mark.slow
def test_seeded_runs_match(tmp_path, iris_dataset_factory):
  results = []
  for run in ('first', 'second'):
    args, job = nn.FeedForwardClassificationArguments.parse(
      iris_args(
        tmp_path / run,
        '--max-steps',
        '6',
        '--batch-size',
        '16',
        '--hidden-layers',
        '8',
        '--seed',
        '11',
        '--log-interval-steps',
        '2',
      ),
      parse_job=True,
    )
    builder = nn.FeedForwardClassification(args, iris_dataset_factory())
    training.ModelTrainer().train(builder, job)
    record = load_yaml((tmp_path / run / 'job.yaml').read_text())
    weights = [v.numpy() for v in builder.trainable_variables]
    results.append((record['metrics'], weights))
  (metrics_a, weights_a), (metrics_b, weights_b) = results
  assert metrics_a == metrics_b
  for a, b in zip(weights_a, weights_b):
    np.testing.assert_array_equal(a, b)
