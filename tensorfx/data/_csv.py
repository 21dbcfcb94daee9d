"""CSV data: reading files into batches of raw features, in TensorFlow and Beam.

Both readers apply the same rules, so analysis and training accept and
reject the same rows: quoting must be well formed (a quoted field is quoted
from its first to its last character, inner quotes doubled), the column count
must match the schema (quoted fields may contain the delimiter), numeric
cells must parse (integers within 64 bits), and an empty cell takes the
field's default or is an error. Errors name the file and line.
"""

import csv
import io
import re

from tensorfx._errors import DataError
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

  Args:
    paths: a path, a file pattern, a comma-separated list or a sequence of
      them; local or any `tf.io.gfile` filesystem (`gs://`).
    schema: the `Schema` of the columns.
    delimiter: the one-character column delimiter.
    skip_header: whether each file starts with a header line to skip.
  """

  def __init__(self, paths, schema, delimiter=',', skip_header=False):
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
    self.delimiter = delimiter
    self.skip_header = skip_header

  def read(self, batch_size, epochs=1, shuffle=False, seed=None,
           shuffle_buffer=10000):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    files = self.files()
    deterministic = not shuffle or seed is not None
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle and len(files) > 1:
      ds = ds.shuffle(len(files), seed=seed)
    skip = 1 if self.skip_header else 0

    def lines_of(path):
      lines = tf.data.TextLineDataset(path).enumerate(start=1).skip(skip)
      return lines.map(lambda n, line: (path, n, line))

    ds = ds.interleave(lines_of, cycle_length=min(len(files), 16),
                       num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=deterministic)
    # Blank lines (a trailing newline, a spacer) are not records.
    ds = ds.filter(lambda p, n, line: tf.strings.length(
        tf.strings.strip(line)) > 0)
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = ds.repeat(epochs)
    ds = ds.batch(batch_size)
    ds = ds.map(self._parse_batch, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic)
    return ds.prefetch(tf.data.AUTOTUNE)

  def _parse_batch(self, paths, numbers, lines):
    features, reasons = parse_lines(lines, self.schema, self.delimiter)
    check = _validation.assert_valid(reasons, paths, numbers)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    with tf.control_dependencies([check]):
      return {k: tf.identity(v) for k, v in features.items()}

  def beam_source(self, pipeline, label='ReadCsv'):
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    files = self.files()
    schema, delimiter, skip = self.schema, self.delimiter, self.skip_header
    return (pipeline
            | f'{label}Files' >> beam.Create(files)
            | f'{label}Rows' >> beam.FlatMap(
                lambda path: read_rows(path, schema, delimiter, skip)))


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
      tf.where(quotes % 2 == 1, _quote_problem(1), _quote_problem(0)),
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
  empty = tf.strings.length(tf.strings.strip(column)) == 0
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
  return value, problem


def read_rows(path, schema, delimiter=',', skip_header=False):
  """Yields the rows of one CSV file as dicts of Python values.

  Streams the file (bounded memory); used by the Beam analysis.

  Raises:
    DataError: naming the file and line of the first bad row.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  size = len(schema)
  well_formed = re.compile(_line_pattern(delimiter))
  with tf.io.gfile.GFile(path, 'r') as f:
    for number, line in enumerate(f, start=1):
      if number == 1 and skip_header:
        continue
      if not line.strip():
        continue
      # Python's csv module accepts quoting that decode_csv rejects.
      text = line.rstrip('\r\n')
      if not well_formed.fullmatch(text):
        quotes = text.count('"')
        raise DataError(f'{path}:{number}: {_quote_problem(quotes)}')
      try:
        values = next(csv.reader(io.StringIO(line), delimiter=delimiter,
                                 strict=True))
      except csv.Error as e:
        raise DataError(f'{path}:{number}: {e}') from None
      if len(values) != size:
        raise DataError(f'{path}:{number}: expected {size} columns, found '
                        f'{len(values)}')
      yield {field.name: _parse_value(field, value, path, number)
             for field, value in zip(schema, values)}


def _parse_value(field, value, path, number):
  type_name = field.type.value
  if not value.strip():
    if field.default is None:
      raise DataError(f'{path}:{number}: column {field.name!r} is empty')
    value = str(field.default)
  if type_name == 'discrete':
    return value
  if not re.fullmatch(_NUMBER[type_name], value, re.ASCII):
    raise DataError(f'{path}:{number}: column {field.name!r} is not '
                    f'{_TYPE_NAMES[type_name]}: {value[:40]}')
  if type_name == 'real':
    return float(value)
  if abs(float(value)) >= _INTEGER_LIMIT:
    raise DataError(f'{path}:{number}: column {field.name!r} is out of the '
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
    **sources: named sources (`train=`, `eval=`, ...), each a path, pattern
      or list of them.
  """

  def __init__(self, schema, metadata=None, features=None, delimiter=',',
               skip_header=False, **sources):
    super().__init__(schema, metadata=metadata, features=features)
    for name, paths in sources.items():
      if paths is None:
        continue
      if not _paths.as_list(paths):
        raise DataError(f'Source {name!r} has no paths. Received: {paths!r}')
      self._sources[name] = CsvDataSource(paths, self.schema, delimiter,
                                          skip_header)
