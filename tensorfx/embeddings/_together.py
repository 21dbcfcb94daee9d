"""Lookups of several tables together: one call per parameter server.

A model with many exact-key tables looks each up in a step; alone, each
lookup is one call per index (see `_exact`). `lookup_tables` records the
keys of every table's index on a server in one call to that server, under
all their locks, and then reads each table's rows as its own lookup does.
"""

import tensorflow as tf

from tensorfx.embeddings import _combine


def lookup_tables(lookups, training=False):
  """Looks several tables up in one step, their index calls batched.

  The same vectors as each table's `lookup`; under parameter servers the
  training lookups of exact-key tables send each server one call (their
  keys in, their rows out) instead of one per table. Elsewhere, and for
  hashed tables, it is each table's `lookup`.

  Example:
    >>> item, user = embeddings.lookup_tables(
    ...     [(items, features['item']), (users, features['user'], 'mean')],
    ...     training=True)

  Args:
    lookups: `(table, keys)` or `(table, keys, combiner)` tuples; the keys
      as `EmbeddingTable.lookup` takes them.
    training: whether this is a training step's lookup.

  Returns:
    A list of float32 [B, dim] tensors, one per lookup, in order.
  """
  prepared = []
  for lookup in lookups:
    table, keys, combiner = (tuple(lookup) + (None,))[:3]
    prepared.append(table.prepare_lookup(keys, combiner, training))
  plans = [p.plan for p in prepared if p.plan is not None]
  rows = iter(record_together(plans) if plans else [])
  return [
    p.finish(next(rows) if p.plan is not None else None) for p in prepared
  ]


class Plan:
  """Distinct keys of one exact-key table, split over its indexes.

  What `record_together` records (one call per server); `finish` makes a
  training lookup's rows from the rows it gets back.

  Args:
    keys_mode: the table's `ExactKeys`.
    table: the `EmbeddingTable`.
    now: int64, the table's clock.
    unique: int64 or string [U] distinct keys.
    occurrences: int64 [U] how many times each was looked up.
    position: int64 [N] each looked-up key's place in `unique` (for
      `finish`; None when only the distinct keys' rows are wanted).
  """

  def __init__(self, keys_mode, table, now, unique, occurrences, position=None):
    self.mode = keys_mode
    self._table = table
    # The order locks are taken in, the same in every process.
    self.name = table.name
    self.now = now
    self._position = position
    count = len(keys_mode.indexes)
    if count == 1:
      self.parts = [(0, unique, occurrences)]
      self._stitch = None
      return
    owner = keys_mode.route(unique)
    keys_parts = tf.dynamic_partition(unique, owner, count)
    seen_parts = tf.dynamic_partition(occurrences, owner, count)
    self._stitch = tf.dynamic_partition(
      tf.range(tf.size(unique, out_type=tf.int32)), owner, count
    )
    self.parts = [(i, keys_parts[i], seen_parts[i]) for i in range(count)]

  def stitch(self, rows):
    """The distinct keys' rows, from each part's (in the order of `parts`)."""
    if self._stitch is None:
      return rows[0]
    return tf.dynamic_stitch(self._stitch, rows)

  def finish(self, rows):
    """A training lookup's rows to read, from each part's rows."""
    rows = self.stitch(rows)
    self.mode.eviction.sweep_if_due()
    rows = tf.gather(rows, self._position)
    return tf.where(
      rows >= 0, rows, tf.constant(self._table.default_row, tf.int64)
    )


class Prepared:
  """A lookup of one table, its keys checked, ready to read its rows.

  `EmbeddingTable.prepare_lookup` makes it; `plan` is the training lookup
  of exact keys that `record_together` records with others (None when the
  lookup reads its rows alone).
  """

  def __init__(self, keys_mode, embeddings, keys, bag, combiner, training):
    self.keys_mode = keys_mode
    self.embeddings = embeddings
    self.keys = keys
    self.bag = bag
    self.combiner = combiner
    self.training = training
    self.plan = (
      keys_mode.plan(keys)
      if keys_mode.exact and keys_mode.batchable(training)
      else None
    )

  def finish(self, rows=None):
    """The vectors looked up; `rows`: the plan's, from `record_together`."""
    if self.plan is not None:
      if rows is None:
        (rows,) = record_together([self.plan])
      rows = self.plan.finish(rows)
    else:
      rows = self.keys_mode.lookup_rows(self.keys, self.training)
    vectors = tf.nn.embedding_lookup(self.embeddings, rows)
    if self.bag is None:
      return vectors
    return _combine.combine(
      vectors, self.bag.value_rowids(), self.bag.nrows(), self.combiner
    )


def record_together(plans):
  """Records the plans' keys: one call per server, all its indexes locked.

  Under parameter servers a step that looks up many exact-key tables sends
  each server one call with the keys of every table's index there, and
  gets back their rows: the indexes' locks are taken together, in one
  order (their tables' names, then indexes') so that calls never wait on
  each other in a cycle.

  Args:
    plans: `Plan`s (see `ExactKeys.plan`).

  Returns:
    A list per plan of its parts' rows.
  """
  by_device: dict[str, list] = {}
  for p, plan in enumerate(plans):
    for j, (i, keys, seen) in enumerate(plan.parts):
      device = plan.mode.indexes[i].device
      by_device.setdefault(device, []).append((p, j, i, keys, seen))
  results = [[None] * len(plan.parts) for plan in plans]
  for device, items in by_device.items():
    items.sort(key=lambda item: (plans[item[0]].name, item[2]))
    # Each lock once, however many lookups of its table the step has (a
    # lock taken inside itself would wait for ever).
    locks = list(
      {
        id(lock): lock
        for lock in (plans[p].mode.locks[i] for p, _, i, _, _ in items)
      }.values()
    )

    def call(flat, items=items, locks=locks):
      def locked(at):
        if at == len(locks):
          # One index's records run in this order (automatic control
          # dependencies): a later lookup sees the keys an earlier one
          # admitted, as two lookups one after the other do.
          return [
            plans[p].mode.record_locked(
              i, flat[2 * k], flat[2 * k + 1], plans[p].now
            )
            for k, (p, _, i, _, _) in enumerate(items)
          ]
        return locks[at].execute(
          lambda: locked(at + 1), exclusive_resource_access=False
        )

      return locked(0)

    flat = [t for _, _, _, keys, seen in items for t in (keys, seen)]
    with tf.device(device):
      # In a graph (a step, a closure) the call is one function call
      # placed on the server: the keys go in and the rows come out, and the
      # locks, the indexes and the rows' writes stay there. Made per graph,
      # when the optimizer's slots it clears exist.
      rows = (
        call(flat)
        if tf.executing_eagerly()
        else tf.function(call, autograph=False)(flat)
      )
    for (p, j, _, _, _), part_rows in zip(items, rows):
      results[p][j] = part_rows
  return results
