"""EmbeddingTable: hashing, lookups and combiners, admission, eviction."""

import numpy as np
import pytest
import tensorflow as tf

from tensorfx import ConfigurationError
from tensorfx import embeddings


def _table(**kwargs):
  kwargs.setdefault('dim', 4)
  kwargs.setdefault('capacity', 100)
  return embeddings.EmbeddingTable(kwargs.pop('name', 'items'), **kwargs)


@pytest.mark.parametrize(
  'kwargs,message',
  [
    ({'name': '1x'}, "name must be letters.*Received: name='1x'"),
    ({'dim': 0}, 'dim must be a positive integer. Received: dim=0'),
    (
      {'capacity': 2.5},
      'capacity must be a positive integer. Received: capacity=2.5',
    ),
    (
      {'key_dtype': tf.float32},
      'key_dtype must be one of int64, string. Received: key_dtype=tf.float32',
    ),
    (
      {'combiner': 'max'},
      "combiner must be one of sum, mean, sqrtn. Received: combiner='max'",
    ),
    (
      {'hashing': 'md5'},
      "hashing must be one of mod, fingerprint, exact. Received: hashing='md5'",
    ),
    (
      {'admit_after': 0},
      'admit_after must be a positive integer. Received: admit_after=0',
    ),
    ({'evict_every_steps': 5}, 'evict_every_steps needs evict_after_steps'),
    (
      {'initializer': 'nonsense'},
      'initializer must be a tf_keras '
      "initializer.*Received: initializer='nonsense'",
    ),
  ],
)
def test_bad_arguments_name_the_argument(kwargs, message):
  with pytest.raises(ConfigurationError, match=message):
    _table(**kwargs)


def test_rows_hash_int_and_string_keys():
  table = _table(capacity=10)
  assert table.rows(tf.constant([3, 13, -1], tf.int64)).numpy().tolist() == [
    3,
    3,
    9,
  ]
  assert table.rows(tf.constant([3], tf.int32)).numpy().tolist() == [3]
  spread = (
    _table(capacity=10, hashing='fingerprint')
    .rows(tf.range(1000, dtype=tf.int64))
    .numpy()
  )
  assert spread.min() >= 0 and spread.max() < 10
  assert len(set(spread.tolist())) == 10
  strings = _table(capacity=1000, key_dtype='string')
  rows = strings.rows(tf.constant(['a', 'b', 'a']))
  assert (
    rows.numpy().tolist()
    == tf.strings.to_hash_bucket_fast(['a', 'b', 'a'], 1000).numpy().tolist()
  )
  with pytest.raises(
    ConfigurationError, match='has string keys. Received: keys of dtype int64'
  ):
    strings.lookup(tf.constant([1], tf.int64))
  with pytest.raises(ConfigurationError, match='has int64 keys'):
    table.lookup(tf.constant(['a']))


def test_lookup_shapes_and_combiners():
  table = _table(capacity=10, admit_after=1)
  table.build()
  table.counts.assign(tf.ones([10], tf.int32))  # Every row admitted.
  values = table.embeddings.numpy()
  assert table.embeddings.shape == (11, 4)
  assert not values[table.default_row].any()  # The default row starts at 0.
  assert np.abs(values[:10]).max() <= 0.05 and values[:10].any()
  np.testing.assert_allclose(
    table.lookup(tf.constant([1, 12])).numpy(), values[[1, 2]]
  )
  lists = tf.ragged.constant([[1, 2, 3], [], [4]], tf.int64)
  expected = {
    'sum': [values[[1, 2, 3]].sum(0), np.zeros(4), values[4]],
    'mean': [values[[1, 2, 3]].mean(0), np.zeros(4), values[4]],
    'sqrtn': [values[[1, 2, 3]].sum(0) / np.sqrt(3), np.zeros(4), values[4]],
  }
  for combiner, rows in expected.items():
    for keys in (lists, lists.to_sparse()):
      np.testing.assert_allclose(
        table.lookup(keys, combiner).numpy(), rows, rtol=1e-6, atol=1e-7
      )
  np.testing.assert_allclose(
    table.lookup(tf.constant([[1, 2], [3, 4]], tf.int64), 'sum').numpy(),
    [values[[1, 2]].sum(0), values[[3, 4]].sum(0)],
    rtol=1e-6,
  )
  with pytest.raises(ConfigurationError, match='Received: keys of shape'):
    table.lookup(tf.zeros([2, 2, 2], tf.int64))


def test_unseen_keys_read_the_default_row():
  table = _table(capacity=10)
  # Nothing trained yet: every key is unseen.
  vectors = table.lookup(tf.constant([1, 2], tf.int64))
  assert not vectors.numpy().any()
  table.lookup(tf.constant([1], tf.int64), training=True)
  vectors = table.lookup(tf.constant([1, 2], tf.int64)).numpy()
  np.testing.assert_allclose(vectors[0], table.embeddings.numpy()[1])
  assert not vectors[1].any()


