"""The values of an `EmbeddingTable`'s rows: at first, and when reset.

By default uniform in [-0.05, 0.05], drawn statelessly from the table's
seed and a salt, so every worker of a multi-worker job draws the same
values for the same rows; the default row starts at zero. Hashed keys draw
every row when the variables are made and redraw the rows an eviction
resets; exact keys draw a row when a key is admitted to it.
"""

import zlib

import tensorflow as tf

# The default initializer: uniform in [-0.05, 0.05], as tf_keras' Embedding.
_INIT_SCALE = 0.05


class InitialValues:
  """Draws the values of an `EmbeddingTable`'s rows.

  Args:
    name: the table's name; the default seed is a hash of it.
    capacity: the number of rows keys get; row `capacity` is the default row.
    dim: the embedding dimension.
    initializer: the table's checked initializer (None: the default).
    seed: the seed of the default initializer (None: from the name).
  """

  def __init__(self, name, capacity, dim, initializer, seed):
    self._capacity = capacity
    self._dim = dim
    self._initializer = initializer
    self._seed = (
      int(seed)
      if seed is not None
      else (zlib.crc32(name.encode('utf-8')) & 0x7FFFFFFF)
    )

  def initial_rows(self, shape, partition_shape=None, partition_offset=None):
    """The first values of the rows (of one shard, under a partitioner)."""
    # Called once per shard under a partitioner (with the shard's shape and
    # offset), so no parameter server materializes the whole table.
    shape = tuple(partition_shape or shape)
    first = int(partition_offset[0]) if partition_offset else 0
    values = self.draw(shape, tf.constant(first, tf.int64))
    default = self._capacity - first
    if 0 <= default < shape[0]:
      # The default row starts at zero: "no key" adds nothing until trained.
      values = tf.tensor_scatter_nd_update(
        values, [[default]], tf.zeros([1, self._dim], values.dtype)
      )
    return values

  def draw(self, shape, salt):
    """Fresh float32 values of `shape`; the default initializer uses `salt`."""
    if self._initializer is not None:
      return tf.cast(self._initializer(shape, dtype=tf.float32), tf.float32)
    seed = tf.stack(
      [tf.constant(self._seed, tf.int64), tf.cast(salt, tf.int64)]
    )
    return tf.random.stateless_uniform(
      shape, seed, minval=-_INIT_SCALE, maxval=_INIT_SCALE
    )
