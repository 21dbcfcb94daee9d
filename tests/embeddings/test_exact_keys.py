"""Exact keys: a row per admitted key, per-key statistics, growth on restore."""

import numpy as np
import pytest
import tensorflow as tf

from tensorfx import ConfigurationError
from tensorfx import embeddings

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


def _exact(name='items', **kwargs):
  kwargs.setdefault('dim', 4)
  kwargs.setdefault('capacity', 10)
  return embeddings.EmbeddingTable(name, hashing='exact', **kwargs)


def _keys(*values):
  return tf.constant(values, tf.int64)


def _trainer(table, step, optimizer):
  """A training step: lookup, a loss pulling each vector to 1, update."""

  @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
  def train(keys):
    with tf.GradientTape() as tape:
      vectors = table.lookup(keys, training=True)
      loss = tf.reduce_sum(tf.square(vectors - 1.0))
    gradients = tape.gradient(loss, table.shards)
    optimizer.apply_gradients(zip(gradients, table.shards))
    step.assign_add(1)

  return lambda *keys: train(_keys(*keys))


def _table_and_trainer(capacity, **kwargs):
  step = tf.Variable(0, dtype=tf.int64)
  optimizer = embeddings.LazyAdam(0.1)
  table = _exact(
    capacity=capacity, step_counter=step, optimizer=optimizer, **kwargs
  )
  table.build()
  optimizer.build(table.shards)
  return table, step, optimizer, _trainer(table, step, optimizer)


def test_keys_that_collide_when_hashed_get_rows_of_their_own():
  colliding = _keys(3, 13, 23)
  hashed = embeddings.EmbeddingTable('hashed', dim=4, capacity=10)
  assert hashed.rows(colliding).numpy().tolist() == [3, 3, 3]
  table = _exact(capacity=10)
  table.lookup(colliding, training=True)
  rows = table.rows(colliding).numpy().tolist()
  assert len(set(rows)) == 3 and all(0 <= r < 10 for r in rows)
  vectors = table.lookup(colliding).numpy()
  np.testing.assert_array_equal(vectors, table.embeddings.numpy()[rows])
  assert len({tuple(v) for v in vectors}) == 3
  # Counts are per key; a hashed table counts the shared row.
  for t in (hashed, table):
    t.lookup(_keys(3, 3, 13), training=True)
  assert table.statistics(colliding)['count'].numpy().tolist() == [3, 2, 1]
  assert hashed.statistics(colliding)['count'].numpy().tolist() == [3] * 3


def test_admission_counts_each_key_not_its_hash_bucket():
  table = _exact(capacity=10, admit_after=2)
  hashed = embeddings.EmbeddingTable(
    'hashed', dim=4, capacity=10, admit_after=2
  )
  for t in (table, hashed):
    t.lookup(_keys(3, 13, 13), training=True)
  # Key 3 was seen once: it reads the default row (zero until trained).
  assert table.rows(_keys(3, 13)).numpy().tolist() == [-1, 0]
  vectors = table.lookup(_keys(3, 13)).numpy()
  assert not vectors[0].any() and vectors[1].any()
  # Hashed, 3 rides on 13's count: the bucket is admitted.
  assert hashed.lookup(_keys(3)).numpy().any()
  assert int(table.live_rows()) == 1


def test_string_keys_are_exact_too():
  table = _exact(key_dtype='string', capacity=4)
  table.lookup(tf.ragged.constant([['ab', 'cd'], ['ab']]), training=True)
  assert table.rows(tf.constant(['ab', 'cd', 'ef'])).numpy().tolist() == [
    0,
    1,
    -1,
  ]
  with pytest.raises(ConfigurationError, match='has string keys'):
    table.lookup(_keys(1))


