"""Exact-key embeddings written by hand with `tf.lookup`: the reference.

What an engineer writes in TensorFlow 2.21 to give every key its own row
under `ParameterServerStrategy`, and what `distributed.py`'s `tables-exact`
section compares tensorfx's exact-key tables with:

- each table's rows are one variable made under the strategy, so its
  partitioner splits them over the parameter servers as it splits the
  hashed reference's Keras `Embedding`s;
- beside each shard of rows, on the same server, a
  `tf.lookup.experimental.MutableHashTable` key -> row of that shard, and
  a next-free-row counter;
- a step takes each table's distinct keys, routes each to a shard (the key
  mod the number of shards), and on that shard's server looks the keys up;
  keys not found take the next rows (the counter's `assign_add`) and are
  inserted. A shard's last row is its default row: once its other rows
  are taken, further new keys read the default row and are not inserted
  (the table does not grow). The vectors are gathered on the shard's
  server and stitched back into the batch's order;
- the gather gives each shard's variable an `IndexedSlices` gradient of the
  rows looked up, so Keras' Adagrad (`ctr_cluster.py --adagrad-tables`)
  updates only those rows, as it does the hashed reference's.

No admission and no eviction: a key owns its row from its first training
lookup on. A lookup outside training inserts nothing (unknown keys read
the default row).
"""

import itertools

import tensorflow as tf
import tf_keras

# Numbers the servers' locks: a `tf.CriticalSection`'s mutex is shared by
# every one of the same name on a device, so each gets its own.
_LOCKS = itertools.count()
# An index's value for a key it does not hold.
_ABSENT = -1


