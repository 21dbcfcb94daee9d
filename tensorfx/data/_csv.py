"""CSV data: reading files into batches of raw features, in TensorFlow and Beam.

Every reader applies the rules of `_csvrules` (quoting, column count,
numbers, missing values), so analysis, training and serving accept and
reject the same rows. Errors name the file and line; with
`skip_bad_records` bad rows are dropped and counted instead.

The TensorFlow reader carries no file and line per row (zipping them in
costs several times the throughput): each batch is decoded by one typed
`tf.io.decode_csv` call, which fails on a bad row, and the reals are checked
to be finite. When the pipeline fails, `data_errors()` asks the source to
find the first bad row of its files (`CsvDataSource.diagnose`), by the
Python reader's rules, so the error names the file and line. With
`skip_bad_records` each batch is checked line by line instead
(`parse_lines`), which keeps the good rows at some cost in throughput. The
analysis decodes byte ranges of the files with the same two functions
(`_csvsplits`).
"""

import threading

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _csvrules
from tensorfx.data import _paths
from tensorfx.data import _validation
from tensorfx.data._csvrules import parse_lines  # pylint: disable=unused-import
from tensorfx.data._csvrules import read_rows
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource

# Files read at once; more only adds buffers once reading is parallel.
_CYCLE_LENGTH = 16


