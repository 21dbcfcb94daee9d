"""What a training job's data error adds: the flag or option past it.

A bad CSV row fails training with a `DataError` naming its file and line,
as prediction's do; training adds how to go on, as prediction does: a bad
first line that names the schema's fields is a header read as data (the
dataset's `header=True` reads the columns by it, `skip_header=True` skips
it); any other row can be skipped and counted (`--skip-bad-records`).
"""

import re
from typing import Any, Optional

from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx.data import CsvDataSource
from tensorfx.data import _csvheader

# 'FILE:LINE: reason', as a CSV source's errors name a row.
_ROW = re.compile(r'^(?P<path>.+?):(?P<line>[0-9]+): ')

SKIP_BAD_RECORDS = '--skip-bad-records skips and counts such records'
HEADER = (
  'line 1 looks like a header: CsvDataSet(..., header=True) in the trainer '
  'reads the columns by it, skip_header=True skips it; tensorfx analyze: '
  '--header, --skip-header'
)


def hinted(error: DataError, builder: Any) -> DataError:
  """`error` with the hint for its row added; `error` itself without one.

  Args:
    error: the training job's data error.
    builder: the job's `ModelBuilder`: its dataset, and whether bad records
      are skipped already (`--skip-bad-records`).
  """
  message = str(error)
  match = _ROW.match(message)
  if not match or '--skip-bad-records' in message:
    return error
  try:
    dataset = builder.dataset
  except ConfigurationError:  # No dataset: the error is not about its rows.
    return error
  source = _csv_source_of(dataset, match['path'])
  if source is None or builder.settings.data.skip_bad_records:
    return error
  header = (
    match['line'] == '1'
    and not source.skip_header
    and _csvheader.looks_like_header(
      match['path'], source.schema, source.delimiter
    )
  )
  return DataError(f'{message} ({HEADER if header else SKIP_BAD_RECORDS})')


def _csv_source_of(dataset: Any, path: str) -> Optional[Any]:
  """The CSV source of `dataset` that reads file `path`, or None."""
  for name in dataset:
    source = dataset[name]
    try:
      if isinstance(source, CsvDataSource) and path in source.files():
        return source
    except DataError:  # Its files are not there: not the one read.
      continue
  return None
