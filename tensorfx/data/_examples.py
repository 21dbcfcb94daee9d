"""TFRecord files of tf.Example: batches of raw features, in TensorFlow and Beam.

The TensorFlow reader has the shape of a hand-written tf.data pipeline:
interleave the files, shuffle, repeat, batch, then parse each batch with one
`tf.io.parse_example` call, prefetch. It carries no per-record bookkeeping;
when it fails (a truncated or corrupt file, a record that does not match the
schema) `data_errors()` asks the source to find the record by scanning its
files (`_examplescan`), so the error names the file, the record and the
feature. The analysis reads the files with `_examplebatches`.

With `skip_bad_records` (Gematria's `--gematria_drop_invalid_blocks`) a
record that is not a tf.Example or does not match the schema is dropped and
counted instead, as CSV rows are, by the training reader and the analysis:
each batch is checked from Python (one parse of the whole batch; record by
record only when it fails), which keeps the good records at some cost in
throughput. A truncated or corrupt
file still fails: that is the storage's fault, not a record's.
"""

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _examplebatches
from tensorfx.data import _examplescan
from tensorfx.data import _skipping
from tensorfx.data import _sourceargs
from tensorfx.data import _validation
from tensorfx.data._dataset import DataSet

_COMPRESSIONS = {None: '', '': '', 'none': '', 'gzip': 'GZIP', 'zlib': 'ZLIB'}
_SUFFIXES = (
  ('.gz', 'GZIP'),
  ('.gzip', 'GZIP'),
  ('.zz', 'ZLIB'),
  ('.zlib', 'ZLIB'),
)
# Files read at once; more only adds buffers once reading is parallel.
CYCLE_LENGTH = 16


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
    raise DataError(
      "compression must be None, 'GZIP', 'ZLIB' or 'auto'. "
      f'Received: compression={compression!r}'
    )


