"""The rules of a CSV record, in TensorFlow (`parse_lines`) and Python.

Quoting must be well formed (a quoted field is quoted from its first to its
last character, inner quotes doubled), the column count must match the
schema (quoted fields may contain the delimiter), numeric cells must parse
(surrounding spaces allowed; integers within 64 bits, reals finite as 32-bit
floats), and an empty cell (nothing between the delimiters, or `""`) is a
missing value: it takes the field's fill value (see `_missing`), or makes the
record bad. So is a cell equal to one of the field's `na_values` (e.g.
`NA`). Where a real field's missing values are imputed, a `nan` cell is
missing too. With `strip`, spaces around each cell are dropped first (a
discrete value keeps them otherwise). Empty lines are not records.

The columns of a line are the schema's fields in order, or, for a file with
a header (see `_csvheader`), `columns`: a field name or None (a column
ignored) per column, in the file's order. These are the rules of
`tf.io.decode_csv` with typed defaults, which is what lets the fast
TensorFlow reader (`CsvDataSource`) agree with these two.
"""

import csv
import io
import re

from tensorfx._errors import DataError
from tensorfx.data import _missing

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
# A failure of tf.io.decode_csv: its node, or what it says about a bad row.
DECODE_ERROR = re.compile(
  r'\bDecodeCSV\b|Expect \d+ fields but have|is not a valid (float|int64)|'
  r'is required but missing in record|Unquoted fields cannot have quotes|'
  r'Quote inside a string has to be escaped|Quoted field has to end'
)


def line_pattern(delimiter):
  """A regex (RE2 and Python) matching a line whose quoting is well formed.

  Each field is either unquoted, without quotes, or quoted from its first to
  its last character with inner quotes doubled: what `tf.io.decode_csv`
  accepts. Anything else would fail a whole batch inside decode_csv.
  """
  d = re.escape(delimiter)
  field = f'(?:[^"{d}]*|"(?:[^"]|"")*")'
  return f'{field}(?:{d}{field})*'


def quote_problem(quotes):
  """The reason for a badly quoted line with `quotes` quote characters."""
  return 'unbalanced quote' if quotes % 2 else 'misplaced quote'


def empty_problem(field):
  """What is wrong with a record whose cell of a required field is empty."""
  return f'column {field.name!r} is empty; {_missing.hint(field)}'


# Texts that often stand for a missing value (R, pandas, UCI, SQL dumps).
_COMMON_TOKENS = (
  'NA',
  'N/A',
  'NaN',
  'nan',
  '?',
  'NULL',
  'null',
  '\\N',
  'None',
  '-',
  '.',
)


def token_hint(value):
  """How to declare `value` missing, when it looks like a missing-value token."""
  token = value.strip()
  if token not in _COMMON_TOKENS:
    return ''
  return (
    f' (if {token} means a missing value, say so: na_values: '
    f"['{token}'] in the schema, or --na-values {token})"
  )


def text_parsed(field, strip=False):
  """Whether the fast reader decodes `field` as text and checks it itself.

  `tf.io.decode_csv` knows the empty cell only: tokens and stripped text
  are this module's rules.
  """
  return bool(field.na_values) or (strip and field.type.value == 'discrete')


def _names(schema, columns):
  """The field name (or None: ignored) of each column of a line."""
  return tuple(columns) if columns is not None else schema.field_names


def nan_is_missing(field):
  """Whether a `nan` cell of `field` is a missing value (not an error)."""
  # A NaN default (a task's absent target) is the missing value too.
  return field.type.value == 'real' and (
    _missing.imputed(field) or _missing.is_nan(field.default)
  )


def dtype(field):
  import tensorflow as tf

  return {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}[
    field.type.value
  ]