class CsvDataSource(DataSource):
  """CSV files (no header unless `skip_header`), columns in schema order.

  Example:
    >>> source = CsvDataSource('data/train-*.csv', schema, skip_header=True,
    ...                        skip_bad_records=True)
    >>> for batch in source.read(batch_size=64):
    ...   pass
    >>> source.bad_records
    0

  Args:
    paths: a path, a file pattern, a comma-separated list or a sequence of
      them; local or any `tf.io.gfile` filesystem (`gs://`).
    schema: the `Schema` of the columns.
    delimiter: the one-character column delimiter.
    skip_header: whether each file starts with a header line to skip.
    skip_bad_records: whether bad rows are dropped (and counted in
      `bad_records`, and in the analysis log) instead of failing the job.
      Batches with dropped rows are smaller than the batch size.
  """

  supports_skipping = True

  def __init__(self, paths, schema, delimiter=',', skip_header=False,
               skip_bad_records=False):
    super().__init__(paths, schema)
    if not isinstance(delimiter, str) or len(delimiter) != 1 or \
        delimiter in '"\n\r' or not delimiter.isascii():
      raise DataError('delimiter must be a single ASCII character other than '
                      f'a quote or newline. Received: delimiter={delimiter!r}')
    for field in schema:
      if field.length != 1:
        raise DataError(
            f'CSV data holds one value per column; field {field.name!r} has '
            f'length {field.length}. Use ExamplesDataSet for list fields.')
    if not isinstance(skip_bad_records, bool):
      raise DataError('skip_bad_records must be True or False. Received: '
                      f'skip_bad_records={skip_bad_records!r}')
    self.delimiter = delimiter
    self.skip_header = skip_header
    self._counting = False
    self._bad_records = 0
    self._lock = threading.Lock()
    if skip_bad_records:
      self.enable_skipping()

  def enable_skipping(self, count=True):
    """Makes `read()` drop bad rows instead of failing.

    Args:
      count: whether to count (and log the first few of) the dropped rows,
        from Python. Pipelines that run in another process (the workers of
        a parameter-server cluster) cannot call back into this one: they
        read with `count=False`.
    """
    self.skip_bad_records = True
    self._counting = count

  @property
  def bad_records(self):
    """How many bad rows the `read()` pipelines of this source skipped.

    Counted as batches are read (so far, not in the whole data); always 0
    unless `skip_bad_records`.
    """
    return self._bad_records

  def _note_bad_rows(self, reasons, lines):
    """Counts and logs rows that `_check_batch` dropped (from tf.data)."""
    reasons, lines = reasons.numpy(), lines.numpy()
    with self._lock:
      first = self._bad_records
      self._bad_records += len(reasons)
    logged = max(0, _csvrules.LOGGED_BAD_ROWS - first)
    for index in range(min(len(reasons), logged)):
      logger.warning('Skipping a bad record: %s%s: %r',
                     self._where(lines[index]),
                     reasons[index].decode('utf-8', 'replace'),
                     lines[index].decode('utf-8', 'replace')[:80])
    return len(reasons)

  def _where(self, line):
    """`'PATH:LINE: '` of the first line of the files that is `line`.

    The pipeline keeps no line numbers (that would cost every row); a row
    logged (the first few skipped) is looked up by its text, as `diagnose`
    does.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    for path in self.files():
      try:
        with tf.io.gfile.GFile(path, 'rb') as f:
          for number, text in enumerate(f, start=1):
            if text.rstrip(b'\r\n') == line:
              return f'{path}:{number}: '
      except (OSError, tf.errors.OpError):  # Read by the pipeline already.
        continue
    return ''

  def read(self, batch_size, epochs=1, shuffle=False, seed=None,
           shuffle_buffer=10000):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    files = self.files()
    _validation.watch(self)
    deterministic = not shuffle or seed is not None
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle and len(files) > 1:
      ds = ds.shuffle(len(files), seed=seed)
    if self.skip_header:
      lines_of = lambda path: tf.data.TextLineDataset(path).skip(1)
    else:
      lines_of = tf.data.TextLineDataset
    ds = ds.interleave(lines_of, cycle_length=min(len(files), _CYCLE_LENGTH),
                       num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=deterministic)
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.repeat(epochs)
    # Batch first: one vectorized parse per batch, not one call per line.
    ds = ds.batch(batch_size)
    parse = self._check_batch if self.skip_bad_records else self._decode_batch
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic)
    # Empty lines and skipped rows can leave a batch empty.
    name = self.schema[0].name
    ds = ds.filter(lambda batch: tf.size(batch[name]) > 0)
    return ds.prefetch(tf.data.AUTOTUNE)

  def _decode_batch(self, lines):
    """Decodes a batch as a hand-written pipeline would; fails on a bad row."""
    return _csvrules.decode_lines(lines, self.schema, self.delimiter)

  def _check_batch(self, lines):
    """Parses and checks each line; drops empty and bad ones, counting these."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    lines = tf.boolean_mask(lines, tf.strings.length(lines) > 0)
    features, reasons = parse_lines(lines, self.schema, self.delimiter)
    good = reasons == ''
    if not self._counting:
      return {k: tf.boolean_mask(v, good) for k, v in features.items()}

    def note():
      return tf.py_function(
          self._note_bad_rows,
          [tf.boolean_mask(reasons, ~good), tf.boolean_mask(lines, ~good)],
          tf.int64)

    # Python is called only for batches that have bad rows.
    noted = tf.cond(tf.reduce_all(good), lambda: tf.constant(0, tf.int64),
                    note)
    with tf.control_dependencies([noted]):
      return {k: tf.boolean_mask(v, good) for k, v in features.items()}

  def diagnose(self, error):
    """Finds the file and line of the bad row that failed a `read()` pipeline.

    Called by `data_errors()` once a pipeline failed. A row the pipeline
    quoted is looked up by its text; for an error of `tf.io.decode_csv`, the
    files are read by the Python reader's rules up to their first bad row.

    Returns:
      `'FILE:LINE: reason'`, or None when the error is not about a row of
      these files.
    """
    unlocated = _validation.unlocated_of(error)
    if unlocated is not None:
      return self._find_line(unlocated[0])
    # TensorFlow could not put a row that is not UTF-8 in its message.
    if not isinstance(error, UnicodeDecodeError) and \
        not _csvrules.DECODE_ERROR.search(str(getattr(error, 'message',
                                                      error))):
      return None
    for path in self.files():
      try:
        for _ in read_rows(path, self.schema, self.delimiter,
                           self.skip_header):
          pass
      except DataError as e:
        if isinstance(error, UnicodeDecodeError) and \
            'not UTF-8 text' not in str(e):
          # Only a row that is not UTF-8 explains this error.
          return None
        return str(e)
    return None

  def _find_line(self, record):
    """The message of the first line whose text is `record`, by the rules."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    for path in self.files():
      with tf.io.gfile.GFile(path, 'rb') as f:
        for number, line in enumerate(f, start=1):
          if number == 1 and self.skip_header:
            continue
          # As TextLineDataset cuts lines: at \n, without a \r before it.
          text = line.decode('utf-8', errors='replace')
          text = text[:-1] if text.endswith('\n') else text
          text = text[:-1] if text.endswith('\r') else text
          if text == record:
            try:
              _csvrules.parse_row(path, number, text, self.schema,
                                  self.delimiter)
            except DataError as e:
              return str(e)
    return None

  def reading_options(self):
    return dict(super().reading_options(), delimiter=self.delimiter,
                skip_header=self.skip_header,
                skip_bad_records=self.skip_bad_records)

  def record_batches(self, pipeline, label='ReadCsv'):
    from tensorfx.data import _csvsplits  # pylint: disable=g-import-not-at-top
    return _csvsplits.record_batches(self, pipeline, label)


class CsvDataSet(DataSet):
  """A DataSet of CSV sources sharing one schema.

  Example:
    >>> dataset = CsvDataSet('schema.yaml', train='data/train*.csv',
    ...                      eval='data/eval.csv', features='features.yaml')
    >>> dataset['train'].files()
    ['data/train.csv']

  Args:
    schema: a `Schema` or the path of its YAML file.
    metadata: the analysis output: a directory written by `tensorfx analyze`
      (or its `metadata.json`), a `Metadata`, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    delimiter: the column delimiter of every source.
    skip_header: whether each file starts with a header line.
    skip_bad_records: whether bad rows are skipped (and counted: each
      source's `bad_records`, the analysis log) instead of failing.
    **sources: named sources (`train=`, `eval=`, ...), each a path, pattern
      or list of them.
  """

  def __init__(self, schema, metadata=None, features=None, delimiter=',',
               skip_header=False, skip_bad_records=False, **sources):
    super().__init__(schema, metadata=metadata, features=features)
    for name, paths in sources.items():
      if paths is None:
        continue
      if not _paths.as_list(paths):
        raise DataError(f'Source {name!r} has no paths. Received: {paths!r}')
      self._sources[name] = CsvDataSource(paths, self._reading_schema,
                                          delimiter, skip_header,
                                          skip_bad_records)