def test_a_full_table_reads_the_default_row_until_eviction_frees_one():
  table, step, optimizer, train = _table_and_trainer(
    capacity=2, evict_after_steps=3, evict_every_steps=1
  )
  train(1, 2)  # step 0: rows 0 and 1
  trained = table.lookup(_keys(1)).numpy()[0]
  train(2, 7)  # step 1: full, 7 waits
  assert table.rows(_keys(1, 2, 7)).numpy().tolist() == [0, 1, -1]
  np.testing.assert_array_equal(
    table.lookup(_keys(7)).numpy()[0],
    table.embeddings.numpy()[table.default_row],
  )
  assert int(table.statistics(_keys(7))['count'][0]) == 1
  train(2, 7)  # step 2
  train(2, 7)  # step 3: key 1 is stale
  assert int(table.evicted.numpy()) == 1
  assert table.rows(_keys(1, 2, 7)).numpy().tolist() == [-1, 1, -1]
  assert table.statistics(_keys(1))['count'].numpy().tolist() == [0]
  before = table.embeddings.numpy()[0]
  train(2, 7)  # step 4: 7 gets row 0
  assert table.rows(_keys(7)).numpy().tolist() == [0]
  # Row 0 starts over for its new key: fresh values, moments from one step.
  after = table.embeddings.numpy()[0]
  assert not np.allclose(after, trained) and not np.allclose(after, before)
  assert np.abs(after).max() <= 0.05 + 0.1 + 1e-6  # initial + one step
  # Lazy Adam's first moment after one step from cleared slots is 0.1 g,
  # g = 2 (v - 1) for a fresh |v| <= 0.05; key 1's moments would add -0.18.
  moments = optimizer._m_slots[0].numpy()
  assert ((moments[0] > -0.211) & (moments[0] < -0.189)).all(), moments[0]
  assert int(table.live_rows()) == 2
  assert int(step.numpy()) == 5


def test_two_tables_admit_keys_in_one_step():
  # Each index has its own lock: two tables in a step, in a loop, finish.
  step = tf.Variable(0, dtype=tf.int64)
  optimizer = embeddings.LazyAdam(0.1)
  users = _exact('users', step_counter=step, optimizer=optimizer)
  items = _exact('items', step_counter=step, optimizer=optimizer)

  @tf.function
  def train(keys):
    def body(i):
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(
          users.lookup(keys[i], training=True)
          * items.lookup(keys[i] + 1, training=True)
        )
      variables = users.shards + items.shards
      optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
      step.assign_add(1)
      return i + 1

    return tf.while_loop(lambda i: i < 4, body, [0])

  users.build()
  items.build()
  optimizer.build(users.shards + items.shards)
  train(tf.constant([[1, 2], [3, 4], [5, 6], [7, 8]], tf.int64))
  assert int(users.live_rows()) == int(items.live_rows()) == 8
  assert items.rows(_keys(2, 9)).numpy().tolist() == [0, 7]


def test_the_default_row_and_new_rows_start_as_documented():
  table = _exact(capacity=5)
  table.build()
  assert not table.embeddings.numpy().any()  # values come with a key
  table.lookup(_keys(4, 9), training=True)
  values = table.embeddings.numpy()
  assert values[[0, 1]].all() and np.abs(values[[0, 1]]).max() <= 0.05
  assert not values[2:].any()
  seeded = _exact(
    name='seeded',
    capacity=5,
    initializer={'class_name': 'Constant', 'config': {'value': 0.5}},
  )
  seeded.lookup(_keys(4), training=True)
  np.testing.assert_array_equal(seeded.embeddings.numpy()[0], [0.5] * 4)


def _checkpoint(table, step, optimizer):
  return tf.train.Checkpoint(step=step, table=table, optimizer=optimizer)


def _state(table, optimizer, keys):
  """Per key: row, vector, count, stamp and lazy Adam's moments."""
  rows = table.rows(keys).numpy()
  m = optimizer._m_slots[0].numpy()
  v = optimizer._v_slots[0].numpy()
  stats = table.statistics(keys)
  return {
    'rows': rows,
    'vectors': table.lookup(keys).numpy(),
    'count': stats['count'].numpy(),
    'last': stats['last_seen'].numpy(),
    'm': m[rows],
    'v': v[rows],
    'default': table.embeddings.numpy()[table.default_row],
    'default_m': m[table.default_row],
  }


@pytest.fixture(name='saved')
def _saved(tmp_path):
  """A full 4-row table after 6 steps (key 5 waiting), and its checkpoint."""
  table, step, optimizer, train = _table_and_trainer(capacity=4, admit_after=2)
  for keys in ([1, 2, 3, 1], [4, 2, 3], [4, 5], [1, 2], [3, 4], [5, 9]):
    train(*keys)
  keys = _keys(1, 2, 3, 4, 5, 9)
  state = _state(table, optimizer, keys)
  assert state['rows'].tolist() == [0, 1, 2, 3, -1, -1]
  path = _checkpoint(table, step, optimizer).write(str(tmp_path / 'ckpt'))
  return path, keys, state, (table, step, optimizer, train)