def decode_lines(lines, schema, delimiter=',', columns=None, strip=False):
  """Decodes a batch of lines as a hand-written pipeline would.

  One typed `tf.io.decode_csv` call (empty lines dropped): the fast reader.
  A bad line fails the call (or the check that reals are finite, or of a
  field decoded as text: see `text_parsed`); the caller then finds it by
  these rules, in Python.

  Args:
    lines: [B] string tensor.
    schema: the `Schema`.
    delimiter: the column delimiter.
    columns: the field name (or None) of each column; default the schema's
      fields in order.
    strip: whether spaces around cells are dropped.

  Returns:
    A dict of [B'] tensors by field name, B' the non-empty lines.
  """
  import tensorflow as tf

  from tensorfx.data import _validation

  lines = tf.boolean_mask(lines, tf.strings.length(lines) > 0)
  names = _names(schema, columns)
  defaults = []
  for name in names:
    field = schema[name] if name is not None else None
    if field is None or text_parsed(field, strip):
      defaults.append(tf.constant([''], tf.string))
      continue
    # An empty default tensor makes the field required.
    fill = _missing.fill_value(field)
    defaults.append(tf.constant([] if fill is None else [fill], dtype(field)))
  decoded = tf.io.decode_csv(
    lines, defaults, field_delim=delimiter, use_quote_delim=True
  )
  features = {n: c for n, c in zip(names, decoded) if n is not None}
  reasons = None
  for field in schema:
    if text_parsed(field, strip):
      features[field.name], problem = _parse_column(
        field, features[field.name], strip
      )
      reasons = (
        problem
        if reasons is None
        else tf.where(reasons == '', problem, reasons)
      )
  if reasons is not None:
    # Stateful: it runs without a dependency, as the check below.
    _validation.assert_valid_records(reasons, lines)
  reals = []
  for field in schema:
    if field.type.value != 'real' or text_parsed(field, strip):
      continue
    value = features[field.name]
    if nan_is_missing(field):
      # NaN is the missing value (an empty or `nan` cell); inf is not.
      value = tf.where(tf.math.is_nan(value), tf.zeros_like(value), value)
    reals.append(value)
  if not reals:
    return features
  # decode_csv reads 'nan', 'inf' and overflows to inf; the rules do not.
  finite = tf.reduce_all(tf.math.is_finite(tf.stack(reals, axis=1)), axis=1)
  # Stateful, so it runs in a tf.data or tf.function graph without a
  # dependency.
  _validation.assert_records(
    finite, lines, 'a real is not a finite 32-bit number'
  )
  return features


def parse_lines(
  lines,
  schema,
  delimiter=',',
  fields=None,
  optional=(),
  columns=None,
  strip=False,
):
  """Parses a batch of CSV lines into raw features, in the graph.

  Args:
    lines: [B] string tensor.
    schema: the `Schema`; lines hold its fields in order (or `columns`).
    delimiter: the column delimiter.
    fields: the names of the fields to return (default all).
    optional: names of fields whose columns a line may leave out altogether
      (e.g. the target, when serving); such a line has that many fewer
      columns. A line has either all columns or none of these; where it
      leaves them out, their values are their fill values (or empty strings
      and zeros), without checks.
    columns: the field name (or None: ignored) of each column, in the
      file's order (a header's); not with `optional`.
    strip: whether spaces around cells are dropped.

  Returns:
    `(features, reasons)`: a dict of [B] tensors, and [B] strings that are
    empty for good lines and say what is wrong with bad ones.
  """
  import tensorflow as tf

  names = _names(schema, columns)
  size = len(names)
  optional = set(optional)
  short_fields = [f for f in schema if f.name not in optional]
  short = len(short_fields)
  # A badly quoted line is reported as such (its column count means nothing)
  # and never reaches decode_csv, which would fail the whole batch.
  well_formed = tf.strings.regex_full_match(lines, line_pattern(delimiter))
  quotes = tf.strings.length(lines) - tf.strings.length(
    tf.strings.regex_replace(lines, '"', '')
  )
  # Quoted sections may hold the delimiter: take them out before counting.
  unquoted = tf.strings.regex_replace(lines, r'"([^"]|"")*"', 'q')
  counts = (
    tf.strings.length(unquoted)
    - tf.strings.length(
      tf.strings.regex_replace(unquoted, re.escape(delimiter), '')
    )
    + 1
  )
  full = counts == size
  partial = (counts == short) if optional else tf.zeros_like(full)
  expected = f'{size}' if not optional else f'{size} (or {short})'
  reasons = tf.where(
    ~well_formed,
    # The pattern fails on quoting, or on bytes that are not UTF-8.
    tf.where(
      quotes % 2 == 1,
      quote_problem(1),
      tf.where(quotes > 0, quote_problem(0), 'not UTF-8 text'),
    ),
    tf.where(
      ~full & ~partial,
      tf.strings.join(
        [f'expected {expected} columns, found ', tf.strings.as_string(counts)]
      ),
      '',
    ),
  )
  good = reasons == ''
  # decode_csv fails a whole batch on one bad line: give it harmless ones.
  columns = dict(
    zip(
      names,
      tf.io.decode_csv(
        tf.where(good & full, lines, delimiter * (size - 1)),
        record_defaults=[['']] * size,
        field_delim=delimiter,
        use_quote_delim=True,
      ),
    )
  )
  if optional:
    short_columns = dict(
      zip(
        [f.name for f in short_fields],
        tf.io.decode_csv(
          tf.where(good & partial, lines, delimiter * (short - 1)),
          record_defaults=[['']] * short,
          field_delim=delimiter,
          use_quote_delim=True,
        ),
      )
    )
    for name, column in short_columns.items():
      columns[name] = tf.where(full, columns[name], column)
  features = {}
  wanted = set(fields) if fields is not None else None
  for field in schema:
    if wanted is not None and field.name not in wanted:
      continue
    value, problem = _parse_column(field, columns[field.name], strip)
    if field.name in optional:
      # A line that leaves the column out has nothing to check there.
      problem = tf.where(full, problem, '')
    reasons = tf.where(reasons == '', problem, reasons)
    features[field.name] = value
  return features, reasons


