"""KeyedRows: an exact-key table as checkpoints hold it, by key.

A checkpoint of an exact-key table holds its keys with their entries
(`[row, count, last_seen]`), the free rows, and the vectors of the admitted
rows and of the default row, with the optimizer's slots of the same rows
(the tensorfx sparse optimizers leave those out of their own checkpoint).
Nothing in it has the table's capacity as a shape: a table restored with a
larger capacity keeps every key in its row, with its vector and slots, and
has the new rows free; one restored over another number of parameter
servers lays the keys out over its indexes.

Saving and restoring run eagerly, or inside a `tf.function` when the
checkpoint spans several tasks (parameter servers): TensorFlow ops only.
"""

import tensorflow as tf

from tensorfx.embeddings import _expansion
from tensorfx.embeddings import _index
from tensorfx.embeddings import _sharding

_SLOT = 'slot_'


class KeyedRows(tf.__internal__.tracking.Trackable):
  """The checkpointed state of an exact-key `EmbeddingTable`.

  Args:
    table: the `EmbeddingTable`.
    keys: its `ExactKeys`.
  """

  def __init__(self, table, keys):
    self._table = table
    self._keys = keys

  def _slots(self):
    """[(name, slot shards)] of the table's optimizer, when it has them."""
    optimizer = self._table.optimizer
    if not hasattr(optimizer, 'slot_shards'):
      return []
    return optimizer.slot_shards(self._table.embeddings)

  def _serialize_to_tensors(self):
    table = self._table
    keys, entries, free = self._keys.export()
    rows = entries[:, 0]
    held = tf.concat(
      [
        tf.boolean_mask(rows, rows >= 0),
        tf.constant([table.default_row], tf.int64),
      ],
      0,
    )
    tensors = {
      'keys': keys,
      'entries': entries,
      'free': free,
      'vectors': _sharding.gather(table.embeddings, held),
    }
    for name, shards in self._slots():
      tensors[_SLOT + name] = _sharding.gather(shards, held)
    return tensors

  def _restore_from_tensors(self, restored_tensors):
    table = self._table
    # Inside a tf.function (a checkpoint over several tasks) the tensors
    # read have no static shape.
    restored = {
      name: tf.reshape(value, [-1, table.dim])
      for name, value in restored_tensors.items()
      if name == 'vectors' or name.startswith(_SLOT)
    }
    updates, held = lay_out(
      table,
      self._keys,
      tf.reshape(restored_tensors['keys'], [-1]),
      tf.reshape(restored_tensors['entries'], [-1, 3]),
      tf.reshape(restored_tensors['free'], [-1]),
    )
    targets = tf.concat([held, tf.constant([table.default_row], tf.int64)], 0)
    updates += _sharding.scatter_update(
      table.embeddings, targets, restored['vectors']
    )
    for name, shards in self._slots():
      if _SLOT + name in restored:
        updates += _sharding.scatter_update(
          shards, targets, restored[_SLOT + name]
        )
    if tf.executing_eagerly():
      return None
    return tf.group(
      *[u if isinstance(u, tf.Operation) else u.op for u in updates]
    )


