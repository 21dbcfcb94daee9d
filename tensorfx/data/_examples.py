"""TFRecord files of tf.Example: batches of raw features, in TensorFlow and Beam.

The TensorFlow reader has the shape of a hand-written tf.data pipeline:
interleave the files, shuffle, repeat, batch, then parse each batch with one
`tf.io.parse_example` call, prefetch. It carries no per-record bookkeeping;
when it fails (a truncated or corrupt file, a record that does not match the
schema) `data_errors()` asks the source to find the record by scanning its
files, so the error names the file, the record and the feature.

The analysis reads each file with the same parse, a batch of records at a
time, into Arrow RecordBatches: a field of length 1 or N needs exactly that
many values (or, when absent, takes its fill value: see `_missing`), a field
of length 0 any number; the value list must be of the schema's type
(int64_list, float_list, bytes_list).

With `skip_bad_records` (Gematria's `--gematria_drop_invalid_blocks`) a
record that is not a tf.Example or does not match the schema is dropped and
counted instead, as CSV rows are, by the training reader and the analysis:
each batch is checked from Python (one parse of the whole batch; record by
record only when it fails), which keeps the good records at some cost in
throughput. A truncated or corrupt
file still fails: that is the storage's fault, not a record's.
"""

import os
import re
import threading

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _missing
from tensorfx.data import _paths
from tensorfx.data import _validation
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource

_COMPRESSIONS = {None: '', '': '', 'none': '', 'gzip': 'GZIP', 'zlib': 'ZLIB'}
_SUFFIXES = (('.gz', 'GZIP'), ('.gzip', 'GZIP'), ('.zz', 'ZLIB'),
             ('.zlib', 'ZLIB'))
# Files read at once; more only adds buffers once reading is parallel.
_CYCLE_LENGTH = 16
_SCAN_BATCH = 1024
# Bad records a reader logs one by one before only counting.
_LOGGED_BAD_RECORDS = 10
# Records per RecordBatch the analysis reads.
_ANALYSIS_BATCH = 16384
# DataLossErrors that reading a TFRecord file raises (others, e.g. from a
# checkpoint, are not this source's business).
_RECORD_LOSS = re.compile(r'(truncated|corrupted) record at (\d+)|inflate|'
                          r'deflate|zlib|gzip|Read less bytes', re.IGNORECASE)
_TF_NOISE = re.compile(r'\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\].*$|'
                       r'\s*\[\[\{\{node [^}]*\}\}\]\]', re.DOTALL)


def compression_of(path, compression='auto'):
  """The TFRecord compression type ('', 'GZIP' or 'ZLIB') of a file.

  Args:
    path: the file.
    compression: None (uncompressed), 'GZIP', 'ZLIB', or 'auto': by the
      file's suffix (.gz/.gzip: GZIP, .zz/.zlib: ZLIB, else none).
  """
  if isinstance(compression, str) and compression.lower() == 'auto':
    lower = path.lower()
    for suffix, kind in _SUFFIXES:
      if lower.endswith(suffix):
        return kind
    return ''
  key = compression.lower() if isinstance(compression, str) else compression
  return _COMPRESSIONS[key]


def _check_compression(compression):
  key = compression.lower() if isinstance(compression, str) else compression
  if key != 'auto' and key not in _COMPRESSIONS:
    raise DataError("compression must be None, 'GZIP', 'ZLIB' or 'auto'. "
                    f'Received: compression={compression!r}')


def _clean(error):
  """TensorFlow's message of an error, without graph and op decorations."""
  text = str(getattr(error, 'message', '') or error)
  return _TF_NOISE.sub('', text).strip()


