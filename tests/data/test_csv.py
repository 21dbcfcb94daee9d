"""Tests of CSV reading: the tf.data reader, parse_lines and read_rows."""

import collections
import re

import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import CsvDataSource
from tensorfx.data import Schema
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
            for v in values.numpy().tolist())
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
      'name': tf.string, 'x': tf.float32, 'n': tf.int64}
  assert [len(b['n']) for b in dataset] == [2, 1]
  assert _read(source) == {'name': ['a', 'b', 'c'], 'x': [1.5, -2.0, 30.0],
                           'n': [1, 2, 3]}


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

  assert _read(dataset['train']) == {'name': ['a', 'b'], 'x': [1.0, 2.0],
                                     'n': [1, 2]}
  assert [r['name'] for r in read_rows(a, SCHEMA, skip_header=True)] == ['a']


def test_skip_header_still_counts_the_header_line(tmp_path):
  path = _write(tmp_path, 'a.csv', 'name,x,n\na,1,1\nb,oops,2\n')
  dataset = CsvDataSet(SCHEMA, train=path, skip_header=True)

  message = f"{path}:3: column 'x' is not a real number: oops"
  assert _read_error(dataset['train']) == message
  assert _rows_error(path, skip_header=True) == message


def test_blank_lines_are_not_records_but_are_counted(tmp_path):
  path = _write(tmp_path, 'a.csv', '\na,1,1\n   \n\nb,2,2\nc,x,3\n\n\n')
  source = CsvDataSource(path, SCHEMA)

  message = f"{path}:6: column 'x' is not a real number: x"
  assert _read_error(source) == message
  assert _rows_error(path) == message
  path = _write(tmp_path, 'b.csv', '\na,1,1\n   \n\nb,2,2\n\n')
  assert _read(CsvDataSource(path, SCHEMA))['name'] == ['a', 'b']
  assert [r['name'] for r in read_rows(path, SCHEMA)] == ['a', 'b']


def test_empty_cells_take_the_field_defaults(tmp_path):
  path = _write(tmp_path, 'a.csv', ',,\n  , 2.5 , \nz,,-3\n')

  assert _read(CsvDataSource(path, WITH_DEFAULTS)) == {
      'name': ['none', 'none', 'z'], 'x': [0.5, 2.5, 0.5], 'n': [7, 7, -3]}
  assert list(read_rows(path, WITH_DEFAULTS)) == [
      {'name': 'none', 'x': 0.5, 'n': 7},
      {'name': 'none', 'x': 2.5, 'n': 7},
      {'name': 'z', 'x': 0.5, 'n': -3}]


def test_quoted_fields_may_hold_the_delimiter_and_quotes(tmp_path):
  path = _write(tmp_path, 'a.csv', '"a,b",1,1\n"say ""hi""","2",3\n"c",3,"4"\n')

  assert _read(CsvDataSource(path, SCHEMA)) == {
      'name': ['a,b', 'say "hi"', 'c'], 'x': [1.0, 2.0, 3.0], 'n': [1, 3, 4]}
  assert [r['name'] for r in read_rows(path, SCHEMA)] == [
      'a,b', 'say "hi"', 'c']


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

  assert _read(source) == {'first': ['a', 'c\td'], 'second': ['b', ''],
                           'x': [1.0, 2.0], 'n': [1, 2]}
  assert list(read_rows(path, schema, delimiter='\t'))[1] == {
      'first': 'c\td', 'second': '', 'x': 2.0, 'n': 2}
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

BAD_RECORDS = [
    ('b,2', 'expected 3 columns, found 2'),
    ('b,2,2,2', 'expected 3 columns, found 4'),
    ('"b,c",2', 'expected 3 columns, found 2'),
    ('b,two,2', "column 'x' is not a real number: two"),
    ('b,nan,2', "column 'x' is not a real number: nan"),
    ('b,2,2.5', "column 'n' is not an integer: 2.5"),
    ('b,2,99999999999999999999',
     "column 'n' is out of the 64-bit integer range: 99999999999999999999"),
    ('b,,2', "column 'x' is empty"),
    (',2,2', "column 'name' is empty"),
    ('b,2, ', "column 'n' is empty"),
    ('"b,2,2', 'unbalanced quote'),
    ('b,2,"2', 'unbalanced quote'),
    ('b"c,2,2', 'unbalanced quote'),
    ('"b"c,2,2', 'misplaced quote'),
    ('b, "c",2', 'misplaced quote'),
]
# read() runs a pipeline per case: each kind of problem once.
READ_CASES = ('b,2', 'b,two,2', 'b,2,99999999999999999999', 'b,,2', '"b,2,2',
              '"b"c,2,2')


