"""Bad records: the count of skipped records, in the log and TensorBoard."""

from tensorfx._logging import logger
from tensorfx.training._callbacks import base


class BadRecordsCallback(base.Callback):
  """Reports the records `--skip-bad-records` skipped, as the count grows.

  Each source's count is logged and written to `summaries/SOURCE` (as
  `bad_records`) when it has changed, at each log interval and
  validation; the total is logged once at the end.
  """

  def __init__(self):
    super().__init__()
    self._reported = {}

  def on_step_end(self, step, logs):
    self._report(step)

  def on_evaluate_end(self, step, results):
    self._report(step)

  def on_train_end(self, logs):
    step = logs.get('step')
    if step is not None and logs.get('status') != 'failed':
      self._report(step)
    bad = self.counts()
    if bad and self.context.chief:
      logger.warning(
        'Skipped bad records: %s',
        ', '.join(f'{count} of {name}' for name, count in bad.items()),
      )

  def counts(self):
    """The bad records skipped so far, by source (sources with any)."""
    return {
      name: count
      for name, count in self.context.builder.dataset.bad_records().items()
      if count
    }

  def _report(self, step):
    summaries = self.context.summaries
    for name, count in self.context.builder.dataset.bad_records().items():
      if count != self._reported.get(name, 0):
        logger.warning(
          'Skipped %d bad records of %s so far (step %d)', count, name, step
        )
        summaries.scalars(name, step, {'bad_records': count})
        self._reported[name] = count
