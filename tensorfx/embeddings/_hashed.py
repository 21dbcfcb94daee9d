"""Hashed keys: a key's row is a hash of the key; colliding keys share it.

The statistics of admission and eviction are per row: `counts` (training
lookups of the row's keys) and `last_seen` (the step of the last one), two
variables beside the rows, sharded like them under parameter servers.
"""

import functools

import tensorflow as tf

from tensorfx.embeddings import _eviction
from tensorfx.embeddings import _replicas
from tensorfx.embeddings import _sharding


class HashedKeys:
  """The `mod` and `fingerprint` modes of an `EmbeddingTable`.

  The table owns the variables (`table.counts`, `table.last_seen`), so that
  they are checkpointed and exported with it under their usual names.
  """

  exact = False

  def __init__(self, table, initial, evict_every):
    self._table = table
    self._initial = initial
    self._eviction = _eviction.Eviction(table, self, evict_every)

  @property
  def eviction(self):
    """The schedule that stamps this mode's rows and sweeps stale keys."""
    return self._eviction

  def build(self):
    """Makes the per-row statistics, in the table's name scope."""
    table = self._table
    embeddings = table.embeddings
    if len(_sharding.shards(embeddings)) == 1:
      # On the server of the rows: a training step's rows then travel to
      # one server, once, for the gather and the counts both (a variable
      # made next would go to the next server, round robin).
      with tf.distribute.get_strategy().extended.colocate_vars_with(embeddings):
        self._build()
    else:
      self._build()

  def _build(self):
    table = self._table
    capacity = table.capacity
    table.counts = tf.Variable(
      functools.partial(_zeros, shape=(capacity,), dtype=tf.int32),
      shape=(capacity,),
      dtype=tf.int32,
      trainable=False,
      name='counts',
    )
    if table.eviction_threshold is not None:
      table.last_seen = tf.Variable(
        functools.partial(_zeros, shape=(capacity,), dtype=tf.int64),
        shape=(capacity,),
        dtype=tf.int64,
        trainable=False,
        name='last_seen',
      )

  def initial_rows(self, shape, partition_shape=None, partition_offset=None):
    return self._initial.initial_rows(shape, partition_shape, partition_offset)

  def rows(self, keys):
    """The hash bucket of each key, int64 in [0, capacity)."""
    table = self._table
    if table.key_dtype == tf.string:
      return tf.strings.to_hash_bucket_fast(keys, table.capacity)
    if table.hashing == 'fingerprint':
      flat = tf.reshape(keys, [-1])
      hashed = tf.bitcast(tf.fingerprint(flat), tf.int64)
      keys = tf.reshape(hashed, tf.shape(keys))
    return tf.math.floormod(keys, tf.constant(table.capacity, tf.int64))

  def lookup_rows(self, keys, training):
    """The rows to read: the keys' buckets, or the default row."""
    rows = self.rows(keys)
    if training:
      self._record(rows)
      self._eviction.sweep_if_due()
    return self._admitted(rows, training)

  def _admitted(self, rows, training):
    """Rows of keys not admitted yet become the default row."""
    table = self._table
    if training and table.admit_after == 1:
      return rows  # Just counted: every key is admitted.
    counts = tf.nn.embedding_lookup(table.counts, rows)
    return tf.where(
      counts >= table.admit_after,
      rows,
      tf.constant(table.default_row, tf.int64),
    )

  def _record(self, rows):
    """Counts and stamps the rows of a training batch."""
    table = self._table
    context = tf.distribute.get_replica_context()
    if (
      context is not None
      and context.num_replicas_in_sync > 1
      and not isinstance(
        tf.distribute.get_strategy(), tf.distribute.ParameterServerStrategy
      )
    ):
      self._record_replicated(context, rows)
      return
    table.counts.scatter_add(
      tf.IndexedSlices(tf.ones_like(rows, tf.int32), rows)
    )
    if table.eviction_threshold is not None:
      table.last_seen.scatter_update(
        tf.IndexedSlices(tf.fill(tf.shape(rows), self._eviction.now()), rows)
      )

  def _record_replicated(self, context, rows):
    """Synchronous replicas: every copy counts the keys of all replicas.

    Each replica keeps its own copy of the statistics and applies the same
    update. One replica a process (see `tensorfx.embeddings._replicas`):
    the replicas' rows are gathered and every copy counts them all.
    Otherwise the update is a dense all-reduce of per-row counts (the size
    of the table). Parameter servers, which hold one copy, count sparsely.
    """
    table = self._table
    if _replicas.sparse_sums(tf.distribute.get_strategy()):
      (every,), _ = _replicas.gather(context, [tf.reshape(rows, [-1])])
      table.counts.scatter_add(
        tf.IndexedSlices(tf.ones_like(every, tf.int32), every)
      )
      if table.eviction_threshold is not None:
        table.last_seen.scatter_update(
          tf.IndexedSlices(
            tf.fill(tf.shape(every), self._eviction.now()), every
          )
        )
      return
    seen = tf.math.unsorted_segment_sum(
      tf.ones_like(rows, tf.int32), rows, table.capacity
    )
    seen = context.all_reduce(tf.distribute.ReduceOp.SUM, seen)
    table.counts.assign_add(seen)
    if table.eviction_threshold is not None:
      table.last_seen.assign(
        tf.where(
          seen > 0, self._eviction.now(), tf.convert_to_tensor(table.last_seen)
        )
      )

  def sweep(self, now):
    """Resets the stale rows: fresh values, count 0, cleared slots."""
    table = self._table
    counts = tf.convert_to_tensor(table.counts)
    last = tf.convert_to_tensor(table.last_seen)
    stale = tf.where((counts > 0) & (now - last >= table.eviction_threshold))[
      :, 0
    ]
    size = tf.shape(stale, out_type=tf.int64)[0]
    table.embeddings.scatter_update(
      tf.IndexedSlices(
        self._initial.draw(tf.stack([size, table.dim]), now), stale
      )
    )
    table.counts.scatter_update(
      tf.IndexedSlices(tf.zeros_like(stale, tf.int32), stale)
    )
    table.last_seen.scatter_update(
      tf.IndexedSlices(tf.zeros_like(stale), stale)
    )
    optimizer = table.optimizer
    if hasattr(optimizer, 'reset_slots'):
      optimizer.reset_slots(table.embeddings, stale)
    return size

  def live_rows(self):
    counts = tf.convert_to_tensor(self._table.counts)
    return tf.reduce_sum(tf.cast(counts >= self._table.admit_after, tf.int64))

  def statistics(self, keys):
    """The row, count and last step of each key's row (shared by collisions)."""
    table = self._table
    rows = self.rows(keys)
    stamps = (
      tf.nn.embedding_lookup(table.last_seen, rows)
      if table.eviction_threshold is not None
      else tf.zeros_like(rows)
    )
    return {
      'row': rows,
      'count': tf.cast(tf.nn.embedding_lookup(table.counts, rows), tf.int64),
      'last_seen': stamps,
    }

  def checkpoint_children(self, children):
    return children


def _zeros(shape, dtype, partition_shape=None, partition_offset=None):
  del partition_offset
  return tf.zeros(partition_shape or shape, dtype)
