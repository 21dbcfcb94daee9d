"""Exact-key embedding tables' fill, in TensorBoard and the log."""

from typing import Any

from tensorfx._logging import logger
from tensorfx.embeddings import _table
from tensorfx.training._callbacks import base


class TableFillCallback(base.Callback):
  """Shows how full each exact-key table is; logs each growth.

  At each log interval, on the chief, writes `embeddings/NAME/fill` (the
  share of its key rows that keys hold), `embeddings/NAME/live_rows` and
  `embeddings/NAME/capacity` to `summaries/train`. A table with dynamic
  expansion that grew since the last interval is logged with its old
  and new capacity.
  """

  def __init__(self) -> None:
    super().__init__()
    self._capacity: dict[str, int] = {}
    self._tables: Any = None

  def _exact_tables(self) -> Any:
    if self._tables is None:
      self._tables = [t for t in _table.find_tables(self.context.builder)
                      if t.hashing == 'exact' and t.built]
    return self._tables

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    for table in self._exact_tables():
      self._capacity[table.name] = table.current_capacity()

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    if not self.context.chief:
      return
    values = {}
    for table in self._exact_tables():
      capacity = table.current_capacity()
      live = int(table.live_rows())
      before = self._capacity.get(table.name, table.capacity)
      if capacity != before:
        logger.info('EmbeddingTable %r grew from %d to %d rows (by step %d, '
                    '%d keys held; dynamic expansion)', table.name, before,
                    capacity, step, live)
      self._capacity[table.name] = capacity
      values[f'embeddings/{table.name}/fill'] = live / max(capacity, 1)
      values[f'embeddings/{table.name}/live_rows'] = float(live)
      values[f'embeddings/{table.name}/capacity'] = float(capacity)
    if values:
      self.context.summaries.scalars('train', step, values)