class ExamplesDataSource(_skipping.SkippingSource):
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
    schema: the `Schema` of the features; may be left out when the source
      is given to an `ExamplesDataSet`, which binds it to its own.
    compression: None, 'GZIP', 'ZLIB', or 'auto' (by each file's suffix:
      .gz is GZIP).
    skip_bad_records: whether records that are not a tf.Example or do not
      match the schema are dropped (and counted in `bad_records`, and in
      the analysis log) instead of failing the job. Batches with dropped
      records are smaller than the batch size.
  """

  def __init__(
    self, paths, schema=None, compression='auto', skip_bad_records=False
  ):
    super().__init__(paths, schema, skip_bad_records)
    _check_compression(compression)
    self.compression = compression

  def compressions(self):
    """The compression type of each of `files()`, in order."""
    return [compression_of(f, self.compression) for f in self.files()]

  def read(
    self, batch_size, epochs=1, shuffle=False, seed=None, shuffle_buffer=10000
  ):
    import tensorflow as tf

    files = self.files()
    _validation.watch(self)
    deterministic = not shuffle or seed is not None
    ds = tf.data.Dataset.from_tensor_slices((files, self.compressions()))
    if shuffle and len(files) > 1:
      ds = ds.shuffle(len(files), seed=seed)
    # Plain TensorFlow calls: not converted by autograph (start-up time).
    no_autograph = tf.autograph.experimental.do_not_convert
    ds = ds.interleave(
      no_autograph(
        lambda path, compression: tf.data.TFRecordDataset(  # noqa: PLW0108  (do_not_convert takes a function)
          path, compression
        )
      ),
      cycle_length=min(len(files), CYCLE_LENGTH),
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=deterministic,
    )
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.repeat(epochs)
    decode = no_autograph(self._decoder())
    # Full batches when endless (see `DataSource.read`).
    full = epochs is None
    if self.skip_bad_records and not self._counting:
      # Elsewhere than this process: each record decoded alone, bad ones
      # dropped by tf.data (uncounted), then batched.
      ds = (
        ds.map(
          no_autograph(lambda record: decode(record[tf.newaxis])),
          num_parallel_calls=tf.data.AUTOTUNE,
          deterministic=deterministic,
        )
        .ignore_errors()
        .unbatch()
      )
      return ds.batch(batch_size, drop_remainder=full).prefetch(
        tf.data.AUTOTUNE
      )
    # Batch first: one vectorized decode per batch, not one call per record.
    ds = ds.batch(batch_size, drop_remainder=full)
    if self.skip_bad_records:
      ds = ds.map(
        no_autograph(
          lambda records: decode(
            tf.boolean_mask(records, self._good_records(records))
          )
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
      )
    else:
      ds = ds.map(
        decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic
      )
    return self._rebatched(ds, batch_size, full).prefetch(tf.data.AUTOTUNE)

  def _decoder(self):
    """The function of a [B] batch of serialized records to raw features."""
    import tensorflow as tf

    from tensorfx.data import _transforms

    spec = _transforms.parsing_spec(self.schema)
    return lambda records: tf.io.parse_example(records, spec)

  def _rebatched(self, ds, batch_size, full):
    """The decoded batches of `read()`, less those that dropped every record.

    Args:
      ds: the decoded batches.
      batch_size: records per batch.
      full: whether batches are all full (reading endlessly).
    """
    # A batch of bad records only is empty.
    return ds.filter(not_empty) if self.skip_bad_records else ds

  def _good_records(self, records):
    """[B] bool: which records of a batch parse (from Python, counting)."""
    import tensorflow as tf

    good = tf.py_function(self._check_records, [records], tf.bool)
    good.set_shape(records.shape)
    return good

  def _check_records(self, records):
    """Parses a batch; on failure finds, counts and logs its bad records."""
    import numpy as np

    from tensorfx.data import _transforms

    spec = _transforms.parsing_spec(self.schema)
    values = records.numpy()
    if _examplescan.records_problem(values, spec) is None:
      return np.ones(len(values), dtype=bool)
    problems = [_examplescan.records_problem([value], spec) for value in values]
    logged = self._count_bad(sum(p is not None for p in problems))
    for value, problem in [
      (v, p) for v, p in zip(values, problems) if p is not None
    ][:logged]:
      logger.warning('Skipping a bad record: %s%s', self._where(value), problem)
    return np.array([p is None for p in problems], dtype=bool)

  def _where(self, value):
    """`'PATH: record N: '` of the first record of the files that is `value`.

    The pipeline keeps no record numbers (that would cost every record); a
    record logged (the first few skipped) is looked up by its bytes.
    """
    import tensorflow as tf

    for path, compression in zip(self.files(), self.compressions()):
      try:
        records = tf.data.TFRecordDataset(path, compression)
        for number, record in enumerate(records.as_numpy_iterator(), 1):
          if record == value:
            return f'{path}: record {number}: '
      except (OSError, tf.errors.OpError):  # A damaged tail: not found.
        continue
    return ''

  def diagnose(self, error):
    """Finds the record behind a failed `read()` pipeline.

    Called by `data_errors()` once a pipeline failed. Scans the files for a
    record that fails the same way (the same TensorFlow message), so a
    source whose files are fine, or bad in another way, claims nothing.

    Returns:
      The message of a `DataError` naming the file, the record and what is
      wrong, or None when the error is not about these files.
    """
    return _examplescan.diagnose(self, error)

  def reading_options(self):
    return dict(super().reading_options(), compressions=self.compressions())

  def record_batches(self, pipeline, label='ReadExamples'):
    schema = self.schema
    skip_bad = self.skip_bad_records
    return file_record_batches(
      pipeline,
      label,
      list(zip(self.files(), self.compressions())),
      lambda path, compression, on_bad_record: _examplebatches.record_batches(
        path, schema, compression, skip_bad, on_bad_record
      ),
    )


def file_record_batches(pipeline, label, pairs, read):
  """A PCollection of the RecordBatches of TFRecord files, for the analysis.

  What a TFRecord source's `record_batches` does, whatever its records.

  Args:
    pipeline: the Beam pipeline.
    label: the prefix of the steps' labels.
    pairs: `(path, compression)` of each file.
    read: `read(path, compression, on_bad_record)`, the RecordBatches of a
      file, reporting each bad record it drops to `on_bad_record` (a
      message): they are counted, and the first few of a file logged.
  """
  import apache_beam as beam

  from tensorfx.data import _arrow

  counter = beam.metrics.Metrics.counter(
    _arrow.COUNTER_NAMESPACE, _arrow.BAD_RECORDS_COUNTER
  )

  def batches(pair):
    logged = 0

    def on_bad_record(message):
      nonlocal logged
      counter.inc()
      if logged < _skipping.LOGGED_BAD_RECORDS:
        logger.warning('Skipping a bad record: %s', message)
        logged += 1

    return read(pair[0], pair[1], on_bad_record)

  files = pipeline | f'{label}Files' >> beam.Create(pairs)
  if len(pairs) > 1:
    # Spreads the files over workers (Create makes one bundle).
    files |= f'{label}Spread' >> beam.Reshuffle()
  return files | f'{label}Batches' >> beam.FlatMap(batches)


def not_empty(features):
  """Whether a batch of parsed features holds any record."""
  import tensorflow as tf

  value = next(iter(features.values()))
  size = (
    value.dense_shape[0]
    if isinstance(value, tf.SparseTensor)
    else tf.shape(value, out_type=tf.int64)[0]
  )
  return size > 0


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
      or list of them, or an `ExamplesDataSource` (its files and options,
      read by this dataset's schema).
  """

  def __init__(
    self,
    schema,
    metadata=None,
    features=None,
    compression='auto',
    skip_bad_records=False,
    **sources,
  ):
    _sourceargs.check_sources(
      'ExamplesDataSet',
      sources,
      ('schema', 'metadata', 'features', 'compression', 'skip_bad_records'),
      _sourceargs.paths_or(ExamplesDataSource),
      'a path, pattern, list of them or an ExamplesDataSource',
    )
    super().__init__(schema, metadata=metadata, features=features)
    _check_compression(compression)
    self._add_sources(
      sources,
      lambda paths: ExamplesDataSource(
        paths, self._reading_schema, compression, skip_bad_records
      ),
      ExamplesDataSource,
    )
