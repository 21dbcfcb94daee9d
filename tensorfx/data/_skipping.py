"""Sources that can drop bad records instead of failing, and count them.

CSV and TFRecord sources share it: the `skip_bad_records` option, the
count of records their `read()` pipelines dropped (kept per source, safe
across tf.data's threads) and how many of them are logged.
"""

import threading
from typing import Self

from tensorfx._errors import DataError
from tensorfx.data._dataset import DataSource

# Bad records a reader logs one by one (per source, per range of a file in
# the analysis, per batch prediction) before only counting them.
LOGGED_BAD_RECORDS = 10


class SkippingSource(DataSource):
  """A `DataSource` whose `read()` may drop bad records and count them.

  Example:
    >>> source = CsvDataSource('data/train.csv', schema,
    ...                        skip_bad_records=True)
    >>> source.bad_records
    0

  Args:
    paths: the source's paths.
    schema: its `Schema`, or None until a `DataSet` binds it.
    skip_bad_records: whether bad records are dropped (and counted in
      `bad_records`, and in the analysis log) instead of failing the job.
  """

  supports_skipping = True

  def __init__(self, paths, schema=None, skip_bad_records=False):
    super().__init__(paths, schema)
    if not isinstance(skip_bad_records, bool):
      raise DataError(
        'skip_bad_records must be True or False. Received: '
        f'skip_bad_records={skip_bad_records!r}'
      )
    self._counting = False
    self._bad_records = 0
    self._lock = threading.Lock()
    if skip_bad_records:
      self.enable_skipping()

  def bind(self, schema):
    source: Self = super().bind(schema)
    if source is not self:
      # Counts and locks are the new source's own.
      source._bad_records = 0
      source._lock = threading.Lock()
    return source

  def enable_skipping(self, count=True):
    """Makes `read()` drop bad records instead of failing.

    Args:
      count: whether to count (and log the first few of) the dropped
        records, from Python. Pipelines that run in another process (the
        workers of a parameter-server cluster) cannot call back into this
        one: they read with `count=False` and drop bad records uncounted.
    """
    self.skip_bad_records = True
    self._counting = count

  @property
  def bad_records(self):
    """How many bad records the `read()` pipelines of this source skipped.

    Counted as batches are read (so far, not in the whole data); always 0
    unless `skip_bad_records`.
    """
    return self._bad_records

  def _count_bad(self, count):
    """Counts `count` more dropped records; returns how many to log."""
    with self._lock:
      first = self._bad_records
      self._bad_records += count
    return max(0, min(count, LOGGED_BAD_RECORDS - first))
