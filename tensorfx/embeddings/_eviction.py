"""The eviction schedule of an `EmbeddingTable`: its clock and its sweeps.

Training lookups stamp the keys (hashed: rows) they read with the table's
clock: the step of its step counter (`evict_after_steps`), or the wall
clock's second (`evict_after_secs`, mxRec's `eviction_threshold`). The
stamps are variables (an exact table's index entries), so checkpoints
keep them. A sweep reads every stamp, so it runs only when due: from a
training lookup once the clock reaches `next_sweep`, then `evict_every_steps`
(or `evict_every_secs`) later; `evicted` counts the rows sweeps reset or
freed.
The key mode (`_hashed.py`, `_exact.py`) finds and evicts the stale keys.
"""

import weakref

import tensorflow as tf

from tensorfx._errors import ConfigurationError

# Per graph being traced: {id(step counter): (counter, its value read)}.
_READS: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()


class Eviction:
  """When an `EmbeddingTable` with `evict_after_steps` (or `_secs`) sweeps.

  The table owns the variables (`table.next_sweep`, `table.evicted`), so
  that they are checkpointed and exported with it under their usual names.

  Args:
    table: the `EmbeddingTable`.
    keys: its key mode (`HashedKeys` or `ExactKeys`), which sweeps.
    every: steps (or seconds) between sweeps (`evict_every_steps`,
      `evict_every_secs`).
  """

  def __init__(self, table, keys, every):
    self._table = table
    self._keys = keys
    self._every = every

  def build(self):
    """Makes the schedule's variables, in the table's name scope."""
    table = self._table
    table.next_sweep = tf.Variable(
      tf.constant(self._every, tf.int64), trainable=False, name='next_sweep'
    )
    table.evicted = tf.Variable(
      tf.constant(0, tf.int64), trainable=False, name='evicted'
    )

  def now(self):
    """The clock of the stamps: the step counter, or the wall clock's second."""
    table = self._table
    if table.eviction_clock == 'seconds':
      if _determinism_enabled():
        raise ConfigurationError(
          f'EmbeddingTable {table.name!r} evicts after '
          f'evict_after_secs={table.evict_after_secs} seconds of wall-clock '
          'time, which TensorFlow does not read while op determinism is on '
          '(--seed turns it on): evict by evict_after_steps, or train '
          'without --seed.'
        )
      return tf.cast(tf.math.floor(tf.timestamp()), tf.int64)
    counter = table.step_counter
    if counter is None:
      raise ConfigurationError(
        f'EmbeddingTable {table.name!r} evicts rows after '
        f'evict_after_steps={table.evict_after_steps} steps, so its '
        'training lookups need a clock: pass step_counter= (an int64 '
        'variable counting steps), or train it from a ModelBuilder, which '
        'binds its global step. Received: step_counter=None'
      )
    if tf.executing_eagerly():
      return tf.cast(tf.convert_to_tensor(counter), tf.int64)
    # In a step's graph every table reads the clock once, together: the
    # step counter is a variable (on a parameter server, a round trip a
    # read), and it does not move within a step.
    reads = _READS.setdefault(tf.compat.v1.get_default_graph(), {})
    if id(counter) not in reads:
      reads[id(counter)] = (
        counter,
        tf.cast(tf.convert_to_tensor(counter), tf.int64),
      )
    return reads[id(counter)][1]

  def sweep_if_due(self):
    """Evicts when a sweep is due (training lookups call it)."""
    table = self._table
    if table.eviction_threshold is None:
      return
    now = self.now()
    due = now >= tf.convert_to_tensor(table.next_sweep)
    tf.cond(due, lambda: table.evict(now), lambda: tf.constant(0, tf.int64))

  def sweep(self, now=None):
    """Sweeps at `now` (default: the clock) and schedules the next sweep.

    Returns:
      int64: the number of rows reset (hashed) or freed (exact).
    """
    table = self._table
    now = self.now() if now is None else tf.cast(now, tf.int64)
    size = self._keys.sweep(now)
    table.next_sweep.assign(now + self._every)
    table.evicted.assign_add(size)
    return size


def _determinism_enabled():
  from tensorflow.python.framework import config

  return config.is_op_determinism_enabled()