def _token_hints(column):
  """`token_hint` of each cell of a [B] string tensor, in the graph."""
  import tensorflow as tf

  token = tf.strings.strip(column)
  hints = tf.zeros_like(column)
  for common in _COMMON_TOKENS:
    hints = tf.where(tf.equal(token, common), token_hint(common), hints)
  return hints


def _parse_column(field, column, strip=False):
  import tensorflow as tf

  type_name = field.type.value
  if strip:
    column = tf.strings.strip(column)
  empty = tf.strings.length(column) == 0
  for token in field.na_values:
    empty |= tf.equal(column, token)
  if nan_is_missing(field):
    empty |= tf.strings.regex_full_match(column, _missing.NAN_TEXT)
  fill = _missing.fill_value(field)
  if fill is None:
    problem = tf.where(empty, empty_problem(field), '')
  else:
    problem = tf.zeros_like(column)
  if type_name == 'discrete':
    return (column if fill is None else tf.where(empty, fill, column)), problem
  valid = tf.strings.regex_full_match(column, _NUMBER[type_name])
  problem = tf.where(
    ~empty & ~valid,
    tf.strings.join(
      [
        f'column {field.name!r} is not {_TYPE_NAMES[type_name]}: ',
        tf.strings.substr(column, 0, 40),
        _token_hints(column),
      ]
    ),
    problem,
  )
  if type_name == 'integer':
    # to_number fails the whole batch on an integer that overflows int64.
    magnitude = tf.abs(
      tf.strings.to_number(
        tf.where(valid, tf.strings.strip(column), '0'), out_type=tf.float64
      )
    )
    in_range = magnitude < _INTEGER_LIMIT
    problem = tf.where(
      ~empty & valid & ~in_range,
      tf.strings.join(
        [
          f'column {field.name!r} is out of the 64-bit integer range: ',
          tf.strings.substr(column, 0, 40),
        ]
      ),
      problem,
    )
    valid &= in_range
  number_type = dtype(field)
  value = tf.strings.to_number(
    tf.where(valid, tf.strings.strip(column), '0'), out_type=number_type
  )
  if type_name == 'real':
    problem = tf.where(
      ~empty & valid & ~tf.math.is_finite(value),
      tf.strings.join(
        [
          f'column {field.name!r} is out of the 32-bit real range: ',
          tf.strings.substr(column, 0, 40),
        ]
      ),
      problem,
    )
  if fill is not None:
    value = tf.where(empty, tf.constant(fill, number_type), value)
  return value, problem


