"""Sparse optimizers: only the looked-up rows (and their slots) change."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from tensorfx import ConfigurationError
from tensorfx import embeddings
from tensorfx.training import ModelArguments

ROWS = 8


class _Arguments(ModelArguments, embeddings.EmbeddingArguments):
  """The embedding flags mixed into the standard ones."""


def _train(optimizer, batches, dim=3):
  """Trains a fresh table on `batches` of keys; returns (table, values)."""
  table = embeddings.EmbeddingTable(
    't', dim=dim, capacity=ROWS, optimizer=optimizer
  )
  table.build()
  table.counts.assign(tf.ones([ROWS], tf.int32))  # every key admitted
  optimizer.build(table.shards)
  snapshots = [table.embeddings.numpy()]

  @tf.function
  def step(keys):
    with tf.GradientTape() as tape:
      vectors = table.lookup(keys, training=True)
      # A different gradient per row: d/dw of sum(w * (key + 1)).
      weights = tf.cast(keys, tf.float32)[:, None] + 1.0
      loss = tf.reduce_sum(vectors * weights)
    gradients = tape.gradient(loss, table.shards)
    optimizer.apply_gradients(zip(gradients, table.shards))
    return gradients[0]

  for keys in batches:
    gradient = step(tf.constant(keys, tf.int64))
    assert isinstance(gradient, tf.IndexedSlices)
    snapshots.append(table.embeddings.numpy())
  return table, snapshots


def _changed(before, after):
  return sorted(np.nonzero((before != after).any(axis=1))[0].tolist())


@pytest.mark.parametrize(
  'optimizer',
  [
    lambda: embeddings.LazyAdam(0.1),
    lambda: embeddings.SparseAdagrad(0.1),
    lambda: embeddings.SparseFtrl(0.1),
  ],
  ids=['lazy-adam', 'adagrad', 'ftrl'],
)
def test_only_the_rows_looked_up_change(optimizer):
  _, snapshots = _train(optimizer(), [[1, 3, 3], [5], [1]])
  assert [_changed(a, b) for a, b in zip(snapshots, snapshots[1:])] == [
    [1, 3],
    [5],
    [1],
  ]


def test_lazy_adam_moments_of_untouched_rows_stay_zero():
  optimizer = embeddings.LazyAdam(0.1)
  _train(optimizer, [[1, 3], [5], [1, 1]])
  m = optimizer._m_slots[0].numpy()
  v = optimizer._v_slots[0].numpy()
  assert _changed(np.zeros_like(m), m) == [1, 3, 5]
  assert _changed(np.zeros_like(v), v) == [1, 3, 5]


def test_lazy_adam_follows_adam_on_the_rows_it_updates():
  lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-7
  optimizer = embeddings.LazyAdam(lr, beta_1=b1, beta_2=b2, epsilon=eps)
  batches = [[1, 3], [3], [1, 1]]
  _, snapshots = _train(optimizer, batches)
  w = snapshots[0].astype(np.float64)
  m = np.zeros_like(w)
  v = np.zeros_like(w)
  for t, keys in enumerate(batches, start=1):
    rows = sorted(set(keys))
    # Duplicate keys add up; the gradient of row r is (r + 1) per sighting.
    g = np.array([[keys.count(r) * (r + 1.0)] * 3 for r in rows])
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g * g
    rate = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
    w[rows] -= rate * m[rows] / (np.sqrt(v[rows]) + eps)
    np.testing.assert_allclose(snapshots[t], w, rtol=1e-5, atol=1e-6)


def test_dense_adam_keeps_moving_rows_of_earlier_steps():
  # The contrast: Keras' Adam decays every row's moments each step, so a
  # row touched once keeps changing; LazyAdam leaves it alone.
  _, dense = _train(tf_keras.optimizers.Adam(0.1), [[1], [5], [5]])
  _, lazy = _train(embeddings.LazyAdam(0.1), [[1], [5], [5]])
  assert _changed(dense[2], dense[3]) == [1, 5]
  assert _changed(lazy[2], lazy[3]) == [5]
  np.testing.assert_allclose(dense[1], lazy[1], atol=1e-5)  # same 1st step


def test_adagrad_and_ftrl_match_keras_on_the_rows_they_update():
  keys = [[2, 4], [4]]
  _, ours = _train(embeddings.SparseAdagrad(0.1, epsilon=0.0), keys)
  _, keras = _train(tf_keras.optimizers.Adagrad(0.1, epsilon=0.0), keys)
  np.testing.assert_allclose(ours[-1], keras[-1], rtol=1e-5)
  _, ours = _train(
    embeddings.SparseFtrl(0.1, l1_regularization_strength=0.01), keys
  )
  _, keras = _train(
    tf_keras.optimizers.Ftrl(0.1, l1_regularization_strength=0.01), keys
  )
  # Keras' FTRL rewrites every row (untouched ones to zero); the rows
  # looked up agree.
  np.testing.assert_allclose(ours[-1][[2, 4]], keras[-1][[2, 4]], rtol=1e-5)
  assert _changed(ours[0], ours[-1]) == [2, 4]
  assert len(_changed(keras[0], keras[-1])) == ROWS  # all but the default


def test_reset_slots_returns_rows_to_their_initial_slots():
  optimizer = embeddings.SparseFtrl(0.1, initial_accumulator_value=0.5)
  table, _ = _train(optimizer, [[1, 2]])
  optimizer.reset_slots(table.embeddings, tf.constant([2], tf.int64))
  accumulator = optimizer._accumulator_slots[0].numpy()
  linear = optimizer._linear_slots[0].numpy()
  assert accumulator[1, 0] > 0.5 and linear[1].any()
  assert accumulator[2].tolist() == [0.5] * 3 and not linear[2].any()


@pytest.mark.parametrize(
  'flag,kind',
  [
    ('lazy-adam', 'LazyAdam'),
    ('adam', 'Adam'),
    ('adagrad', 'SparseAdagrad'),
    ('ftrl', 'SparseFtrl'),
    ('sgd', 'SGD'),
  ],
)
def test_build_sparse_optimizer_follows_the_flags(flag, kind):
  args = _Arguments.parse(
    ['--embedding-optimizer', flag, '--embedding-learning-rate', '0.05']
  )
  optimizer = embeddings.build_sparse_optimizer(args)
  assert type(optimizer).__name__ == kind
  assert float(optimizer.learning_rate) == pytest.approx(0.05)


def test_sparse_learning_rate_defaults_to_the_dense_one():
  args = ModelArguments.parse(['--learning-rate', '0.02'])
  optimizer = embeddings.build_sparse_optimizer(args)
  assert isinstance(optimizer, embeddings.LazyAdam)
  assert float(optimizer.learning_rate) == pytest.approx(0.02)
  # A builder passes the dense rate with its schedule.
  schedule = tf_keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
  optimizer = embeddings.build_sparse_optimizer(args, schedule)
  config = optimizer.get_config()['learning_rate']
  assert config['class_name'] == 'ExponentialDecay'
  assert config['config']['decay_rate'] == 0.5
  # --embedding-learning-rate wins over both.
  args = _Arguments.parse(['--embedding-learning-rate', '0.3'])
  assert float(
    embeddings.build_sparse_optimizer(args, schedule).learning_rate
  ) == pytest.approx(0.3)


def test_bad_optimizer_arguments_name_them():
  with pytest.raises(
    ConfigurationError,
    match='--embedding-learning-rate must be a positive number',
  ):
    _Arguments.parse(['--embedding-learning-rate', '0'])
  with pytest.raises(
    ConfigurationError,
    match='learning_rate_power must be <= 0. Received: learning_rate_power=0.5',
  ):
    embeddings.SparseFtrl(learning_rate_power=0.5)
  with pytest.raises(
    ConfigurationError, match='initial_accumulator_value must be >= 0'
  ):
    embeddings.SparseAdagrad(initial_accumulator_value=-1.0)
