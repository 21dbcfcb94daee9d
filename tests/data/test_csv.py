"""Tests of CSV reading: the tf.data reader, parse_lines and read_rows."""

import collections
import re

import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import CsvDataSource
from tensorfx.data import Schema
from tensorfx.data import _missing
from tensorfx.data import _validation
from tensorfx.data._csv import parse_lines
from tensorfx.data._csv import read_rows
from tensorfx.data._validation import assert_valid
from tensorfx.data._validation import data_errors

SCHEMA = Schema.parse("""\
fields:
- name: name
  type: discrete
- name: x
  type: real
- name: n
  type: integer
""")

WITH_DEFAULTS = Schema.parse("""\
fields:
- name: name
  type: discrete
  default: none
- name: x
  type: real
  default: 0.5
- name: n
  type: integer
  default: 7
""")


def _write(directory, name, text):
  path = directory / name
  path.write_text(text)
  return str(path)


def _read(source, batch_size=2, **kwargs):
  """Every record `source.read()` yields, as lists of Python values."""
  columns = collections.defaultdict(list)
  with data_errors():
    for batch in source.read(batch_size, **kwargs):
      for name, values in batch.items():
        columns[name].extend(
          v.decode() if isinstance(v, bytes) else v
          for v in values.numpy().tolist()
        )
  return dict(columns)


def _read_error(source, batch_size=2):
  """The message of the DataError that reading all of `source` raises."""
  with pytest.raises(DataError) as info:
    _read(source, batch_size)
  return str(info.value)


def _rows_error(path, schema=SCHEMA, **kwargs):
  """The message of the DataError that `read_rows` raises on `path`."""
  with pytest.raises(DataError) as info:
    list(read_rows(path, schema, **kwargs))
  return str(info.value)


# Reading.