def test_keys_are_admitted_after_the_threshold():
  table = _table(capacity=10, admit_after=3)
  table.build()
  table.embeddings.assign(
    tf.tile(tf.range(11, dtype=tf.float32)[:, None], [1, 4])
  )
  seen = []
  for _ in range(4):
    vectors = table.lookup(tf.constant([5], tf.int64), training=True)
    seen.append(int(vectors.numpy()[0, 0]))
  # Lookups 1 and 2 read the default row (10); the third admits the key.
  assert seen == [10, 10, 5, 5]
  assert table.counts.numpy()[5] == 4
  # A batch counts every occurrence.
  table.lookup(tf.constant([7, 7, 7], tf.int64), training=True)
  assert int(table.lookup(tf.constant([7], tf.int64)).numpy()[0, 0]) == 7
  assert int(table.live_rows()) == 2


def test_rows_not_seen_for_the_threshold_are_evicted():
  step = tf.Variable(0, dtype=tf.int64)
  table = _table(
    capacity=10, evict_after_steps=3, evict_every_steps=1, step_counter=step
  )
  optimizer = embeddings.LazyAdam(0.1)
  table.bind(optimizer=optimizer)
  table.build()
  optimizer.build(table.shards)
  optimizer._m_slots[0].assign(tf.ones([11, 4]))

  @tf.function
  def train(keys):
    table.lookup(keys, training=True)
    step.assign_add(1)

  train(tf.constant([1, 2], tf.int64))  # step 0: rows 1 and 2 seen
  before = table.embeddings.numpy()
  stamps = []
  for _ in range(4):  # steps 1..4: only row 2
    train(tf.constant([2], tf.int64))
    stamps.append(int(table.counts.numpy()[1]))
  # Row 1, last seen at step 0, is evicted at step 3: 3 steps without it.
  assert stamps == [1, 1, 0, 0]
  assert int(table.evicted.numpy()) == 1
  after = table.embeddings.numpy()
  assert not np.allclose(after[1], before[1])  # re-initialized
  assert np.abs(after[1]).max() <= 0.05
  np.testing.assert_array_equal(after[2], before[2])
  assert table.last_seen.numpy()[1] == 0
  moments = optimizer._m_slots[0].numpy()
  assert not moments[1].any() and moments[2].all()  # its moments cleared
  # A sweep on demand; nothing else is stale.
  assert int(table.evict()) == 0


def test_eviction_needs_a_clock():
  table = _table(evict_after_steps=5)
  with pytest.raises(
    ConfigurationError, match='need a clock: pass step_counter='
  ):
    table.lookup(tf.constant([1], tf.int64), training=True)
  with pytest.raises(ConfigurationError, match='does not evict'):
    _table().evict()


def test_admission_and_eviction_state_survives_a_checkpoint(tmp_path):
  def make():
    step = tf.Variable(0, dtype=tf.int64)
    table = _table(
      capacity=10,
      admit_after=2,
      evict_after_steps=4,
      evict_every_steps=1,
      step_counter=step,
    )
    table.build()
    return step, table, tf.train.Checkpoint(step=step, table=table)

  step, table, checkpoint = make()
  for keys in ([1, 2], [1], [3]):
    table.lookup(tf.constant(keys, tf.int64), training=True)
    step.assign_add(1)
  path = checkpoint.write(str(tmp_path / 'ckpt'))

  step, restored, checkpoint = make()
  checkpoint.read(path).assert_existing_objects_matched()
  assert restored.counts.numpy()[:4].tolist() == [0, 2, 1, 1]
  assert restored.last_seen.numpy()[:4].tolist() == [0, 1, 0, 2]
  np.testing.assert_array_equal(
    restored.embeddings.numpy(), table.embeddings.numpy()
  )
  # Key 1 stays admitted, key 2 needs one more sighting.
  vectors = restored.lookup(tf.constant([1, 2], tf.int64)).numpy()
  assert vectors[0].any() and not vectors[1].any()
  # The stamps still count: row 2 (last seen at step 0) is evicted at step
  # 4, row 1 (at step 1) at step 5.
  counts = []
  for _ in range(3):  # steps 3, 4, 5
    restored.lookup(tf.constant([3], tf.int64), training=True)
    counts.append(restored.counts.numpy()[:4].tolist())
    step.assign_add(1)
  assert counts == [[0, 2, 1, 2], [0, 2, 0, 3], [0, 0, 0, 4]]


def test_find_tables_walks_the_module():
  module = tf.Module()
  shared = _table(name='items')
  module.tables = {'item': shared, 'history': shared}
  module.users = [_table(name='users')]
  assert sorted(t.name for t in embeddings.find_tables(module)) == [
    'items',
    'users',
  ]