class ExamplesDataSource(DataSource):
  """TFRecord files of serialized tf.Example protos, one per record.

  Each record holds a feature per schema field, named like the field: an
  int64_list for integer fields, a float_list for real fields and a
  bytes_list for discrete ones. A field of length 1 holds one value, of
  length N exactly N, of length 0 any number (read as a `tf.SparseTensor`).
  A field whose values may be missing (a default, a `missing` policy, a
  discrete field) may be left out of a record: it is a missing value. (For
  length 0 a missing feature is an empty list.)

  Example:
    >>> source = ExamplesDataSource('data/train-*.tfrecord.gz', schema)
    >>> batch = next(iter(source.read(batch_size=64)))

  Args:
    paths: a path, a file pattern, a comma-separated list or a sequence of
      them; local or any `tf.io.gfile` filesystem (`gs://`).
    schema: the `Schema` of the features.
    compression: None, 'GZIP', 'ZLIB', or 'auto' (by each file's suffix:
      .gz is GZIP).
    skip_bad_records: whether records that are not a tf.Example or do not
      match the schema are dropped (and counted in `bad_records`, and in
      the analysis log) instead of failing the job. Batches with dropped
      records are smaller than the batch size.
  """

  supports_skipping = True

  def __init__(self, paths, schema, compression='auto',
               skip_bad_records=False):
    super().__init__(paths, schema)
    _check_compression(compression)
    if not isinstance(skip_bad_records, bool):
      raise DataError('skip_bad_records must be True or False. Received: '
                      f'skip_bad_records={skip_bad_records!r}')
    self.compression = compression
    self._counting = False
    self._bad_records = 0
    self._lock = threading.Lock()
    if skip_bad_records:
      self.enable_skipping()

  def enable_skipping(self, count=True):
    """Makes `read()` drop bad records instead of failing.

    Args:
      count: whether to count (and log the first few of) the dropped
        records, from Python. Pipelines that run in another process (the
        workers of a parameter-server cluster) cannot call back into this
        one: they parse record by record and drop bad ones uncounted.
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

  def compressions(self):
    """The compression type of each of `files()`, in order."""
    return [compression_of(f, self.compression) for f in self.files()]

  def read(self, batch_size, epochs=1, shuffle=False, seed=None,
           shuffle_buffer=10000):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from tensorfx.data import _transforms  # pylint: disable=g-import-not-at-top
    files = self.files()
    compressions = self.compressions()
    spec = _transforms.parsing_spec(self.schema)
    _validation.watch(self)
    deterministic = not shuffle or seed is not None
    ds = tf.data.Dataset.from_tensor_slices((files, compressions))
    if shuffle and len(files) > 1:
      ds = ds.shuffle(len(files), seed=seed)
    # Plain TensorFlow calls: not converted by autograph (start-up time).
    no_autograph = tf.autograph.experimental.do_not_convert
    ds = ds.interleave(
        no_autograph(lambda path, compression: tf.data.TFRecordDataset(
            path, compression)),
        cycle_length=min(len(files), _CYCLE_LENGTH),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.repeat(epochs)
    if self.skip_bad_records and not self._counting:
      # Elsewhere than this process: each record parsed alone, bad ones
      # dropped by tf.data (uncounted), then batched.
      ds = ds.map(no_autograph(lambda record: tf.io.parse_example(
          record[tf.newaxis], spec)), num_parallel_calls=tf.data.AUTOTUNE,
                  deterministic=deterministic).ignore_errors().unbatch()
      return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    # Batch first: one vectorized parse per batch, not one call per record.
    ds = ds.batch(batch_size)
    if self.skip_bad_records:
      ds = ds.map(no_autograph(lambda records: tf.io.parse_example(
          tf.boolean_mask(records, self._good_records(records)), spec)),
                  num_parallel_calls=tf.data.AUTOTUNE,
                  deterministic=deterministic)
      # A batch of bad records only is empty.
      return ds.filter(_not_empty).prefetch(tf.data.AUTOTUNE)
    ds = ds.map(no_autograph(lambda records: tf.io.parse_example(records,
                                                                 spec)),
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic)
    return ds.prefetch(tf.data.AUTOTUNE)

  def _good_records(self, records):
    """[B] bool: which records of a batch parse (from Python, counting)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    good = tf.py_function(self._check_records, [records], tf.bool)
    good.set_shape(records.shape)
    return good

  def _check_records(self, records):
    """Parses a batch; on failure finds, counts and logs its bad records."""
    import numpy as np  # pylint: disable=g-import-not-at-top
    from tensorfx.data import _transforms  # pylint: disable=g-import-not-at-top
    spec = _transforms.parsing_spec(self.schema)
    values = records.numpy()
    if _records_problem(values, spec) is None:
      return np.ones(len(values), dtype=bool)
    problems = [_records_problem([value], spec) for value in values]
    bad = [p for p in problems if p is not None]
    with self._lock:
      first = self._bad_records
      self._bad_records += len(bad)
    for problem in bad[:max(0, _LOGGED_BAD_RECORDS - first)]:
      logger.warning('Skipping a bad record: %s', problem)
    return np.array([p is None for p in problems], dtype=bool)

  def diagnose(self, error):
    """Finds the record behind a failed `read()` pipeline.

    Called by `data_errors()` once a pipeline failed. Scans the files for a
    record that fails the same way (the same TensorFlow message), so a
    source whose files are fine, or bad in another way, claims nothing.

    Returns:
      The message of a `DataError` naming the file, the record and what is
      wrong, or None when the error is not about these files.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if isinstance(error, tf.errors.DataLossError):
      match = _RECORD_LOSS.search(_clean(error))
      if not match:
        return None
      offset = int(match.group(2)) if match.group(2) else None
      parse = False
    elif isinstance(error, tf.errors.InvalidArgumentError):
      if _validation.example_error(error) is None and \
          _NOT_AN_EXAMPLE not in _clean(error):
        return None
      offset, parse = None, True
    elif isinstance(error, UnicodeDecodeError) and _from_tensorflow(error):
      # TensorFlow could not report a binary record that failed to parse.
      offset, parse = None, True
    else:
      return None
    for path, compression in zip(self.files(), self.compressions()):
      if offset is not None and not compression and \
          tf.io.gfile.stat(path).length <= offset:
        continue  # That record offset is past the end of this file.
      found = _scan(path, compression, self.schema, parse)
      if found and _same_failure(error, found[1]):
        return found[0]
    return None

  def reading_options(self):
    return dict(super().reading_options(), compressions=self.compressions())

  def record_batches(self, pipeline, label='ReadExamples'):
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    from tensorfx.data import _arrow  # pylint: disable=g-import-not-at-top
    pairs = list(zip(self.files(), self.compressions()))
    schema = self.schema
    skip_bad = self.skip_bad_records
    counter = beam.metrics.Metrics.counter(_arrow.COUNTER_NAMESPACE,
                                           _arrow.BAD_RECORDS_COUNTER)

    def batches(pair):
      logged = 0

      def on_bad_record(message):
        nonlocal logged
        counter.inc()
        if logged < _LOGGED_BAD_RECORDS:
          logger.warning('Skipping a bad record: %s', message)
          logged += 1

      return record_batches(pair[0], schema, pair[1], skip_bad,
                            on_bad_record)

    files = pipeline | f'{label}Files' >> beam.Create(pairs)
    if len(pairs) > 1:
      # Spreads the files over workers (Create makes one bundle).
      files |= f'{label}Spread' >> beam.Reshuffle()
    return files | f'{label}Batches' >> beam.FlatMap(batches)


_NOT_AN_EXAMPLE = 'Could not parse example input'
_MISSING_FEATURE = re.compile(r"missing required feature '(\w+)'")


def _not_empty(features):
  """Whether a batch of parsed features holds any record."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  value = next(iter(features.values()))
  size = value.dense_shape[0] if isinstance(value, tf.SparseTensor) else \
      tf.shape(value, out_type=tf.int64)[0]
  return size > 0