def lay_out(table, keys_mode, keys, entries, free):
  """Lays a checkpoint's keys and free rows out over this table's indexes.

  Admitted keys keep their rows where those are their index's shard's;
  the others (a checkpoint of another number of servers) move to rows of
  their index's shard, so that every index hands out and writes only
  rows on its own server. The rows a checkpoint does not know (a larger
  capacity) go under the saved free rows of their range.

  Returns:
    `(updates, held)`: the updates, and int64 [A] the rows of the admitted
    keys in the order of `entries` (the order of the saved vectors).
  """
  if table.dynamic_expansion:
    return _lay_out_grown(table, keys_mode, keys, entries, free)
  capacity = table.capacity
  rows = entries[:, 0]
  highest = tf.reduce_max(tf.concat([rows, [-1]], 0))
  check = tf.debugging.assert_less(
    highest,
    tf.constant(capacity, tf.int64),
    message=(
      f'EmbeddingTable {table.name!r}: the checkpoint has keys in rows '
      f'at or above capacity={capacity}; a table can grow, not shrink '
      'below the rows in use. Restore it with the capacity it was '
      'saved with or a larger one'
    ),
  )
  with tf.control_dependencies(_index.control_ops([check])):
    admitted = rows >= 0
  owner = keys_mode.route(keys) if len(keys_mode.indexes) > 1 else None
  # A key keeps its row when the row is its index's shard's; a checkpoint
  # laid out over other servers has keys whose rows are not, and those
  # move to a row of their index's own (the vectors follow, by key).
  misplaced = tf.zeros_like(admitted)
  if owner is not None:
    firsts = tf.constant([r[0] for r in keys_mode.ranges], tf.int64)
    limits = tf.constant([r[1] for r in keys_mode.ranges], tf.int64)
    misplaced = admitted & (
      (rows < tf.gather(firsts, owner)) | (rows >= tf.gather(limits, owner))
    )
  kept = tf.boolean_mask(rows, admitted & ~misplaced)
  free = tf.boolean_mask(free, (free >= 0) & (free < capacity))
  marks = tf.zeros([capacity], tf.int32)
  owned = tf.tensor_scatter_nd_add(
    marks, kept[:, None], tf.ones_like(kept, tf.int32)
  )
  listed = tf.tensor_scatter_nd_add(
    marks, free[:, None], tf.ones_like(free, tf.int32)
  )
  fresh = (owned == 0) & (listed == 0)
  updates = []
  placed = rows
  for i, (index, (first, limit)) in enumerate(
    zip(keys_mode.indexes, keys_mode.ranges)
  ):
    new = tf.where(fresh[first:limit])[:, 0] + first
    saved = tf.boolean_mask(free, (free >= first) & (free < limit))
    stack = tf.concat([tf.reverse(new, [0]), saved], 0)
    if owner is None:
      updates += index.load(keys, entries, stack)
      continue
    mine = tf.equal(owner, i)
    moving = tf.where(mine & misplaced)[:, 0]
    count = tf.size(moving, out_type=tf.int64)
    size = tf.size(stack, out_type=tf.int64)
    check = tf.debugging.assert_less_equal(
      count,
      size,
      message=(
        f'EmbeddingTable {table.name!r}: the checkpoint holds more keys of '
        f'index {i} (the keys on parameter server shard {i}) than its '
        f'{limit - first} rows; restore it with a larger capacity'
      ),
    )
    with tf.control_dependencies(_index.control_ops([check])):
      # The moving keys take rows from the top of the stack.
      given = tf.reverse(stack[size - count :], [0])
      stack = stack[: size - count]
    placed = tf.tensor_scatter_nd_update(placed, moving[:, None], given)
    mine_entries = tf.concat(
      [
        tf.boolean_mask(placed, mine)[:, None],
        tf.boolean_mask(entries[:, 1:], mine),
      ],
      1,
    )
    updates += index.load(tf.boolean_mask(keys, mine), mine_entries, stack)
  return updates, tf.boolean_mask(placed, admitted)


def _lay_out_grown(table, keys_mode, keys, entries, free):
  """`load` of a table with dynamic expansion: it grows to the saved rows.

  Rows keep their numbers (the default row is the starting capacity's);
  the rows past those the checkpoint knows go under its free rows.
  """
  rows = entries[:, 0]
  held = tf.boolean_mask(rows, rows >= 0)
  free = tf.boolean_mask(free, free >= 0)
  highest = tf.reduce_max(tf.concat([held, free, [table.default_row]], 0))
  updates = _expansion.grow_to(table, keys_mode, highest + 1)
  with tf.control_dependencies(_index.control_ops(updates)):
    total = _expansion.total_rows(table)
  marks = tf.zeros(tf.reshape(total, [1]), tf.int32)
  taken = tf.concat([held, free, [table.default_row]], 0)
  marks = tf.tensor_scatter_nd_add(
    marks, taken[:, None], tf.ones_like(taken, tf.int32)
  )
  new = tf.where(tf.equal(marks, 0))[:, 0]
  stack = tf.concat([tf.reverse(new, [0]), free], 0)
  with tf.control_dependencies(_index.control_ops(updates)):
    updates += keys_mode.indexes[0].load(keys, entries, stack)
  return updates, held
