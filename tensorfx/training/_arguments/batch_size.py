"""`--batch-size all`: every training instance in each step.

Gematria trains on the whole data set per step unless told otherwise
(`--gematria_max_blocks_in_batch`); for small data, `--batch-size all`
does the same. The number is the analysis' instance count (the training
data's records, as analyzed), or, without an analysis, the records of the
`train` source, counted by reading it once. With `--data-filter` the
records that pass the filter are counted (by reading the source): each step
holds all of them, one pass over the filtered data.
"""

import dataclasses

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _filters
from tensorfx.training._settings import _section

# Records read per batch when counting a source.
_COUNT_BATCH = 8192


def resolve(settings, dataset):
  """The settings with `all` in their batch sizes replaced by the data's size.

  Called once the data is analyzed, before any graph is built; the engine
  keeps the new settings (the builder's own stay as they were read).

  Returns:
    New `Settings`, or `settings` itself when no batch size is `all`.
  """
  loop, validation = settings.loop, settings.validation
  if _section.ALL not in (loop.batch_size, validation.batch_size):
    return settings
  count = training_instances(
    dataset, _filters.parse_filters(settings.data.filters, dataset.schema)
  )
  if loop.batch_size == _section.ALL:
    loop = dataclasses.replace(loop, batch_size=count)
  if validation.batch_size == _section.ALL:
    validation = dataclasses.replace(validation, batch_size=count)
  return dataclasses.replace(settings, loop=loop, validation=validation)


def training_instances(dataset, filters=()):
  """The number of training instances: the analysis' count, else counted.

  Args:
    dataset: the `DataSet`.
    filters: `(field, regex)` record filters (`--data-filter`): when given,
      the records that pass them are counted.
  """
  metadata = dataset.metadata if dataset.analyzed and not filters else None
  if metadata is not None and metadata.instances:
    logger.info(
      "--batch-size all: %d instances (the analysis' count)", metadata.instances
    )
    return int(metadata.instances)
  if 'train' not in dataset:
    raise DataError(
      '--batch-size all needs the training data (--data-train) '
      'to count its instances.'
    )
  raw = dataset['train'].read(_COUNT_BATCH, epochs=1)
  if filters:
    raw = _filters.filter_records(raw, filters, _COUNT_BATCH)
  count = 0
  for batch in raw:
    first = next(iter(batch.values()))
    count += int(
      first.dense_shape[0] if hasattr(first, 'dense_shape') else first.shape[0]
    )
  if not count:
    raise DataError(
      '--batch-size all: no training instances'
      f'{" pass --data-filter" if filters else ""}.'
    )
  logger.info(
    '--batch-size all: %d instances (counted%s)',
    count,
    ', after --data-filter' if filters else '',
  )
  return count