def _records_problem(records, spec):
  """What is wrong with a batch of records (from Python), or None."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.io.parse_example(records, spec)
    return None
  except tf.errors.InvalidArgumentError as e:
    return _validation.example_error(e) or 'not a serialized tf.Example'
  except UnicodeDecodeError:
    return 'not a serialized tf.Example'
# Where a record is, in ParseExample's messages: differs between the
# pipeline (unnamed, index in its batch) and the scan (named, other batches).
_RECORD_NAME = re.compile(r'Name: [^,]*, |Index: \d+\.')


def _from_tensorflow(error):
  """Whether an exception was raised while TensorFlow reported an error."""
  traceback = error.__traceback__
  while traceback is not None and traceback.tb_next is not None:
    traceback = traceback.tb_next
  return traceback is not None and \
      f'{os.sep}tensorflow{os.sep}' in traceback.tb_frame.f_code.co_filename


def _same_failure(error, found):
  """Whether `error` is the failure that scanning found (`found`)."""
  if isinstance(error, UnicodeDecodeError):
    # The record's bytes are in the message TensorFlow could not decode.
    return isinstance(found, bytes) and found[:64] in bytes(error.object)
  if not isinstance(found, str):
    return False
  return _RECORD_NAME.sub('', found) in _RECORD_NAME.sub('', _clean(error))


def _scan(path, compression, schema, parse):
  """The first bad record of one file, or None.

  Returns:
    `(message, failure)`: the message of the `DataError`, and what failed:
    TensorFlow's message, or the record when it is not a tf.Example.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorfx.data import _transforms  # pylint: disable=g-import-not-at-top
  spec = _transforms.parsing_spec(schema)
  count = 0
  batches = iter(tf.data.TFRecordDataset(path, compression).batch(
      _SCAN_BATCH))
  while True:
    try:
      records = next(batches)
    except StopIteration:
      return None
    except tf.errors.DataLossError as e:
      return _loss(path, compression, count, e)
    if parse:
      found = _parse_problem(path, records, count, spec)
      if found:
        return with_hint(found[0], schema), found[1]
    count += int(records.shape[0])


