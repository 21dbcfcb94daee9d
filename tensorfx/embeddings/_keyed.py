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
    updates, held = self._keys.load(
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