def test_reads_one_file_in_order_with_schema_dtypes(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,1.5,1\nb,-2,2\nc,3e1,3\n')
  source = CsvDataSource(path, SCHEMA)

  dataset = source.read(batch_size=2)
  assert {k: v.dtype for k, v in dataset.element_spec.items()} == {
    'name': tf.string,
    'x': tf.float32,
    'n': tf.int64,
  }
  assert [len(b['n']) for b in dataset] == [2, 1]
  assert _read(source) == {
    'name': ['a', 'b', 'c'],
    'x': [1.5, -2.0, 30.0],
    'n': [1, 2, 3],
  }


def test_interleaves_several_files_in_the_order_given(tmp_path):
  b = _write(tmp_path, 'b.csv', 'b1,0,1\n')
  a = _write(tmp_path, 'a.csv', 'a1,0,1\na2,0,2\na3,0,3\n')
  source = CsvDataSource([b, a], SCHEMA)

  assert source.files() == [b, a]
  # Files in the order given, one line from each in turn.
  assert _read(source)['name'] == ['b1', 'a1', 'a2', 'a3']


def test_expands_patterns_and_comma_separated_lists(tmp_path):
  (tmp_path / 'parts').mkdir()
  part1 = _write(tmp_path / 'parts', 'part-1.csv', 'p1,0,1\n')
  part0 = _write(tmp_path / 'parts', 'part-0.csv', 'p0,0,0\n')
  (tmp_path / 'parts' / 'part-dir.csv').mkdir()  # Directories are skipped.
  other = _write(tmp_path, 'other.csv', 'o,0,0\n')
  pattern = str(tmp_path / 'parts' / 'part-*.csv')
  source = CsvDataSource(f'{pattern}, {other},{part0}', SCHEMA)

  assert source.files() == [part0, part1, other]  # Duplicates dropped.
  assert _read(source)['name'] == ['p0', 'p1', 'o']


def test_skip_header_skips_the_first_line_of_each_file(tmp_path):
  a = _write(tmp_path, 'a.csv', 'name,x,n\na,1,1\n')
  b = _write(tmp_path, 'b.csv', 'name,x,n\nb,2,2\n')
  dataset = CsvDataSet(SCHEMA, train=[a, b], skip_header=True)

  assert _read(dataset['train']) == {
    'name': ['a', 'b'],
    'x': [1.0, 2.0],
    'n': [1, 2],
  }
  assert [r['name'] for r in read_rows(a, SCHEMA, skip_header=True)] == ['a']


def test_skip_header_still_counts_the_header_line(tmp_path):
  path = _write(tmp_path, 'a.csv', 'name,x,n\na,1,1\nb,oops,2\n')
  dataset = CsvDataSet(SCHEMA, train=path, skip_header=True)

  message = f"{path}:3: column 'x' is not a real number: oops"
  assert _read_error(dataset['train']) == message
  assert _rows_error(path, skip_header=True) == message


def test_empty_lines_are_not_records_but_are_counted(tmp_path):
  path = _write(tmp_path, 'a.csv', '\na,1,1\r\n\r\n\nb,2,2\nc,x,3\n\n\n')
  source = CsvDataSource(path, SCHEMA)

  message = f"{path}:6: column 'x' is not a real number: x"
  assert _read_error(source) == message
  assert _rows_error(path) == message
  path = _write(tmp_path, 'b.csv', '\na,1,1\n\n\nb,2,2\n\n')
  assert _read(CsvDataSource(path, SCHEMA))['name'] == ['a', 'b']
  assert [r['name'] for r in read_rows(path, SCHEMA)] == ['a', 'b']


def test_a_line_of_spaces_is_a_bad_record(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,1,1\n   \nb,2,2\n')

  message = f'{path}:2: expected 3 columns, found 1'
  assert _read_error(CsvDataSource(path, SCHEMA)) == message
  assert _rows_error(path) == message


def test_empty_cells_take_the_field_defaults(tmp_path):
  path = _write(tmp_path, 'a.csv', ',,\n"", 2.5 ,""\nz,,-3\n')

  assert _read(CsvDataSource(path, WITH_DEFAULTS)) == {
    'name': ['none', 'none', 'z'],
    'x': [0.5, 2.5, 0.5],
    'n': [7, 7, -3],
  }
  assert list(read_rows(path, WITH_DEFAULTS)) == [
    {'name': 'none', 'x': 0.5, 'n': 7},
    {'name': 'none', 'x': 2.5, 'n': 7},
    {'name': 'z', 'x': 0.5, 'n': -3},
  ]


def test_spaces_are_text_not_an_empty_cell(tmp_path):
  path = _write(tmp_path, 'a.csv', '  ,1,1\n')
  assert _read(CsvDataSource(path, WITH_DEFAULTS))['name'] == ['  ']
  assert next(read_rows(path, WITH_DEFAULTS))['name'] == '  '
  path = _write(tmp_path, 'b.csv', 'a,1,1\na,  ,1\n')
  message = f"{path}:2: column 'x' is not a real number:   "
  assert _read_error(CsvDataSource(path, WITH_DEFAULTS)) == message
  assert _rows_error(path, WITH_DEFAULTS) == message


def test_quoted_fields_may_hold_the_delimiter_and_quotes(tmp_path):
  path = _write(tmp_path, 'a.csv', '"a,b",1,1\n"say ""hi""","2",3\n"c",3,"4"\n')

  assert _read(CsvDataSource(path, SCHEMA)) == {
    'name': ['a,b', 'say "hi"', 'c'],
    'x': [1.0, 2.0, 3.0],
    'n': [1, 3, 4],
  }
  assert [r['name'] for r in read_rows(path, SCHEMA)] == [
    'a,b',
    'say "hi"',
    'c',
  ]


def test_other_delimiters(tmp_path):
  schema = Schema.parse("""\
fields:
- name: first
  type: discrete
- name: second
  type: discrete
  default: ''
- name: x
  type: real
- name: n
  type: integer
""")
  path = _write(tmp_path, 'a.tsv', 'a\tb\t1\t1\n"c\td"\t\t2\t2\n')
  source = CsvDataSource(path, schema, delimiter='\t')

  assert _read(source) == {
    'first': ['a', 'c\td'],
    'second': ['b', ''],
    'x': [1.0, 2.0],
    'n': [1, 2],
  }
  assert list(read_rows(path, schema, delimiter='\t'))[1] == {
    'first': 'c\td',
    'second': '',
    'x': 2.0,
    'n': 2,
  }
  path = _write(tmp_path, 'a.psv', 'a|1|1\n')
  assert _read(CsvDataSource(path, SCHEMA, delimiter='|'))['x'] == [1.0]


def test_epochs_repeat_the_data(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,1,1\nb,2,2\nc,3,3\n')
  source = CsvDataSource(path, SCHEMA)

  assert _read(source, epochs=3)['name'] == ['a', 'b', 'c'] * 3
  forever = source.read(batch_size=2, epochs=None).take(5)
  assert [b['name'].numpy().tolist() for b in forever][-1] == [b'c', b'a']


def test_shuffle_with_a_seed_is_repeatable(tmp_path):
  rows = ''.join(f'r{i},{i},{i}\n' for i in range(40))
  a = _write(tmp_path, 'a.csv', rows)
  b = _write(tmp_path, 'b.csv', rows.replace('r', 's'))
  source = CsvDataSource([a, b], SCHEMA)

  first = _read(source, batch_size=8, shuffle=True, seed=3, epochs=2)['name']
  again = _read(source, batch_size=8, shuffle=True, seed=3, epochs=2)['name']
  in_order = _read(source, batch_size=8)['name']
  assert first == again
  assert sorted(first[:80]) == sorted(first[80:]) == sorted(in_order)
  assert first[:80] != in_order
  assert first[:80] != first[80:]  # Each epoch in a new order.
  other = _read(source, batch_size=8, shuffle=True, seed=4, epochs=2)['name']
  assert other != first


# Bad records: both readers give the same message, naming file and line.

EMPTY_X = (
  "column 'x' is empty; say what a missing x means in the schema "
  '(missing: mean, median, mode or zero; or default: VALUE), or fix '
  'the data'
)
BAD_RECORDS = [
  ('b,2', 'expected 3 columns, found 2'),
  ('b,2,2,2', 'expected 3 columns, found 4'),
  ('"b,c",2', 'expected 3 columns, found 2'),
  ('b,two,2', "column 'x' is not a real number: two"),
  (
    'b,nan,2',
    "column 'x' is not a real number: nan (if nan means a "
    "missing value, say so: na_values: ['nan'] in the schema, or "
    '--na-values nan)',
  ),
  ('b,2,2.5', "column 'n' is not an integer: 2.5"),
  (
    'b,2,99999999999999999999',
    "column 'n' is out of the 64-bit integer range: 99999999999999999999",
  ),
  ('b,,2', EMPTY_X),
  ('b,"",2', EMPTY_X),
  ('b,2, ', "column 'n' is not an integer:  "),
  ('b,inf,2', "column 'x' is not a real number: inf"),
  ('b,1e39,2', "column 'x' is out of the 32-bit real range: 1e39"),
  ('"b,2,2', 'unbalanced quote'),
  ('b,2,"2', 'unbalanced quote'),
  ('b"c,2,2', 'unbalanced quote'),
  ('"b"c,2,2', 'misplaced quote'),
  ('b, "c",2', 'misplaced quote'),
]
# read() runs a pipeline per case: each kind of problem once.
READ_CASES = (
  'b,2',
  'b,two,2',
  'b,nan,2',
  'b,1e39,2',
  'b,2,99999999999999999999',
  'b,,2',
  '"b,2,2',
  '"b"c,2,2',
)


@pytest.mark.parametrize(
  'line,reason',
  [(line, reason) for line, reason in BAD_RECORDS if line in READ_CASES],
)
def test_read_names_the_file_and_line_of_a_bad_record(tmp_path, line, reason):
  good = _write(tmp_path, 'a.csv', 'a,1,1\n')
  # The bad record is in the second file and the second batch.
  bad = _write(tmp_path, 'b.csv', f'a,1,1\n\na,1,1\n{line}\na,1,1\n')

  assert _read_error(CsvDataSource([good, bad], SCHEMA)) == f'{bad}:4: {reason}'


@pytest.mark.parametrize('line,reason', BAD_RECORDS)
def test_read_rows_names_the_file_and_line_of_a_bad_record(
  tmp_path, line, reason
):
  bad = _write(tmp_path, 'b.csv', f'a,1,1\n\na,1,1\n{line}\na,1,1\n')

  assert _rows_error(bad) == f'{bad}:4: {reason}'


def test_parse_lines_finds_what_read_rows_finds():
  _, reasons = _parse([line for line, _ in BAD_RECORDS] + ['a,1,1'])

  assert reasons == [reason for _, reason in BAD_RECORDS] + ['']


def test_read_reports_the_first_bad_record_of_a_batch(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,1,1\nb,x,2\nc,3\n')

  assert (
    _read_error(CsvDataSource(path, SCHEMA), batch_size=10)
    == f"{path}:2: column 'x' is not a real number: x"
  )


def test_a_pattern_matching_nothing_is_named(tmp_path):
  good = _write(tmp_path, 'a.csv', 'a,1,1\n')
  missing = str(tmp_path / 'missing-*.csv')
  dataset = CsvDataSet(SCHEMA, train=[good, missing])

  with pytest.raises(
    DataError, match=re.escape(f'No data file matches {missing!r}.')
  ):
    dataset['train'].read(batch_size=2)


@pytest.mark.parametrize('delimiter', ['', ',,', '"', '\n', '\r', '\u00a7', 44])
def test_a_bad_delimiter_is_an_error(delimiter):
  with pytest.raises(
    DataError,
    match=re.escape(
      'delimiter must be a single ASCII character other than a quote or '
      f'newline. Received: delimiter={delimiter!r}'
    ),
  ):
    CsvDataSet(SCHEMA, delimiter=delimiter, train='a.csv')


def test_list_fields_and_empty_sources_are_errors():
  schema = Schema.parse('fields:\n- name: v\n  type: real\n  length: 3\n')
  with pytest.raises(DataError, match="field 'v' has length 3"):
    CsvDataSource('a.csv', schema)
  with pytest.raises(DataError, match="Source 'train' has no paths"):
    CsvDataSet(SCHEMA, train=' , ')


# parse_lines: the graph parser, also used for serving CSV.


def _parse(lines, schema=SCHEMA, **kwargs):
  features, reasons = parse_lines(tf.constant(lines), schema, **kwargs)
  values = {
    k: [x.decode() if isinstance(x, bytes) else x for x in v.numpy().tolist()]
    for k, v in features.items()
  }
  return values, [r.decode() for r in reasons.numpy().tolist()]


def test_parse_lines_with_an_optional_target_column():
  features, reasons = _parse(
    ['a,1.5,1', '2.5,2', '3.5', 'b,4.5,4,4', ',5.5,5', 'x,6'],  # 'x,6': x, n.
    _missing.required(SCHEMA, ['name']),
    optional=['name'],
  )

  assert reasons == [
    '',
    '',
    'expected 3 (or 2) columns, found 1',
    'expected 3 (or 2) columns, found 4',
    "column 'name' is empty; every record needs it: fix the "
    'data, or skip such records (--skip-bad-records)',
    "column 'x' is not a real number: x",
  ]
  assert features['name'][:2] == ['a', '']
  assert features['x'][:2] == [1.5, 2.5]
  assert features['n'][:2] == [1, 2]


def test_parse_lines_without_the_optional_column_takes_its_default():
  features, reasons = _parse(
    ['1.5,1', 'b,2.5,2'], WITH_DEFAULTS, optional=['name']
  )

  assert reasons == ['', '']
  assert features == {'name': ['none', 'b'], 'x': [1.5, 2.5], 'n': [1, 2]}


def test_parse_lines_returns_the_fields_asked_for():
  features, reasons = _parse(
    ['a,1.5,1', '2.5,2', '2.5,two'], fields=['x', 'n'], optional=['name']
  )

  assert {k: v[:2] for k, v in features.items()} == {
    'x': [1.5, 2.5],
    'n': [1, 2],
  }
  assert reasons == ['', '', "column 'n' is not an integer: two"]


def test_parse_lines_without_optional_columns_needs_them_all():
  features, reasons = _parse(['a,1.5,1', '1.5,1', '"a,b",2,2'])

  assert reasons == ['', 'expected 3 columns, found 2', '']
  assert features['name'] == ['a', '', 'a,b']


def test_data_errors_gives_the_reason_verbatim():
  # As serving does: a graph function that checks instances, not files.
  @tf.function
  def check(lines):
    _, reasons = parse_lines(lines, SCHEMA)
    numbers = tf.range(1, tf.size(lines, out_type=tf.int64) + 1)
    valid = assert_valid(reasons, tf.fill(tf.shape(lines), 'instance'), numbers)
    with tf.control_dependencies([valid]):
      return tf.identity(lines)

  with pytest.raises(DataError) as info:
    with data_errors():
      check(tf.constant(['a,1,1', 'b,"\u00e9t\u00e9 \\ ""q""",2']))
  assert str(info.value) == (
    'instance:2: column \'x\' is not a real number: \u00e9t\u00e9 \\ "q"'
  )


def test_data_errors_passes_other_tensorflow_errors_through():
  with pytest.raises(tf.errors.InvalidArgumentError, match='boom'):
    with data_errors():
      raise tf.errors.InvalidArgumentError(None, None, 'boom')


# The reader (one typed decode_csv per batch) and the line-by-line checks
# (parse_lines, used when skipping bad records) read the same values.


def test_decoding_and_checking_read_the_same_values(tmp_path):
  lines = [
    'a,1.5,1',
    'b,-2,2',
    'c,3e1,3',
    'd,.5,-4',
    'e,5.,+5',
    '"f",1,1',
    'g, 2.5 ,2',
    'h,3,0000000000000000007',
    '"i,j","4", 4 ',
    '"say ""hi""",1e38,-9223372036854774784',
  ]
  path = _write(tmp_path, 'a.csv', '\n'.join(lines) + '\n')

  expected, reasons = _parse(lines)
  assert reasons == [''] * len(lines)
  assert [r['name'] for r in read_rows(path, SCHEMA)] == expected['name']
  assert _read(CsvDataSource(path, SCHEMA), batch_size=4) == expected
  assert (
    _read(CsvDataSource(path, SCHEMA, skip_bad_records=True), batch_size=4)
    == expected
  )


def test_empty_cells_take_defaults_when_skipping_bad_records(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,,1\n,2,\n,,\n')

  source = CsvDataSource(path, WITH_DEFAULTS, skip_bad_records=True)
  assert _read(source, batch_size=10) == {
    'name': ['a', 'none', 'none'],
    'x': [0.5, 2.0, 0.5],
    'n': [1, 7, 7],
  }


def test_a_bad_record_is_named_when_shuffled(tmp_path):
  rows = ''.join(f'r{i},{i},{i}\n' for i in range(50))
  good = _write(tmp_path, 'a.csv', rows)
  bad = _write(tmp_path, 'b.csv', rows + 'r,oops,1\n' + rows)
  source = CsvDataSource([good, bad], SCHEMA)

  with pytest.raises(DataError) as info:
    _read(source, batch_size=16, shuffle=True, epochs=None)
  assert str(info.value) == f"{bad}:51: column 'x' is not a real number: oops"


def test_an_unlocated_bad_record_still_says_what_is_wrong():
  @tf.function
  def check(lines):
    _, reasons = parse_lines(lines, SCHEMA)
    valid = _validation.assert_valid_records(reasons, lines)
    with tf.control_dependencies([valid]):
      return tf.identity(lines)

  with pytest.raises(DataError) as info:
    with data_errors():
      check(tf.constant(['a,1,1', 'nowhere,x,1']))
  assert str(info.value) == (
    "column 'x' is not a real number: x (record: 'nowhere,x,1')"
  )


# Skipping bad records.

MIXED = 'a,1,1\nb,two,2\n\nc,3,3\nd,4\ne,5,5\n"f,6,6\n'


def test_skip_bad_records_drops_and_counts_them(tmp_path):
  path = _write(tmp_path, 'a.csv', MIXED)
  dataset = CsvDataSet(SCHEMA, train=path, skip_bad_records=True)
  source = dataset['train']

  assert source.bad_records == 0
  assert _read(source, batch_size=2) == {
    'name': ['a', 'c', 'e'],
    'x': [1.0, 3.0, 5.0],
    'n': [1, 3, 5],
  }
  assert source.bad_records == 3
  _read(source, batch_size=10, epochs=2)
  assert source.bad_records == 9  # A running count, over every read.
  assert CsvDataSet(SCHEMA, train=path)['train'].bad_records == 0


def test_a_batch_of_bad_records_only_is_not_read(tmp_path):
  path = _write(tmp_path, 'a.csv', 'x,y,z\nx,y,z\na,1,1\n')
  source = CsvDataSource(path, SCHEMA, skip_bad_records=True)

  assert [len(b['n']) for b in source.read(batch_size=2)] == [1]
  assert source.bad_records == 2


def test_read_rows_skips_bad_records_and_reports_them(tmp_path):
  path = _write(tmp_path, 'a.csv', MIXED)
  skipped = []

  rows = list(
    read_rows(path, SCHEMA, skip_bad_records=True, on_bad_record=skipped.append)
  )
  assert [r['name'] for r in rows] == ['a', 'c', 'e']
  assert skipped == [
    f"{path}:2: column 'x' is not a real number: two",
    f'{path}:5: expected 3 columns, found 2',
    f'{path}:7: unbalanced quote',
  ]


def test_skip_bad_records_must_be_a_bool():
  with pytest.raises(
    DataError,
    match='skip_bad_records must be True or '
    "False. Received: skip_bad_records='yes'",
  ):
    CsvDataSet(SCHEMA, train='a.csv', skip_bad_records='yes')


@pytest.mark.slow
def test_analysis_skips_and_logs_bad_records(tmp_path):
  import logging
  import os

  iris = os.path.join(
    os.path.dirname(
      os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ),
    'samples',
    'iris',
  )
  path = _write(
    tmp_path,
    'train.csv',
    'setosa,5.1,3.5,1.4,0.2\nsetosa,4.9,3.0,wide,0.2\n'
    'virginica,6.3,3.3,6,2.5\nvirginica,1,2\n',
  )
  dataset = CsvDataSet(
    os.path.join(iris, 'schema.yaml'),
    features=os.path.join(iris, 'features.yaml'),
    train=path,
    skip_bad_records=True,
  )
  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logger = logging.getLogger('tensorfx')
  logger.addHandler(handler)
  level = logger.level
  logger.setLevel(logging.INFO)
  try:
    metadata = dataset.analyze(str(tmp_path / 'analysis'))
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)

  assert metadata.instances == 2
  messages = [r.getMessage() for r in records]
  assert 'Skipped 2 bad records of train' in messages
  assert (
    f"Skipping a bad record: {path}:2: column 'petal_length' is not a "
    'real number: wide'
  ) in messages