def _loss(path, compression, count, error):
  """Names the record a DataLossError stopped at (after `count` good ones).

  Returns:
    `(message, TensorFlow's message)`.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  number = count + 1
  try:
    for _ in tf.data.TFRecordDataset(path, compression).skip(count):
      number += 1
  except tf.errors.DataLossError as e:
    error = e
  text = _clean(error)
  return (f'{path}: record {number}: truncated or corrupt TFRecord file '
          f'({text})', text)


def _parse_problem(path, records, count, spec):
  """The first record of a batch that does not parse, as `_scan` returns."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  names = tf.strings.as_string(tf.range(count + 1, count + 1 +
                                        tf.shape(records, tf.int64)[0]))
  try:
    tf.io.parse_example(records, spec, example_names=names)
    return None
  except tf.errors.InvalidArgumentError as e:
    message = _validation.example_error(
        e, name=lambda name: f'{path}: record {name}')
    if message:
      return message, _clean(e)
  except UnicodeDecodeError:
    pass
  # Not a tf.Example at all: find which record, one at a time.
  for index, record in enumerate(records.numpy(), start=count + 1):
    try:
      tf.io.parse_example([record], spec)
    except tf.errors.InvalidArgumentError as e:
      return (f'{path}: record {index}: not a serialized tf.Example',
              _clean(e))
    except UnicodeDecodeError:
      return f'{path}: record {index}: not a serialized tf.Example', record
  return None


def record_batches(path, schema, compression='', skip_bad_records=False,
                   on_bad_record=None):
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorfx.data import _arrow  # pylint: disable=g-import-not-at-top
  parse = _parser(schema)
  count = 0
  batches = iter(tf.data.TFRecordDataset(path, compression).batch(
      _ANALYSIS_BATCH))
  while True:
    try:
      records = next(batches)
    except StopIteration:
      return
    except tf.errors.DataLossError as e:
      raise DataError(_loss(path, compression, count, e)[0]) from None
    try:
      features = parse(records)
    except (tf.errors.InvalidArgumentError, UnicodeDecodeError) as e:
      if skip_bad_records:
        features = _good_features(path, records, count, schema, on_bad_record)
        count += int(records.shape[0])
        if features is not None:
          yield _arrow.record_batch(features, schema)
        continue
      found = _scan(path, compression, schema, parse=True)
      raise DataError(found[0] if found else
                      f'{path}: a record after record {count} does not '
                      f'parse: {_clean(e)}') from None
    count += int(records.shape[0])
    yield _arrow.record_batch(features, schema)


def _good_features(path, records, count, schema, on_bad_record):
  """The parsed good records of a batch (None if none), the bad reported."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tensorfx.data import _transforms  # pylint: disable=g-import-not-at-top
  spec = _transforms.parsing_spec(schema)
  values = records.numpy()
  good = []
  for index, value in enumerate(values):
    problem = _records_problem([value], spec)
    if problem is None:
      good.append(index)
    elif on_bad_record is not None:
      on_bad_record(f'{path}: record {count + index + 1}: {problem}')
  if not good:
    return None
  return _parser(schema)(values[np.array(good)])


# Traced parsers by schema: tracing one per file would cost more than
# parsing a small file.
_PARSERS = {}


def _parser(schema):
  """The tf.function parsing a batch of serialized tf.Examples."""
  if schema not in _PARSERS:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from tensorfx.data import _transforms  # pylint: disable=g-import-not-at-top
    spec = _transforms.parsing_spec(schema)
    _PARSERS[schema] = tf.function(
        lambda records: tf.io.parse_example(records, spec),
        input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  return _PARSERS[schema]


def with_hint(message, schema):
  """A record's message, with how to fix a missing required feature."""
  match = _MISSING_FEATURE.search(message)
  if match and match.group(1) in schema:
    return f'{message}; {_missing.hint(schema[match.group(1)])}'
  return message


class ExamplesDataSet(DataSet):
  """A DataSet of TFRecord sources of tf.Example, sharing one schema.

  Example:
    >>> dataset = ExamplesDataSet('schema.yaml',
    ...                           train='data/train-*.tfrecord.gz',
    ...                           eval='data/eval.tfrecord.gz',
    ...                           features='features.yaml')
    >>> dataset['train'].compressions()
    ['GZIP', 'GZIP']

  Args:
    schema: a `Schema` or the path of its YAML file.
    metadata: the analysis output: a directory written by `tensorfx analyze`
      (or its `metadata.json`), a `Metadata`, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    compression: None, 'GZIP', 'ZLIB' or 'auto' (by file suffix: .gz is
      GZIP) for every source.
    skip_bad_records: whether records that are not a tf.Example or do not
      match the schema are skipped (and counted: each source's
      `bad_records`, the analysis log) instead of failing.
    **sources: named sources (`train=`, `eval=`, ...), each a path, pattern
      or list of them.
  """

  def __init__(self, schema, metadata=None, features=None, compression='auto',
               skip_bad_records=False, **sources):
    super().__init__(schema, metadata=metadata, features=features)
    _check_compression(compression)
    for name, paths in sources.items():
      if paths is None:
        continue
      if not _paths.as_list(paths):
        raise DataError(f'Source {name!r} has no paths. Received: {paths!r}')
      self._sources[name] = ExamplesDataSource(paths, self._reading_schema,
                                               compression, skip_bad_records)
