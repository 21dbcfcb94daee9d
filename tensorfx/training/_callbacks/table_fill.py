"""Exact-key embedding tables' fill, in TensorBoard and the log; growth."""

import json
import os
from typing import Any

import tensorflow as tf

from tensorfx import _atomic
from tensorfx import embeddings
from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.training._callbacks import base

# The exit code of a stop after which the chief restarts in place instead
# of exiting (an embedding table grows under parameter servers).
RESTART_EXIT_CODE = 75


class TableFillCallback(base.Callback):
  """Shows how full each exact-key table is; logs each growth.

  At each log interval, on the chief, writes `embeddings/NAME/fill` (the
  share of its key rows that keys hold), `embeddings/NAME/live_rows` and
  `embeddings/NAME/capacity` to `summaries/train`. A table with dynamic
  expansion that grew since the last interval is logged with its old
  and new capacity.

  Under parameter servers a table cannot grow inside a step: at a log
  interval where a table with dynamic expansion is fuller than its
  threshold, the callback records its doubled rows in
  `checkpoints/grown_tables.json` and stops the run to restart the chief
  in place; the restarted chief makes the table with those rows and
  restores it by key (every row, vector and slot), re-sharded.
  """

  def __init__(self) -> None:
    super().__init__()
    self._capacity: dict[str, int] = {}
    self._tables: Any = None

  def _exact_tables(self) -> Any:
    if self._tables is None:
      self._tables = [
        t
        for t in embeddings.find_tables(self.context.builder)
        if t.hashing == 'exact' and t.built
      ]
    return self._tables

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    for table in self._exact_tables():
      self._capacity[table.name] = table.current_capacity()

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    if not self.context.chief:
      return
    values = {}
    full = []
    for table in self._exact_tables():
      capacity = table.current_capacity()
      live = int(table.live_rows())
      before = self._capacity.get(table.name, table.capacity)
      if capacity != before:
        logger.info(
          'EmbeddingTable %r grew from %d to %d rows (by step %d, '
          '%d keys held; dynamic expansion)',
          table.name,
          before,
          capacity,
          step,
          live,
        )
      self._capacity[table.name] = capacity
      values[f'embeddings/{table.name}/fill'] = live / max(capacity, 1)
      values[f'embeddings/{table.name}/live_rows'] = float(live)
      values[f'embeddings/{table.name}/capacity'] = float(capacity)
      if (
        table.dynamic_expansion
        and not table.grows_in_step
        and live > table.expansion_threshold * capacity
      ):
        full.append((table, live, capacity))
    if values:
      self.context.summaries.scalars('train', step, values)
    if full and not self.context.stop_requested:
      self._grow_by_restart(step, full)

  def _grow_by_restart(self, step: int, full: list[Any]) -> None:
    path = self.context.paths['grown_tables']
    rows = grown_rows(path)
    for table, live, capacity in full:
      rows[table.name] = 2 * capacity + 1
      table.expansions.assign_add(1)
      logger.info(
        'EmbeddingTable %r holds %d of its %d rows at step %d (more than '
        '%g of them): it grows to %d rows. Under parameter servers the '
        'chief saves a checkpoint and restarts in place to make it; the '
        'other tasks wait.',
        table.name,
        live,
        capacity,
        step,
        table.expansion_threshold,
        2 * capacity,
      )
    tf.io.gfile.makedirs(os.path.dirname(path))
    _atomic.write_text(path, json.dumps(rows, indent=2, sort_keys=True) + '\n')
    self.context.stop(
      'embedding tables grow: ' + ', '.join(t.name for t, _, _ in full),
      exit_code=RESTART_EXIT_CODE,
    )


def grown_rows(path: str) -> dict[str, int]:
  """The rows each grown table starts with, from `grown_tables.json`.

  Example:
    >>> grown_rows('/tmp/job/checkpoints/grown_tables.json')
    {'item': 129}

  Raises:
    ConfigurationError: the file is not a JSON object of row counts.
  """
  if not tf.io.gfile.exists(path):
    return {}
  with tf.io.gfile.GFile(path) as f:
    text = f.read()
  try:
    rows = json.loads(text)
  except ValueError as e:
    rows = e
  if not isinstance(rows, dict) or not all(
    isinstance(v, int) and not isinstance(v, bool) and v > 0
    for v in rows.values()
  ):
    raise ConfigurationError(
      f'{path} must map each grown embedding table to its rows, e.g. '
      '{"item": 129} (tensorfx writes it when a table grows under '
      'parameter servers). Delete it only with the checkpoints beside it. '
      f'Received: {text[:200]!r}'
    )
  return rows
