"""KeyIndex: one shard of an exact-key table's index, with its free rows.

Each key the table has seen in training has an entry `[row, count,
last_seen]`: the row it owns (-1 until admitted), its training lookups and
the step of the last one. Free rows wait on a stack. `record` and `sweep`
read, then write: the table runs them under the index's lock, on its
server (see `ExactKeys`).
"""

import tensorflow as tf

# The entry of a key not in the index: no row, never counted.
_ABSENT = (-1, 0, 0)


class KeyIndex:
  """A key -> (row, count, last step) map and a free-row stack.

  The state lives on one device (a parameter server's, under
  `ParameterServerStrategy`), beside the rows it hands out first.

  Example:
    >>> index = KeyIndex(tf.int64, first=0, limit=100, capacity=100,
    ...                  name='items_index')
    >>> rows, _ = index.record(tf.constant([7, 9], tf.int64),
    ...                        tf.constant([1, 1], tf.int64), now=0,
    ...                        admit_after=1)
    >>> rows.numpy().tolist()
    [0, 1]

  Args:
    key_dtype: `tf.int64` or `tf.string`.
    first, limit: the rows `[first, limit)` that start on the free stack.
    capacity: the table's rows; the stack can hold all of them (rows a key
      of this shard frees return here, whichever range they are in).
    name: the prefix of the state's names.
    placement: a context manager placing the free-row variables (the
      strategy's colocation with the rows, under parameter servers).
    device: the device of the hash table (a CPU).
    dynamic: whether the stack can grow (`push`, `reserve`): a table with
      dynamic expansion.
  """

  def __init__(
    self,
    key_dtype,
    first,
    limit,
    capacity,
    name,
    placement,
    device,
    dynamic=False,
  ):
    self._capacity = capacity
    # Training's reads and writes of the state run where it lives: under
    # parameter servers a worker sends the keys and gets their rows back,
    # instead of fetching the entries, computing, and sending them back
    # while the table's lock is held (a profile of 26 exact tables counted
    # 2,200 operations a worker step before, 1,600 after). Only training's:
    # a device named in a serving signature would bind the exported model
    # to this cluster's task names.
    self._device = device
    with tf.device(device):
      self.table = tf.lookup.experimental.MutableHashTable(
        key_dtype,
        tf.int64,
        default_value=tf.constant(_ABSENT, tf.int64),
        name=name,
      )
    # Lowest row on top: keys get rows in order of admission.
    stack = tf.range(limit - 1, first - 1, -1, dtype=tf.int64)
    with placement:
      self.free = tf.Variable(
        tf.concat(
          [
            stack,
            tf.fill([capacity - (limit - first)], tf.constant(-1, tf.int64)),
          ],
          0,
        ),
        trainable=False,
        name=f'{name}_free',
        shape=tf.TensorShape([None]) if dynamic else None,
      )
      self.free_count = tf.Variable(
        tf.constant(limit - first, tf.int64),
        trainable=False,
        name=f'{name}_free_count',
      )

  @property
  def device(self):
    """The device the index's state lives on (a CPU of its task)."""
    return self._device

  def find(self, keys):
    """The row of each key, -1 for keys without one (unseen, not admitted)."""
    return self.entries(keys)[:, 0]

  def entries(self, keys):
    """int64 [N, 3]: each key's `[row, count, last_seen]` (absent: -1, 0, 0)."""
    return tf.reshape(self.table.lookup(keys), [-1, len(_ABSENT)])

  def _export(self):
    keys, entries = self.table.export()
    return (tf.reshape(keys, [-1]), tf.reshape(entries, [-1, len(_ABSENT)]))

  def record(self, keys, occurrences, now, admit_after, admitted=None):
    """Counts and stamps distinct keys; gives rows to the keys admitted now.

    A key is admitted when its count reaches `admit_after` and a row is free;
    with no row free it stays pending (and reads the default row) until an
    eviction frees one. The caller holds the index's lock. Most steps admit
    no key: the admission's work then does not run.

    Args:
      keys: [U] distinct keys.
      occurrences: int64 [U], how many times each was looked up.
      now: int64, the current step.
      admit_after: the count that admits a key.
      admitted: `admitted(rows) -> updates`, called (inside the admission's
        branch) with int64 [M] the rows just handed out; None for nothing.

    Returns:
      `(rows, updates)`: int64 [U] each key's row (-1 for keys not
      admitted), and the updates.
    """
    with tf.device(self._device):
      return self._record(keys, occurrences, now, admit_after, admitted)

  def _record(self, keys, occurrences, now, admit_after, admitted):
    entries = self.entries(keys)
    rows = entries[:, 0]
    counts = entries[:, 1] + tf.cast(occurrences, tf.int64)
    wanting = (rows < 0) & (counts >= admit_after)

    def admit():
      rank = tf.cumsum(tf.cast(wanting, tf.int64)) - 1
      top = self.free_count.read_value()
      granted = wanting & (rank < top)
      given = tf.gather(self.free, top - 1 - tf.boolean_mask(rank, granted))
      updates = [self.free_count.assign_sub(tf.size(given, out_type=tf.int64))]
      if admitted is not None:
        with tf.control_dependencies(control_ops(updates)):
          updates += admitted(given)
      with tf.control_dependencies(control_ops(updates)):
        return tf.tensor_scatter_nd_update(rows, tf.where(granted), given)

    rows = tf.cond(tf.reduce_any(wanting), admit, lambda: rows)
    stamps = tf.fill(tf.shape(rows), tf.cast(now, tf.int64))
    updates = [
      self.table.insert(keys, tf.stack([rows, counts, stamps], axis=1)),
    ]
    return rows, updates

  def sweep(self, now, evict_after):
    """Forgets the keys not looked up for `evict_after` steps; frees their rows.

    Pending keys (no row yet) are forgotten too: their counts start over.
    The caller holds the index's lock.

    Returns:
      `(freed, updates)`: int64, the number of rows freed, and the updates.
    """
    with tf.device(self._device):
      return self._sweep(now, evict_after)

  def _sweep(self, now, evict_after):
    keys, entries = self._export()
    stale = tf.cast(now, tf.int64) - entries[:, 2] >= evict_after
    # Lowest row on top, whatever order the hash table lists keys in: a
    # restored index (its keys inserted anew) frees rows in the same order.
    freed = tf.sort(
      tf.boolean_mask(entries[:, 0], stale & (entries[:, 0] >= 0)),
      direction='DESCENDING',
    )
    size = tf.size(freed, out_type=tf.int64)
    top = self.free_count.read_value()
    updates = [
      self.free.scatter_update(
        tf.IndexedSlices(freed, tf.range(top, top + size))
      ),
      self.free_count.assign_add(size),
      self.table.remove(tf.boolean_mask(keys, stale)),
    ]
    return size, updates

  def export(self):
    """(keys [K], entries [K, 3], free rows [F], bottom of the stack first)."""
    keys, entries = self._export()
    free = tf.gather(self.free, tf.range(self.free_count.read_value()))
    return keys, entries, free

  def load(self, keys, entries, free):
    """Replaces the whole state: these entries, this free stack (top last)."""
    old, _ = self._export()
    removed = self.table.remove(old)
    with tf.control_dependencies(control_ops([removed])):
      inserted = self.table.insert(keys, entries)
    size = tf.size(free, out_type=tf.int64)
    room = tf.shape(self.free, out_type=tf.int64)[0]
    padding = tf.fill([room - size], tf.constant(-1, tf.int64))
    return [
      inserted,
      self.free.assign(tf.concat([free, padding], 0)),
      self.free_count.assign(size),
    ]

  def push(self, rows):
    """Puts new rows on the stack (which grows), the lowest on top.

    Returns:
      The updates.
    """
    rows = tf.cast(rows, tf.int64)
    top = self.free_count.read_value()
    added = tf.size(rows, out_type=tf.int64)
    room = tf.shape(self.free, out_type=tf.int64)[0]
    stack = tf.concat(
      [self.free[:top], tf.reverse(rows, [0]), self.free[top:room]], 0
    )
    return [self.free.assign(stack), self.free_count.assign_add(added)]

  def reserve(self, size):
    """Makes the stack able to hold `size` rows (it only grows).

    Returns:
      The updates.
    """
    room = tf.shape(self.free, out_type=tf.int64)[0]
    more = tf.maximum(tf.cast(size, tf.int64) - room, 0)
    return [
      self.free.assign(
        tf.concat(
          [self.free.read_value(), tf.fill([more], tf.constant(-1, tf.int64))],
          0,
        )
      )
    ]

  def free_rows(self):
    """int64: how many rows wait on this shard's stack."""
    return self.free_count.read_value()


def control_ops(updates):
  """What control dependencies take of updates (nothing when eager)."""
  if tf.executing_eagerly():
    return []
  return [
    u if isinstance(u, tf.Operation) else u.op for u in updates if u is not None
  ]
