"""Exact keys: every admitted key owns a row; no two keys ever share one.

The index (`KeyIndex`, a hash table per shard of rows) maps each key seen in
training to its row, its count and the step it was last looked up:
admission and eviction are per key. Rows come from a free stack; eviction
forgets stale keys and returns their rows to it. A row gets fresh initial
values, and its optimizer slots are cleared, when a key is admitted to it.

Under parameter servers each shard of rows has its own index on the same
server, and keys go to an index by a hash of the key; an index hands out
its own shard's rows first. Checkpoints hold the table by key (see
`KeyedRows`), so a restart may use more rows or another number of servers.

Under synchronous replicas one a process (`MultiWorkerMirroredStrategy`,
one device a worker) every worker holds its own index; a training lookup
gathers the distinct keys of all workers (`_replicas.gather`, in worker
order) and each worker records all of them, so the same records on the
same state keep every copy's key -> row map identical.

A training lookup is one call per index, run where the index and its rows
live: the index's share of the keys goes in, their rows come out, and in
between, on that server alone, the keys are counted and stamped, the keys
admitted now get rows of the index's own shard, and those rows get their
initial values and cleared optimizer slots. Each index has its own lock (a
`tf.CriticalSection` on its server), under which a call reads and writes
the index, so the workers of a parameter-server job, which run steps at
once, never hand one row to two keys; no lock spans servers, and no call
holds one lock while it waits for another, so lookups of one table twice
in a step cannot deadlock. An index hands out only rows of its own shard
(a restore lays keys out so, see `load`): nothing a call writes lies on
another server.
"""

import itertools
from typing import Any

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.embeddings import _eviction
from tensorfx.embeddings import _expansion
from tensorfx.embeddings import _index
from tensorfx.embeddings import _keyed
from tensorfx.embeddings import _replicas
from tensorfx.embeddings import _sharding
from tensorfx.embeddings import _together

# Numbers the locks of this process: a lock's mutex is its own (locks of
# one shared name, an empty one included, are one mutex).
_LOCKS = itertools.count()


