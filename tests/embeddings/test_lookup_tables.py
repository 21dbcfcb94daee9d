"""lookup_tables: several tables looked up in one step, as each alone.

Under parameter servers exact-key tables' index calls are batched, one per
server (tests/embeddings/test_exact_sharding.py counts them); here, on one
device, the vectors and the keys admitted are those of separate lookups.
"""

import tensorflow as tf

from tensorfx import embeddings


def _tables():
  tables = [
    embeddings.EmbeddingTable(
      'items', dim=4, capacity=50, hashing='exact', admit_after=2
    ),
    embeddings.EmbeddingTable('users', dim=3, capacity=20, hashing='mod'),
  ]
  for table in tables:
    table.build()  # Outside the step, as a model's first call does.
  return tables


def test_the_vectors_are_each_tables_own_lookup():
  items, users = _tables()
  keys = tf.constant([[1, 2], [2, 7]], tf.int64)
  ids = tf.constant([3, 11], tf.int64)

  @tf.function
  def step():
    return embeddings.lookup_tables(
      [(items, keys, 'mean'), (users, ids)], training=True
    )

  for _ in range(2):  # the second admits the keys seen twice
    together = step()
  assert [v.shape.as_list() for v in together] == [[2, 4], [2, 3]]
  alone = [items.lookup(keys, 'mean'), users.lookup(ids)]
  for a, b in zip(together, alone):
    assert tf.reduce_all(tf.equal(a, b))
  rows = items._keys.rows(tf.constant([1, 2, 7, 99], tf.int64)).numpy()
  assert (rows[:3] >= 0).all() and rows[3] == -1


def test_the_same_table_twice_in_one_step():
  (items, _) = _tables()

  @tf.function
  def step():
    return embeddings.lookup_tables(
      [
        (items, tf.constant([5, 6], tf.int64)),
        (items, tf.constant([6, 8], tf.int64)),
      ],
      training=True,
    )

  step()
  counts = items.statistics(tf.constant([5, 6, 8], tf.int64))['count']
  # Key 6 was counted by both lookups and admitted (admit_after=2).
  assert counts.numpy().tolist() == [1, 2, 1]
  assert items._keys.rows(tf.constant([6], tf.int64)).numpy()[0] >= 0
