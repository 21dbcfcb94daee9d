"""TFRecord files of tf.Example read for the analysis: Arrow RecordBatches.

The analysis reads each file with the training reader's parse, a batch of
records at a time, into Arrow RecordBatches: a field of length 1 or N needs
exactly that many values (or, when absent, takes its fill value: see
`_missing`), a field of length 0 any number; the value list must be of the
schema's type (int64_list, float_list, bytes_list).

With `skip_bad_records` the records that do not parse are left out of their
batch and reported; a truncated or corrupt file fails either way.
"""

from typing import Any

from tensorfx._errors import DataError
from tensorfx.data import _examplescan

# Records per RecordBatch the analysis reads.
_ANALYSIS_BATCH = 16384


def record_batches(
  path, schema, compression='', skip_bad_records=False, on_bad_record=None
):
  """Yields the records of one TFRecord file as Arrow RecordBatches.

  Parsed as training parses them (`tf.io.parse_example` of a batch, missing
  values filled); streams the file (bounded memory). What the analysis
  reads.

  Args:
    path: the file.
    schema: the `Schema` of its features.
    compression: '', 'GZIP' or 'ZLIB'.
    skip_bad_records: whether to skip records that are not a tf.Example or
      do not match the schema instead of raising.
    on_bad_record: called with the message of each skipped record.

  Raises:
    DataError: naming the file and record of the first bad record (unless
      `skip_bad_records`), or of a truncated or corrupt file.
  """
  import tensorflow as tf

  from tensorfx.data import _arrow

  parse = _parser(schema)
  count = 0
  for records in _examplescan.record_batches(
    path, compression, _ANALYSIS_BATCH
  ):
    try:
      features = parse(records)
    except (tf.errors.InvalidArgumentError, UnicodeDecodeError) as e:
      if skip_bad_records:
        features = _good_features(path, records, count, schema, on_bad_record)
        count += int(records.shape[0])
        if features is not None:
          yield _arrow.record_batch(features, schema)
        continue
      found = _examplescan.scan(path, compression, schema, parse=True)
      raise DataError(
        found[0]
        if found
        else f'{path}: a record after record {count} does not '
        f'parse: {_examplescan.clean(e)}'
      ) from None
    count += int(records.shape[0])
    yield _arrow.record_batch(features, schema)


def _good_features(path, records, count, schema, on_bad_record):
  """The parsed good records of a batch (None if none), the bad reported."""
  import numpy as np

  from tensorfx.data import _transforms

  spec = _transforms.parsing_spec(schema)
  values = records.numpy()
  good = []
  for index, value in enumerate(values):
    problem = _examplescan.records_problem([value], spec)
    if problem is None:
      good.append(index)
    elif on_bad_record is not None:
      on_bad_record(f'{path}: record {count + index + 1}: {problem}')
  if not good:
    return None
  return _parser(schema)(values[np.array(good)])


# Traced parsers by schema: tracing one per file would cost more than
# parsing a small file.
_PARSERS: dict[Any, Any] = {}


def _parser(schema):
  """The tf.function parsing a batch of serialized tf.Examples."""
  if schema not in _PARSERS:
    import tensorflow as tf

    from tensorfx.data import _transforms

    spec = _transforms.parsing_spec(schema)
    _PARSERS[schema] = tf.function(
      lambda records: tf.io.parse_example(records, spec),
      input_signature=[tf.TensorSpec([None], tf.string)],
      autograph=False,
    )
  return _PARSERS[schema]