class ExactKeys:
  """The `exact` mode of an `EmbeddingTable` (`hashing='exact'`)."""

  exact = True

  def __init__(self, table, initial, evict_every):
    self._table = table
    self._initial = initial
    self._eviction = _eviction.Eviction(table, self, evict_every)
    self.indexes: Any = None
    self.ranges: Any = None
    self.state: Any = None
    self.lock: Any = None

  @property
  def eviction(self):
    """The schedule that stamps this mode's rows and sweeps stale keys."""
    return self._eviction

  def build(self):
    """Makes one index per shard of the table's rows, beside it."""
    table = self._table
    strategy = tf.distribute.get_strategy()
    parameter_servers = isinstance(
      strategy, tf.distribute.ParameterServerStrategy
    )
    if table.dynamic_expansion and len(_sharding.shards(table.embeddings)) > 1:
      raise ConfigurationError(
        f'EmbeddingTable {table.name!r} has dynamic_expansion, which grows '
        'one variable of rows: its rows must not be split over parameter '
        'servers (they are split when a table is larger than the minimum '
        'shard). Grow it by a restart with a larger capacity instead, or '
        'train it on one parameter server.'
      )
    replicated = strategy.num_replicas_in_sync > 1 and not parameter_servers
    if replicated and not _replicas.one_per_process(strategy):
      raise ConfigurationError(
        f'EmbeddingTable {table.name!r} has exact keys, which synchronous '
        'replicas agree on one per process: run one worker per device '
        '(MultiWorkerMirroredStrategy, tensorfx train --cluster workers=N), '
        'or train on one device or with parameter servers, or use '
        "hashing='mod' or 'fingerprint'. Received: "
        f'{type(strategy).__name__} with '
        f'{len(strategy.extended.worker_devices)} replicas in this process'
      )
    if replicated and table.dynamic_expansion:
      raise ConfigurationError(
        f'EmbeddingTable {table.name!r} has dynamic_expansion, which grows '
        'a table on one device: under synchronous replicas give it the '
        'capacity it needs, or grow it by a restart with a larger capacity '
        '(every key keeps its row, vector and slots). Received: '
        f'{type(strategy).__name__} with {strategy.num_replicas_in_sync} '
        'replicas'
      )
    if replicated and table.key_dtype == tf.string:
      # Replicas exchange their new keys by collectives, which carry
      # numbers only.
      raise ConfigurationError(
        f'EmbeddingTable {table.name!r} has exact string keys, which '
        'synchronous replicas cannot exchange: give it int64 keys (e.g. '
        'tf.strings.to_hash_bucket_fast(keys, 2**62) before the lookup), '
        "or use hashing='mod' or 'fingerprint'. Received: "
        f'{type(strategy).__name__} with {strategy.num_replicas_in_sync} '
        'replicas'
      )
    shards = _sharding.shards(table.embeddings)
    starts = _sharding.starts(shards) + [table.capacity + 1]
    # The rows keys may hold: a table of fixed rows that its job grew (under
    # parameter servers) has more than its capacity; its rows past the
    # default one reach the free stack when its checkpoint is restored.
    key_rows = table.capacity
    if table.dynamic_expansion and not table.grows_in_step:
      key_rows = int(table.embeddings.shape[0]) - 1
    self.ranges = []
    self.indexes = []
    self.locks = []
    # Each index writes its own shard's rows (the whole variable when there
    # is one index: it may grow, see _expansion).
    self._shards = shards if len(shards) > 1 else None
    for i, shard in enumerate(shards):
      # The default row (the last) is nobody's.
      first = starts[i]
      limit = max(first, min(starts[i + 1], table.capacity))
      self.ranges.append((first, limit))
      placement = (
        strategy.extended.colocate_vars_with(shard)
        if parameter_servers
        else tf.device(_cpu(shard.device))
      )
      self.indexes.append(
        _index.KeyIndex(
          table.key_dtype,
          first,
          limit,
          key_rows,
          name=f'{table.name}_index{i}',
          placement=placement,
          device=_cpu(shard.device),
          dynamic=table.grows_in_step,
        )
      )
      with tf.device(_cpu(shard.device)):
        self.locks.append(
          tf.CriticalSection(
            name=f'{table.name}_lock{i}',
            shared_name=f'{table.name}_lock{i}_{next(_LOCKS)}',
          )
        )
    self.state = _keyed.KeyedRows(table, self)

  def initial_rows(self, shape, partition_shape=None, partition_offset=None):
    # A row gets its values when a key is admitted to it.
    del partition_offset
    return tf.zeros(partition_shape or shape, tf.float32)

  # Lookups.

  def rows(self, keys):
    """The row each key owns, -1 for keys without one."""
    return self._per_index(keys, lambda i, part: self.indexes[i].find(part))

  def lookup_rows(self, keys, training):
    """The rows to read: the keys' own, or the default row."""
    table = self._table
    if training:
      unique, position, occurrences = _distinct(keys)
      context = tf.distribute.get_replica_context()
      if _replicas.replicated(context):
        rows = self._record_replicated(context, unique, occurrences)
      else:
        rows = self._record(unique, occurrences, self._now())
      self._eviction.sweep_if_due()
      rows = tf.gather(rows, position)
    else:
      rows = self.rows(keys)
    return tf.where(rows >= 0, rows, tf.constant(table.default_row, tf.int64))

  def _record_replicated(self, context, keys, occurrences):
    """Synchronous replicas: each records every replica's keys, in one order.

    The replicas' distinct keys are gathered (in replica order) and each
    replica records all of them in its own copy of the index: the same
    records on the same state give every copy the same key -> row map (and
    the same counts, stamps and evictions). A key's count grows by its
    lookups on all replicas. The gathering happens before the lock: a
    replica waiting for the others' keys must not hold it.

    Returns:
      int64 [U] the rows of this replica's `keys`.
    """
    (every, counts), sizes = _replicas.gather(context, [keys, occurrences])
    distinct, position = tf.unique(every, out_idx=tf.int64)
    counts = tf.math.unsorted_segment_sum(
      counts, position, tf.size(distinct, out_type=tf.int64)
    )
    rows = self._record(distinct, counts, self._now())
    # This replica's keys come after those of the replicas before it.
    replica = tf.cast(context.replica_id_in_sync_group, tf.int64)
    offset = tf.reduce_sum(sizes[:replica])
    mine = tf.gather(
      position, offset + tf.range(tf.size(keys, out_type=tf.int64))
    )
    return tf.gather(rows, mine)

  def _record(self, keys, occurrences, now):
    """Records distinct keys in their indexes, one call per server; rows."""
    plan = _together.Plan(self, self._table, now, keys, occurrences)
    return plan.stitch(_together.record_together([plan])[0])

  def record_locked(self, i, keys, occurrences, now):
    """Index `i` records distinct keys; the caller holds its lock.

    Returns:
      int64 [U] the keys' rows (-1: not admitted).
    """
    table = self._table
    rows, updates = self.indexes[i].record(
      keys,
      occurrences,
      now,
      table.admit_after,
      admitted=lambda given: self._prepare(i, given, now),
    )
    if table.grows_in_step:
      with tf.control_dependencies(_index.control_ops(updates)):
        updates.append(
          _expansion.grow_if_full(table, self, table.expansion_threshold)
        )
    with tf.control_dependencies(_index.control_ops(updates)):
      return tf.identity(rows)

  # Lookups of several tables at once (`lookup_tables`).

  def batchable(self, training):
    """Whether a lookup can join other tables' in one call per server."""
    context = tf.distribute.get_replica_context()
    return (
      training
      and not tf.executing_eagerly()
      and not _replicas.replicated(context)
      and not self._table.grows_in_step
    )

  def plan(self, keys):
    """A training lookup's first half: the keys split over the indexes.

    Returns:
      A `Plan`: each index's share of the distinct keys (`parts`, `(i,
      keys, occurrences)` of the indexes that get some), to record by
      `record_locked` under the index's lock, and `finish` to make the
      rows read from their rows.
    """
    unique, position, occurrences = _distinct(keys)
    return _together.Plan(
      self, self._table, self._now(), unique, occurrences, position
    )

  def _now(self):
    table = self._table
    if table.step_counter is None and table.eviction_threshold is None:
      return tf.constant(0, tf.int64)  # Stamps serve eviction only.
    return self._eviction.now()

  def _prepare(self, i, rows, now):
    """Fresh values and cleared slots for the rows index `i` just gave.

    The rows are the index's own shard's, so the writes stay on its server.
    """
    table = self._table
    size = tf.size(rows, out_type=tf.int64)
    # Indexes and workers admitting at the same step draw different values:
    # the salt holds the first row each was given, and their rows are
    # disjoint.
    first = tf.reduce_min(tf.concat([rows, [table.capacity]], 0))
    salt = now * (table.capacity + 1) + first
    values = self._initial.draw(tf.stack([size, table.dim]), salt)
    if self._shards is None:
      variable, local = table.embeddings, rows
    else:
      variable, local = [self._shards[i]], rows - self.ranges[i][0]
    updates = _sharding.scatter_update(variable, local, values)
    optimizer = table.optimizer
    if hasattr(optimizer, 'reset_slots'):
      updates += optimizer.reset_slots(variable, local) or []
    return updates

  def _per_index(self, keys, run):
    """Runs `run(i, keys)` for each index `i` with its keys; stitches."""
    if len(self.indexes) == 1:
      return run(0, keys)
    owner = self.route(keys)
    count = len(self.indexes)
    parts = tf.dynamic_partition(keys, owner, count)
    positions = tf.dynamic_partition(
      tf.range(tf.size(keys, out_type=tf.int32)), owner, count
    )
    return tf.dynamic_stitch(
      positions, [run(i, parts[i]) for i in range(count)]
    )

  def route(self, keys):
    """The index (int32) of each key: a hash of the key."""
    count = len(self.indexes)
    if self._table.key_dtype == tf.string:
      return tf.cast(tf.strings.to_hash_bucket_fast(keys, count), tf.int32)
    hashed = tf.bitcast(tf.fingerprint(keys), tf.int64)
    return tf.cast(tf.math.floormod(hashed, count), tf.int32)

  # Eviction and statistics.

  def sweep(self, now):
    """Forgets stale keys in every index, each under its lock; rows freed."""
    threshold = self._table.eviction_threshold

    def sweep_one(index):
      def locked():
        with tf.device(index.device):
          freed, changes = index.sweep(now, threshold)
          with tf.control_dependencies(_index.control_ops(changes)):
            return tf.identity(freed)

      return locked

    return tf.add_n(
      [
        lock.execute(sweep_one(index), exclusive_resource_access=False)
        for index, lock in zip(self.indexes, self.locks)
      ]
    )

  def live_rows(self):
    free = tf.add_n([index.free_rows() for index in self.indexes])
    if self._table.dynamic_expansion:
      return _expansion.key_capacity(self._table) - free
    return tf.constant(self._table.capacity, tf.int64) - free

  def statistics(self, keys):
    entries = self._per_index(
      keys, lambda i, part: self.indexes[i].entries(part)
    )
    return {
      'row': entries[:, 0],
      'count': entries[:, 1],
      'last_seen': entries[:, 2],
    }

  # Checkpoints and export.

  def checkpoint_children(self, children):
    """Checkpoints hold the rows by key: the state replaces the variable."""
    children = dict(children)
    children.pop('embeddings', None)
    children['index'] = self.state
    return children

  def saved_model_children(self, children):
    """A SavedModel serves from the rows and the index's hash tables."""
    children = dict(children)
    for i, index in enumerate(self.indexes):
      children[f'index{i}'] = index.table
    return children

  def export(self):
    """Every shard's (keys, entries, free rows), concatenated."""
    parts = [index.export() for index in self.indexes]
    return tuple(tf.concat(list(column), 0) for column in zip(*parts))


def _distinct(keys):
  """(distinct keys, each key's position among them, their occurrences)."""
  unique, position = tf.unique(keys, out_idx=tf.int64)
  occurrences = tf.math.unsorted_segment_sum(
    tf.ones_like(position), position, tf.size(unique, out_type=tf.int64)
  )
  return unique, position, occurrences


def _cpu(device):
  """The CPU of a variable's task: hash tables and locks have no GPU kernels."""
  spec = tf.DeviceSpec.from_string(device or '')
  return spec.replace(device_type='CPU', device_index=0).to_string()