@pytest.mark.parametrize('line,reason', [
    (line, reason) for line, reason in BAD_RECORDS if line in READ_CASES])
def test_read_names_the_file_and_line_of_a_bad_record(tmp_path, line, reason):
  good = _write(tmp_path, 'a.csv', 'a,1,1\n')
  # The bad record is in the second file and the second batch.
  bad = _write(tmp_path, 'b.csv', f'a,1,1\n\na,1,1\n{line}\na,1,1\n')

  assert _read_error(CsvDataSource([good, bad], SCHEMA)) == \
      f'{bad}:4: {reason}'


@pytest.mark.parametrize('line,reason', BAD_RECORDS)
def test_read_rows_names_the_file_and_line_of_a_bad_record(tmp_path, line,
                                                           reason):
  bad = _write(tmp_path, 'b.csv', f'a,1,1\n\na,1,1\n{line}\na,1,1\n')

  assert _rows_error(bad) == f'{bad}:4: {reason}'


def test_parse_lines_finds_what_read_rows_finds():
  _, reasons = _parse([line for line, _ in BAD_RECORDS] + ['a,1,1'])

  assert reasons == [reason for _, reason in BAD_RECORDS] + ['']


def test_read_reports_the_first_bad_record_of_a_batch(tmp_path):
  path = _write(tmp_path, 'a.csv', 'a,1,1\nb,x,2\nc,3\n')

  assert _read_error(CsvDataSource(path, SCHEMA), batch_size=10) == \
      f"{path}:2: column 'x' is not a real number: x"


def test_a_pattern_matching_nothing_is_named(tmp_path):
  good = _write(tmp_path, 'a.csv', 'a,1,1\n')
  missing = str(tmp_path / 'missing-*.csv')
  dataset = CsvDataSet(SCHEMA, train=[good, missing])

  with pytest.raises(DataError, match=re.escape(
      f'No data file matches {missing!r}.')):
    dataset['train'].read(batch_size=2)


@pytest.mark.parametrize('delimiter', ['', ',,', '"', '\n', '\r', '\u00a7',
                                       44])
def test_a_bad_delimiter_is_an_error(delimiter):
  with pytest.raises(DataError, match=re.escape(
      'delimiter must be a single ASCII character other than a quote or '
      f'newline. Received: delimiter={delimiter!r}')):
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
  values = {k: [x.decode() if isinstance(x, bytes) else x
                for x in v.numpy().tolist()] for k, v in features.items()}
  return values, [r.decode() for r in reasons.numpy().tolist()]


def test_parse_lines_with_an_optional_target_column():
  features, reasons = _parse(
      ['a,1.5,1', '2.5,2', '3.5', 'b,4.5,4,4', ',5.5,5', 'x,6'],  # 'x,6': x, n.
      optional=['name'])

  assert reasons == ['', '', 'expected 3 (or 2) columns, found 1',
                     'expected 3 (or 2) columns, found 4',
                     "column 'name' is empty",
                     "column 'x' is not a real number: x"]
  assert features['name'][:2] == ['a', '']
  assert features['x'][:2] == [1.5, 2.5]
  assert features['n'][:2] == [1, 2]


def test_parse_lines_without_the_optional_column_takes_its_default():
  features, reasons = _parse(['1.5,1', 'b,2.5,2'], WITH_DEFAULTS,
                             optional=['name'])

  assert reasons == ['', '']
  assert features == {'name': ['none', 'b'], 'x': [1.5, 2.5], 'n': [1, 2]}


def test_parse_lines_returns_the_fields_asked_for():
  features, reasons = _parse(['a,1.5,1', '2.5,2', '2.5,two'],
                             fields=['x', 'n'], optional=['name'])

  assert {k: v[:2] for k, v in features.items()} == {'x': [1.5, 2.5],
                                                     'n': [1, 2]}
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
    valid = assert_valid(reasons, tf.fill(tf.shape(lines), 'instance'),
                         numbers)
    with tf.control_dependencies([valid]):
      return tf.identity(lines)

  with pytest.raises(DataError) as info:
    with data_errors():
      check(tf.constant(['a,1,1', 'b,"\u00e9t\u00e9 \\ ""q""",2']))
  assert str(info.value) == (
      'instance:2: column \'x\' is not a real number: \u00e9t\u00e9 \\ "q"')


def test_data_errors_passes_other_tensorflow_errors_through():
  with pytest.raises(tf.errors.InvalidArgumentError, match='boom'):
    with data_errors():
      raise tf.errors.InvalidArgumentError(None, None, 'boom')
