"""CSV data: reading files into batches of raw features, in TensorFlow and Beam.

Both readers apply the same rules, so analysis and training accept and
reject the same rows: quoting must be well formed (a quoted field is quoted
from its first to its last character, inner quotes doubled), the column count
must match the schema (quoted fields may contain the delimiter), numeric
cells must parse (surrounding spaces allowed; integers within 64 bits, reals
finite as 32-bit floats), and an empty cell (nothing between the delimiters,
or `""`) takes the field's default or is an error. Empty lines are not
records. These are the rules of `tf.io.decode_csv` with typed defaults, which
is what lets the TensorFlow reader be as fast as a hand-written one.

Errors name the file and line; with `skip_bad_records` bad rows are dropped
and counted instead.

The TensorFlow reader carries no file and line per row (zipping them in
costs several times the throughput): each batch is decoded by one typed
`tf.io.decode_csv` call, which fails on a bad row, and the reals are checked
to be finite. When the pipeline fails, `data_errors()` asks the source to
find the first bad row of its files (`CsvDataSource.diagnose`), by the
Python reader's rules, so the error names the file and line. With
`skip_bad_records` each batch is checked line by line instead
(`parse_lines`), which keeps the good rows at some cost in throughput.
"""

import csv
import io
import re
import threading

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _paths
from tensorfx.data import _validation
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource

_NUMBER = {
    'real': r'\s*[+-]?((\d+\.?\d*)|(\.\d+))([eE][+-]?\d+)?\s*',
    'integer': r'\s*[+-]?\d+\s*',
}
_TYPE_NAMES = {'real': 'a real number', 'integer': 'an integer'}
# Integers must fit int64: both readers take those whose magnitude, read as a
# float64, is below 2**63 (all but the 512 extreme values).
_INTEGER_LIMIT = 2.0**63
# Reals must be finite as float32: below the largest float32 plus half its
# last step, past which rounding gives inf.
_REAL_LIMIT = 3.4028235677973366e38
# Files read at once; more only adds buffers once reading is parallel.
_CYCLE_LENGTH = 16
# Bad rows a Beam worker logs one by one, per file, before only counting.
_LOGGED_BAD_ROWS = 10


def _line_pattern(delimiter):
  """A regex (RE2 and Python) matching a line whose quoting is well formed.

  Each field is either unquoted, without quotes, or quoted from its first to
  its last character with inner quotes doubled: what `tf.io.decode_csv`
  accepts. Anything else would fail a whole batch inside decode_csv.
  """
  d = re.escape(delimiter)
  field = f'(?:[^"{d}]*|"(?:[^"]|"")*")'
  return f'{field}(?:{d}{field})*'


def _quote_problem(quotes):
  """The reason for a badly quoted line with `quotes` quote characters."""
  return 'unbalanced quote' if quotes % 2 else 'misplaced quote'


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
    for index in range(max(0, min(len(reasons), _LOGGED_BAD_ROWS - first))):
      logger.warning('Skipping a bad record: %s: %r',
                     reasons[index].decode('utf-8', 'replace'),
                     lines[index].decode('utf-8', 'replace')[:80])
    return len(reasons)

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
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    lines = tf.boolean_mask(lines, tf.strings.length(lines) > 0)
    defaults = []
    for field in self.schema:
      # An empty default tensor makes the field required.
      default = [] if field.default is None else [field.default]
      defaults.append(tf.constant(default, _dtype(field)))
    columns = tf.io.decode_csv(lines, defaults, field_delim=self.delimiter,
                               use_quote_delim=True)
    features = {f.name: c for f, c in zip(self.schema, columns)}
    reals = [features[f.name] for f in self.schema if f.type.value == 'real']
    if not reals:
      return features
    # decode_csv reads 'nan', 'inf' and overflows to inf; the rules do not.
    finite = tf.reduce_all(tf.math.is_finite(tf.stack(reals, axis=1)),
                           axis=1)
    # Stateful, so it runs in the tf.data function without a dependency.
    _validation.assert_records(finite, lines,
                               'a real is not a finite 32-bit number')
    return features

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
        not _DECODE_ERROR.search(str(getattr(error, 'message', error))):
      return None
    for path in self.files():
      try:
        for _ in read_rows(path, self.schema, self.delimiter,
                           self.skip_header):
          pass
      except DataError as e:
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
              _parse_row(path, number, text, self.schema, self.delimiter)
            except DataError as e:
              return str(e)
    return None

  def beam_source(self, pipeline, label='ReadCsv'):
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    files = self.files()
    schema, delimiter, skip = self.schema, self.delimiter, self.skip_header
    skip_bad = self.skip_bad_records
    counter = beam.metrics.Metrics.counter('tensorfx', BAD_RECORDS_COUNTER)

    def rows(path):
      logged = 0

      def on_bad_record(message):
        nonlocal logged
        counter.inc()
        if logged < _LOGGED_BAD_ROWS:
          logger.warning('Skipping a bad record: %s', message)
          logged += 1

      return read_rows(path, schema, delimiter, skip, skip_bad,
                       on_bad_record)

    return (pipeline
            | f'{label}Files' >> beam.Create(files)
            # Spreads the files over workers (Create makes one bundle).
            | f'{label}Spread' >> beam.Reshuffle()
            | f'{label}Rows' >> beam.FlatMap(rows))