class ExactEmbeddings(tf_keras.layers.Layer):
  """Exact-key embedding tables: every distinct key its own row.

  One layer holds every table, so that a step takes one lock a server for
  all the tables' shards there, not one a table. Call it once a step: a
  function that takes one server's lock more than once may deadlock (one
  that looked a table up 30 times over did).

  Example:
    >>> layer = ExactEmbeddings([100, 10], dim=4)
    >>> a, b = layer([tf.constant([7, 9, 7], tf.int64),
    ...               tf.constant([1], tf.int64)], training=True)
    >>> a.shape.as_list(), b.shape.as_list()
    ([3, 4], [1, 4])

  Args:
    capacities: each table's rows for keys; the table holds one more, the
      default row (a shard's last row is its default, so a table split in
      n shards holds `capacity + 1 - n` keys).
    dim: the width of every table's vectors.
    **kwargs: `tf_keras.layers.Layer`'s (`name`, ...).
  """

  def __init__(self, capacities: list[int], dim: int, **kwargs) -> None:
    super().__init__(**kwargs)
    self._capacities = [int(c) for c in capacities]
    self._dim = int(dim)

  def build(self, input_shape) -> None:
    """Makes each table's rows, and each shard's index and counter."""
    del input_shape
    strategy = tf.distribute.get_strategy()
    self.rows = []
    self.indexes = []
    self.counters = []
    self._defaults = []
    devices = []
    for t, capacity in enumerate(self._capacities):
      rows = self.add_weight(
        name=f'rows{t}',
        shape=[capacity + 1, self._dim],
        # Keras `Embedding`'s initializer: the hashed reference's.
        initializer='uniform',
      )
      self.rows.append(rows)
      indexes, counters, defaults = [], [], []
      for s, shard in enumerate(_shards(rows)):
        with strategy.extended.colocate_vars_with(shard):
          counters.append(
            tf.Variable(0, dtype=tf.int64, trainable=False, name=f'next{t}_{s}')
          )
        # The hash table's kernels run on a CPU, the shard's server's.
        device = _cpu(shard.device)
        with tf.device(device):
          indexes.append(
            tf.lookup.experimental.MutableHashTable(
              tf.int64, tf.int64, default_value=_ABSENT, name=f'index{t}_{s}'
            )
          )
        defaults.append(int(shard.shape[0]) - 1)
        if device not in devices:
          devices.append(device)
      self.indexes.append(indexes)
      self.counters.append(counters)
      self._defaults.append(defaults)
    # Two workers run steps at once: the read (which keys are new), the
    # counter's step and the insert must not interleave, or two workers
    # would give the same new key two rows (a row trained, then lost). A
    # `tf.CriticalSection` a server makes the three one step; TensorFlow
    # has no find-or-insert op that would be atomic by itself.
    self.locks = {}
    for device in devices:
      number = next(_LOCKS)
      with tf.device(device):
        self.locks[device] = tf.CriticalSection(
          name=f'{self.name}_lock{number}',
          shared_name=f'{self.name}_lock{number}',
        )
    self._devices = {
      (t, s): _cpu(shard.device)
      for t, rows in enumerate(self.rows)
      for s, shard in enumerate(_shards(rows))
    }
    super().build(None)

  def locate(
    self, table: int, keys: tf.Tensor, training: bool = False
  ) -> tf.Tensor:
    """Where each key's vector lives in one table: `[n, 2]` (shard, row).

    Args:
      table: the table's position in `capacities`.
      keys: `[n]` int64 keys.
      training: whether keys not found take a row (else they read the
        default row), as in `call`.

    Returns:
      Each key's shard and its row in that shard's variable.
    """
    unique, index = tf.unique(tf.cast(keys, tf.int64))
    ((shard, rows),) = self._rows_by_shard({table: unique}, training).values()
    distinct = tf.stack([tf.cast(shard, tf.int64), _stitch(shard, rows)], 1)
    return tf.gather(distinct, index)

  def call(self, keys: list[tf.Tensor], training: bool = False) -> list:
    """Each table's vectors: `[batch, dim]` for keys `[batch]`, in order."""
    keys = [tf.cast(tf.reshape(k, [-1]), tf.int64) for k in keys]
    uniques = [tf.unique(k) for k in keys]
    found = self._rows_by_shard(
      {t: unique for t, (unique, _) in enumerate(uniques)}, training
    )
    vectors = []
    for t, (_, index) in enumerate(uniques):
      shard, rows = found[t]
      # Gathered on each shard's server (the gather runs beside its
      # variable): only the vectors travel back.
      parts = [tf.gather(v, r) for v, r in zip(_shards(self.rows[t]), rows)]
      vectors.append(tf.gather(_stitch(shard, parts), index))
    return vectors

  def _rows_by_shard(self, keys_of, training):
    """{table: (each distinct key's shard, [each shard's part's rows])}.

    The tables' parts on one server are looked up together, under that
    server's lock when `training`.
    """
    requests = {}
    routes = {}
    for t, unique in keys_of.items():
      count = len(self.indexes[t])
      shard = tf.cast(tf.math.floormod(unique, count), tf.int32)
      parts = (
        tf.dynamic_partition(unique, shard, count) if count > 1 else [unique]
      )
      routes[t] = shard
      for s, part in enumerate(parts):
        requests.setdefault(self._devices[(t, s)], []).append((t, s, part))
    rows = {}
    for device, asked in requests.items():
      with tf.device(device):
        if training:
          found = self.locks[device].execute(
            lambda asked=asked: [self._find_or_add(*a) for a in asked]
          )
        else:
          found = [self._find(*a) for a in asked]
      for (t, s, _), r in zip(asked, found):
        rows[(t, s)] = r
    return {
      t: (shard, [rows[(t, s)] for s in range(len(self.indexes[t]))])
      for t, shard in routes.items()
    }

  def _find(self, table, shard, keys):
    """Local rows of `keys` in a shard; the default row for unknown ones."""
    rows = self.indexes[table][shard].lookup(keys)
    default = self._defaults[table][shard]
    return tf.where(rows == _ABSENT, tf.constant(default, tf.int64), rows)

  def _find_or_add(self, table, shard, keys):
    """Local rows of distinct `keys` in a shard, new keys given rows."""
    index = self.indexes[table][shard]
    default = tf.constant(self._defaults[table][shard], tf.int64)
    rows = index.lookup(keys)
    new = tf.where(tf.equal(rows, _ABSENT))
    new_keys = tf.gather_nd(keys, new)
    count = tf.size(new_keys, out_type=tf.int64)
    # The counter keeps counting once the shard is full: rows at or past
    # the default one are not handed out.
    end = self.counters[table][shard].assign_add(count)
    given = tf.range(end - count, end)
    fits = given < default
    insert = index.insert(
      tf.boolean_mask(new_keys, fits), tf.boolean_mask(given, fits)
    )
    rows = tf.tensor_scatter_nd_update(
      rows, new, tf.where(fits, given, default)
    )
    # The lock is released after the rows are returned: the insert must
    # have run by then.
    with tf.control_dependencies([insert]):
      return tf.identity(rows)


def _stitch(shard, parts):
  """Each shard's part (in key order) back in the order of the keys."""
  if len(parts) == 1:
    return parts[0]
  slots = tf.dynamic_partition(tf.range(tf.size(shard)), shard, len(parts))
  return tf.dynamic_stitch(slots, parts)


def _shards(rows):
  """The variables of a table's rows: its shards, or itself."""
  if isinstance(rows, tf.__internal__.distribute.ShardedVariable):
    return rows.variables
  return [rows]


def _cpu(device):
  """The CPU of the task that holds `device`."""
  spec = tf.DeviceSpec.from_string(device or '')
  return spec.replace(device_type='CPU', device_index=0).to_string()
