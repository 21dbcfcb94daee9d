"""Dynamic expansion: an exact-key table that grows while it trains.

mxRec's `use_dynamic_expansion` lets a table take more keys than it
started with, without a restart. An exact-key table with
`dynamic_expansion=True` keeps its rows (and its optimizer's slots, and
its free-row stack) in variables whose first dimension is not fixed.
When a training lookup leaves more than `expansion_threshold` of its key
rows held, the same step appends as many rows again (the capacity
doubles): the new rows go on the free stack, their slots start at the
optimizer's initial values, and nothing already there moves. The default
row stays where it was (row `capacity`, the starting capacity); rows
past it are key rows like those before it.

Growing is a few assignments inside the training step, under the table's
lock, so it needs no retracing and no pause. A checkpoint holds the table
by key (see `KeyedRows`); restoring one grows the table to the rows the
checkpoint used, so a restarted job continues with the grown table.
`expansions` counts the growths (checkpointed); `current_capacity()`
reads the capacity now.

Under parameter servers a variable's shape must be fully known (remote
execution aborts the server on one that is not), so a table there cannot
grow inside a step. It keeps the same row layout in a variable of fixed
rows, which the chief grows between steps: it records the table's new
rows (`start_rows`), saves a checkpoint and restarts in place, and the
restarted chief makes the table with those rows and restores it by key,
as a restart with a larger capacity does (see `TableFillCallback`).
"""

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

# The share of key rows held past which a table grows, by default.
EXPANSION_THRESHOLD = 0.8

# The rows (key rows + default) each table with dynamic expansion starts
# with under parameter servers, by name, when a run grew it (set by the
# engine before the variables are made, from the job's record).
_START_ROWS: dict[str, int] = {}


def start_rows(rows: Mapping[str, int]) -> None:
  """Sets the rows tables grown by an earlier run of the job start with.

  Example:
    >>> start_rows({'items': 2 * 64 + 1})   # 'items' doubled once
  """
  _START_ROWS.clear()
  _START_ROWS.update({str(k): int(v) for k, v in rows.items()})


def rows_to_build(table: Any) -> int:
  """The rows of a table's variable when it is made: at least capacity + 1."""
  return max(table.capacity + 1, _START_ROWS.get(table.name, 0))


def total_rows(table: Any) -> tf.Tensor:
  """int64: the rows of the table's variable now (key rows + default)."""
  return tf.cast(tf.shape(table.embeddings)[0], tf.int64)


def key_capacity(table: Any) -> tf.Tensor:
  """int64: the rows keys can hold now."""
  return total_rows(table) - 1


def extend(table: Any, added: tf.Tensor) -> list[Any]:
  """Appends `added` rows to the table's variable and its slots.

  The new rows are zeros (an exact table's rows get their values when a key
  is admitted to them); their slots hold the optimizer's initial values.

  Returns:
    The updates (for control dependencies).
  """
  added = tf.cast(added, tf.int64)
  embeddings = table.embeddings
  updates = [
    embeddings.assign(
      tf.concat(
        [
          embeddings.read_value(),
          tf.zeros(
            tf.stack([added, tf.constant(table.dim, tf.int64)]),
            embeddings.dtype,
          ),
        ],
        0,
      )
    )
  ]
  optimizer = table.optimizer
  if hasattr(optimizer, 'grow_slots'):
    updates += optimizer.grow_slots(embeddings, added)
  return updates


def grow_if_full(table: Any, keys: Any, threshold: float) -> tf.Tensor:
  """Doubles the key rows when more than `threshold` of them are held.

  Runs under the index's lock (from a training lookup), after the step's
  keys got their rows.

  Returns:
    int64: the rows added (0 when the table was not full enough).
  """
  capacity = key_capacity(table)
  held = capacity - tf.add_n([index.free_rows() for index in keys.indexes])
  full = tf.cast(held, tf.float64) > threshold * tf.cast(capacity, tf.float64)

  def grow():
    first = total_rows(table)
    updates = extend(table, capacity)
    with tf.control_dependencies(_ops(updates)):
      new_rows = tf.range(first, first + capacity, dtype=tf.int64)
      updates = keys.indexes[0].push(new_rows)
      updates.append(table.expansions.assign_add(1))
    with tf.control_dependencies(_ops(updates)):
      return tf.identity(capacity)

  return tf.cond(full, grow, lambda: tf.constant(0, tf.int64))


def grow_to(table: Any, keys: Any, rows: tf.Tensor) -> list[Any]:
  """Grows the variable (not the free stack) to at least `rows` rows.

  What a restore does before laying a checkpoint's keys out: their rows
  may lie past the rows the table starts with. A table of fixed rows
  (under parameter servers) was made with the rows its job grew it to; a
  checkpoint with rows past them is refused by name.
  """
  if not table.grows_in_step:
    check = tf.debugging.assert_less_equal(
      tf.cast(rows, tf.int64),
      total_rows(table),
      message=(
        f'EmbeddingTable {table.name!r}: the checkpoint has keys in rows '
        'past the rows this table was made with; the record of its '
        'growth (checkpoints/grown_tables.json) is missing or older '
        'than the checkpoint. Restore it with that record, or give the '
        'table a capacity at least as large as the rows in use'
      ),
    )
    return [check]
  added = tf.maximum(tf.cast(rows, tf.int64) - total_rows(table), 0)
  updates = extend(table, added)
  with tf.control_dependencies(_ops(updates)):
    updates += keys.indexes[0].reserve(key_capacity(table))
  return updates


def _ops(updates: list[Any]) -> list[Any]:
  if tf.executing_eagerly():
    return []
  return [
    u if isinstance(u, tf.Operation) else u.op for u in updates if u is not None
  ]