# The Beam counter of skipped bad records (namespace 'tensorfx').
BAD_RECORDS_COUNTER = 'bad_records'
# A failure of tf.io.decode_csv: its node, or what it says about a bad row.
_DECODE_ERROR = re.compile(
    r'\bDecodeCSV\b|Expect \d+ fields but have|is not a valid (float|int64)|'
    r'is required but missing in record|Unquoted fields cannot have quotes|'
    r'Quote inside a string has to be escaped|Quoted field has to end')


def _dtype(field):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {'integer': tf.int64, 'real': tf.float32,
          'discrete': tf.string}[field.type.value]


def parse_lines(lines, schema, delimiter=',', fields=None, optional=()):
  """Parses a batch of CSV lines into raw features, in the graph.

  Args:
    lines: [B] string tensor.
    schema: the `Schema`; lines hold its fields in order.
    delimiter: the column delimiter.
    fields: the names of the fields to return (default all).
    optional: names of fields whose columns a line may leave out altogether
      (e.g. the target, when serving); such a line has that many fewer
      columns. A line has either all columns or none of these; where it
      leaves them out, their values are their defaults (or empty strings
      and zeros), without checks.

  Returns:
    `(features, reasons)`: a dict of [B] tensors, and [B] strings that are
    empty for good lines and say what is wrong with bad ones.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  size = len(schema)
  optional = set(optional)
  short_fields = [f for f in schema if f.name not in optional]
  short = len(short_fields)
  # A badly quoted line is reported as such (its column count means nothing)
  # and never reaches decode_csv, which would fail the whole batch.
  well_formed = tf.strings.regex_full_match(lines, _line_pattern(delimiter))
  quotes = tf.strings.length(lines) - tf.strings.length(
      tf.strings.regex_replace(lines, '"', ''))
  # Quoted sections may hold the delimiter: take them out before counting.
  unquoted = tf.strings.regex_replace(lines, r'"([^"]|"")*"', 'q')
  counts = tf.strings.length(unquoted) - tf.strings.length(
      tf.strings.regex_replace(unquoted, re.escape(delimiter), '')) + 1
  full = counts == size
  partial = (counts == short) if optional else tf.zeros_like(full)
  expected = f'{size}' if not optional else f'{size} (or {short})'
  reasons = tf.where(
      ~well_formed,
      # The pattern fails on quoting, or on bytes that are not UTF-8.
      tf.where(quotes % 2 == 1, _quote_problem(1),
               tf.where(quotes > 0, _quote_problem(0), 'not UTF-8 text')),
      tf.where(~full & ~partial,
               tf.strings.join([f'expected {expected} columns, found ',
                                tf.strings.as_string(counts)]), ''))
  good = reasons == ''
  # decode_csv fails a whole batch on one bad line: give it harmless ones.
  columns = dict(zip([f.name for f in schema], tf.io.decode_csv(
      tf.where(good & full, lines, delimiter * (size - 1)),
      record_defaults=[['']] * size, field_delim=delimiter,
      use_quote_delim=True)))
  if optional:
    short_columns = dict(zip([f.name for f in short_fields], tf.io.decode_csv(
        tf.where(good & partial, lines, delimiter * (short - 1)),
        record_defaults=[['']] * short, field_delim=delimiter,
        use_quote_delim=True)))
    for name, column in short_columns.items():
      columns[name] = tf.where(full, columns[name], column)
  features = {}
  wanted = set(fields) if fields is not None else None
  for field in schema:
    if wanted is not None and field.name not in wanted:
      continue
    value, problem = _parse_column(field, columns[field.name])
    if field.name in optional:
      # A line that leaves the column out has nothing to check there.
      problem = tf.where(full, problem, '')
    reasons = tf.where(reasons == '', problem, reasons)
    features[field.name] = value
  return features, reasons


def _parse_column(field, column):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  type_name = field.type.value
  empty = tf.strings.length(column) == 0
  if field.default is not None:
    column = tf.where(empty, str(field.default), column)
    problem = tf.zeros_like(column)
  else:
    problem = tf.where(empty, f'column {field.name!r} is empty', '')
  if type_name == 'discrete':
    return column, problem
  valid = tf.strings.regex_full_match(column, _NUMBER[type_name])
  problem = tf.where(
      (problem == '') & ~valid,
      tf.strings.join([f'column {field.name!r} is not {_TYPE_NAMES[type_name]}'
                       ': ', tf.strings.substr(column, 0, 40)]),
      problem)
  if type_name == 'integer':
    # to_number fails the whole batch on an integer that overflows int64.
    magnitude = tf.abs(tf.strings.to_number(
        tf.where(valid, tf.strings.strip(column), '0'), out_type=tf.float64))
    in_range = magnitude < _INTEGER_LIMIT
    problem = tf.where(
        (problem == '') & ~in_range,
        tf.strings.join([f'column {field.name!r} is out of the 64-bit integer '
                         'range: ', tf.strings.substr(column, 0, 40)]),
        problem)
    valid &= in_range
  dtype = tf.float32 if type_name == 'real' else tf.int64
  value = tf.strings.to_number(tf.where(valid, tf.strings.strip(column), '0'),
                               out_type=dtype)
  if type_name == 'real':
    problem = tf.where(
        (problem == '') & ~tf.math.is_finite(value),
        tf.strings.join([f'column {field.name!r} is out of the 32-bit real '
                         'range: ', tf.strings.substr(column, 0, 40)]),
        problem)
  return value, problem


def read_rows(path, schema, delimiter=',', skip_header=False,
              skip_bad_records=False, on_bad_record=None):
  """Yields the rows of one CSV file as dicts of Python values.

  Streams the file (bounded memory); used by the Beam analysis.

  Args:
    path: the file.
    schema: the `Schema` of its columns.
    delimiter: the column delimiter.
    skip_header: whether the first line is a header.
    skip_bad_records: whether to skip bad rows instead of raising.
    on_bad_record: called with the message of each skipped row.

  Raises:
    DataError: naming the file and line of the first bad row (unless
      `skip_bad_records`).
  """
  for number, line in _lines(path, skip_header):
    try:
      yield _parse_row(path, number, line, schema, delimiter)
    except DataError as e:
      if not skip_bad_records:
        raise
      if on_bad_record is not None:
        on_bad_record(str(e))


def _lines(path, skip_header):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Bytes, decoded line by line: a line that is not UTF-8 is a bad row.
  with tf.io.gfile.GFile(path, 'rb') as f:
    for number, line in enumerate(f, start=1):
      if number == 1 and skip_header:
        continue
      if not line.rstrip(b'\r\n'):
        continue  # An empty line is not a record.
      yield number, line


def _parse_row(path, number, line, schema, delimiter):
  """The values of one non-blank CSV line; DataError naming file and line."""
  if isinstance(line, bytes):
    try:
      line = line.decode('utf-8')
    except UnicodeDecodeError as e:
      raise DataError(f'{path}:{number}: not UTF-8 text (byte '
                      f'{line[e.start]:#04x} at column {e.start + 1}); save '
                      'the file as UTF-8') from None
  # Python's csv module accepts quoting that decode_csv rejects.
  text = line.rstrip('\r\n')
  if not re.fullmatch(_line_pattern(delimiter), text):
    quotes = text.count('"')
    raise DataError(f'{path}:{number}: {_quote_problem(quotes)}')
  try:
    values = next(csv.reader(io.StringIO(line), delimiter=delimiter,
                             strict=True))
  except csv.Error as e:
    raise DataError(f'{path}:{number}: {e}') from None
  size = len(schema)
  if len(values) != size:
    raise DataError(f'{path}:{number}: expected {size} columns, found '
                    f'{len(values)}')
  return {field.name: _parse_value(field, value, path, number)
          for field, value in zip(schema, values)}


def _parse_value(field, value, path, line):
  type_name = field.type.value
  if not value:
    if field.default is None:
      raise DataError(f'{path}:{line}: column {field.name!r} is empty')
    value = str(field.default)
  if type_name == 'discrete':
    return value
  if not re.fullmatch(_NUMBER[type_name], value, re.ASCII):
    raise DataError(f'{path}:{line}: column {field.name!r} is not '
                    f'{_TYPE_NAMES[type_name]}: {value[:40]}')
  if type_name == 'real':
    number = float(value)
    # TensorFlow reads reals as float32, where larger ones round to inf.
    if not abs(number) < _REAL_LIMIT:
      raise DataError(f'{path}:{line}: column {field.name!r} is out of the '
                      f'32-bit real range: {value[:40]}')
    return number
  if abs(float(value)) >= _INTEGER_LIMIT:
    raise DataError(f'{path}:{line}: column {field.name!r} is out of the '
                    f'64-bit integer range: {value[:40]}')
  return int(value)


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
      self._sources[name] = CsvDataSource(paths, self.schema, delimiter,
                                          skip_header, skip_bad_records)
