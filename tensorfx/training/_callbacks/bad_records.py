"""Bad records: the count of skipped records, in the log and TensorBoard."""

from typing import Any

from tensorfx import _logging
from tensorfx._logging import logger
from tensorfx.training._callbacks import base


class BadRecordsCallback(base.Callback):
  """Reports the records `--skip-bad-records` skipped, as the count grows.

  Each source's count is logged and written to `summaries/SOURCE` (as
  `bad_records`) when it has changed, at each log interval and
  validation; the total is logged once at the end.
  """

  def __init__(self) -> None:
    super().__init__()
    self._reported: dict[str, int] = {}

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    self._report(step)

  def on_evaluate_end(self, step: int, results: Any) -> None:
    self._report(step)

  def on_train_end(self, logs: dict[str, Any]) -> None:
    step = logs.get('step')
    if step is not None and logs.get('status') != 'failed':
      self._report(step)
    bad = self.counts()
    if bad and self.context.chief:
      logger.warning(
        'Skipped bad records: %s',
        ', '.join(f'{count} of {name}' for name, count in bad.items()),
      )

  def counts(self) -> dict[str, int]:
    """The bad records skipped so far, by source (sources with any)."""
    return {
      name: count
      for name, count in self.context.builder.dataset.bad_records().items()
      if count
    }

  def _report(self, step: int) -> None:
    summaries = self.context.summaries
    for name, count in self.context.builder.dataset.bad_records().items():
      if count != self._reported.get(name, 0):
        logger.warning(
          'Skipped %s of %s so far (step %d)',
          _logging.counted(count, 'bad record'),
          name,
          step,
        )
        summaries.scalars(name, step, {'bad_records': count})
        self._reported[name] = count