def test_restart_with_a_larger_capacity_keeps_learned_rows(saved):
  path, keys, before, _ = saved
  table, step, optimizer, train = _table_and_trainer(capacity=8, admit_after=2)
  _checkpoint(table, step, optimizer).read(
    path
  ).assert_existing_objects_matched()
  after = _state(table, optimizer, keys)
  for name, value in before.items():
    np.testing.assert_array_equal(after[name], value, err_msg=name)
  assert table.default_row == 8 and int(table.live_rows()) == 4
  # The new rows take keys: 5 (waiting in the checkpoint) and 6, 7 now.
  train(5, 6, 6, 7, 7)
  assert table.rows(keys).numpy().tolist()[:5] == [0, 1, 2, 3, 4]
  assert sorted(table.rows(_keys(6, 7)).numpy().tolist()) == [5, 6]
  np.testing.assert_array_equal(
    table.lookup(_keys(1, 2, 3, 4)).numpy(), before['vectors'][:4]
  )


def test_a_restore_at_the_same_capacity_continues_identically(tmp_path):
  def make():
    return _table_and_trainer(
      capacity=6, evict_after_steps=2, evict_every_steps=1
    )

  table, step, optimizer, train = make()
  for keys in ([1, 2, 3], [4, 5], [6, 7], [5, 8]):
    train(*keys)
  # Keys 1-3 (rows 0-2) go at step 2, key 4 (row 3) at step 3.
  assert int(table.evicted.numpy()) == 4
  path = _checkpoint(table, step, optimizer).write(str(tmp_path / 'ckpt'))
  again, again_step, again_optimizer, train_again = make()
  _checkpoint(again, again_step, again_optimizer).read(path)
  for run in (train, train_again):
    for keys in ([9, 10], [2, 11, 12], [1, 13]):
      run(*keys)
  keys = _keys(*range(1, 14))
  rows = table.rows(keys).numpy().tolist()
  assert rows == again.rows(keys).numpy().tolist()
  # Worked by hand: rows freed lowest first, key 12 found the table full.
  assert rows == [0, 5, -1, -1, -1, -1, -1, -1, -1, -1, 2, -1, 4]
  np.testing.assert_array_equal(
    again.embeddings.numpy(), table.embeddings.numpy()
  )
  np.testing.assert_array_equal(
    again_optimizer._v_slots[0].numpy(), optimizer._v_slots[0].numpy()
  )


def test_a_table_does_not_shrink_below_its_rows_in_use(saved):
  path = saved[0]
  table, step, optimizer, _ = _table_and_trainer(capacity=3)
  with pytest.raises(
    tf.errors.InvalidArgumentError,
    match="'items': the checkpoint has keys in rows at or "
    'above capacity=3; a table can grow, not shrink',
  ):
    _checkpoint(table, step, optimizer).read(path)


def test_dim_takes_mxrec_s_tensor_shape():
  assert _exact(dim=tf.TensorShape([16])).dim == 16
  assert _exact(dim=[8]).dim == 8
  assert _exact(dim=3).dim == 3
  for bad in (
    tf.TensorShape([2, 3]),
    tf.TensorShape([None]),
    tf.TensorShape([]),
    tf.TensorShape(None),
    [0],
  ):
    with pytest.raises(
      ConfigurationError,
      match=(
        r'dim must be a positive integer or a TensorShape of one known '
        r'dimension, e.g. tf.TensorShape\(\[16\]\) .*Received: dim='
      ),
    ):
      _exact(dim=bad)
  with pytest.raises(
    ConfigurationError,
    match='dim must be a positive integer. Received: dim=2.5',
  ):
    _exact(dim=2.5)


def test_from_params_reads_a_feature_s_table_options():
  table = embeddings.EmbeddingTable.from_params(
    'item',
    {
      'dim': 8,
      'capacity': 100,
      'hashing': 'exact',
      'admit_after': 3,
      'evict_after_steps': 50,
      'evict_every_steps': 5,
      'combiner': 'sum',
      'initializer': 'zeros',
      'top_k': 4,
    },
    key_dtype=tf.string,
  )
  assert (
    table.dim,
    table.capacity,
    table.hashing,
    table.admit_after,
    table.evict_after_steps,
    table.combiner,
    table.key_dtype,
  ) == (8, 100, 'exact', 3, 50, 'sum', tf.string)
  with pytest.raises(
    ConfigurationError,
    match="Feature 'item' "
    r'\(features.yaml\): initializer must be a tf_keras '
    "initializer.*Received: initializer='nope'",
  ):
    embeddings.EmbeddingTable.from_params(
      'item', {'dim': 8, 'capacity': 100, 'initializer': 'nope'}
    )