def read_rows(
  path,
  schema,
  delimiter=',',
  skip_header=False,
  skip_bad_records=False,
  on_bad_record=None,
  columns=None,
  strip=False,
):
  """Yields the rows of one CSV file as dicts of Python values.

  Streams the file (bounded memory); what finds the file and line of a bad
  row once a TensorFlow reader has failed.

  Args:
    path: the file.
    schema: the `Schema` of its columns.
    delimiter: the column delimiter.
    skip_header: whether the first line is a header.
    skip_bad_records: whether to skip bad rows instead of raising.
    on_bad_record: called with the message of each skipped row.
    columns: the field name (or None) of each column (see `_csvheader`).
    strip: whether spaces around cells are dropped.

  Raises:
    DataError: naming the file and line of the first bad row (unless
      `skip_bad_records`).
  """
  for number, line in _lines(path, skip_header):
    try:
      yield parse_row(path, number, line, schema, delimiter, columns, strip)
    except DataError as e:
      if not skip_bad_records:
        raise
      if on_bad_record is not None:
        on_bad_record(str(e))


def _lines(path, skip_header):
  import tensorflow as tf

  # Bytes, decoded line by line: a line that is not UTF-8 is a bad row.
  with tf.io.gfile.GFile(path, 'rb') as f:
    for number, line in enumerate(f, start=1):
      if number == 1 and skip_header:
        continue
      if not line.rstrip(b'\r\n'):
        continue  # An empty line is not a record.
      yield number, line


def parse_row(path, number, line, schema, delimiter, columns=None, strip=False):
  """The values of one non-blank CSV line; DataError naming file and line."""
  if isinstance(line, bytes):
    try:
      line = line.decode('utf-8')
    except UnicodeDecodeError as e:
      raise DataError(
        f'{path}:{number}: not UTF-8 text (byte '
        f'{line[e.start]:#04x} at column {e.start + 1}); save '
        'the file as UTF-8'
      ) from None
  # Python's csv module accepts quoting that decode_csv rejects.
  text = line.rstrip('\r\n')
  if not re.fullmatch(line_pattern(delimiter), text):
    quotes = text.count('"')
    raise DataError(f'{path}:{number}: {quote_problem(quotes)}')
  try:
    values = next(
      csv.reader(io.StringIO(line), delimiter=delimiter, strict=True)
    )
  except csv.Error as e:
    raise DataError(f'{path}:{number}: {e}') from None
  names = _names(schema, columns)
  size = len(names)
  if len(values) != size:
    raise DataError(
      f'{path}:{number}: expected {size} columns, found {len(values)}'
    )
  cells = dict(zip(names, values))
  return {
    field.name: _parse_value(field, cells[field.name], path, number, strip)
    for field in schema
  }


def _parse_value(field, value, path, line, strip=False):
  type_name = field.type.value
  if strip:
    value = value.strip()
  if (
    not value
    or value in field.na_values
    or (nan_is_missing(field) and re.fullmatch(_missing.NAN_TEXT, value))
  ):
    fill = _missing.fill_value(field)
    if fill is None:
      raise DataError(f'{path}:{line}: {empty_problem(field)}')
    return fill
  if type_name == 'discrete':
    return value
  if not re.fullmatch(_NUMBER[type_name], value, re.ASCII):
    raise DataError(
      f'{path}:{line}: column {field.name!r} is not '
      f'{_TYPE_NAMES[type_name]}: {value[:40]}'
      f'{token_hint(value)}'
    )
  if type_name == 'real':
    number = float(value)
    # TensorFlow reads reals as float32, where larger ones round to inf.
    if not abs(number) < _REAL_LIMIT:
      raise DataError(
        f'{path}:{line}: column {field.name!r} is out of the '
        f'32-bit real range: {value[:40]}'
      )
    return number
  if abs(float(value)) >= _INTEGER_LIMIT:
    raise DataError(
      f'{path}:{line}: column {field.name!r} is out of the '
      f'64-bit integer range: {value[:40]}'
    )
  return int(value)
