"""CSV files with a header: columns matched to the schema by name."""

import collections
import logging

import apache_beam as beam
from apache_beam.testing.util import assert_that
import pytest

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import Schema
from tensorfx.data import _csvheader
from tensorfx.data._validation import data_errors

SCHEMA = Schema.parse("""\
fields:
- {name: name, type: discrete}
- {name: x, type: real}
- {name: n, type: integer}
""")


def _write(directory, name, text):
  path = directory / name
  path.write_text(text)
  return str(path)


def _read(dataset, source='train', **kwargs):
  columns = collections.defaultdict(list)
  with data_errors():
    for batch in dataset[source].read(2, **kwargs):
      for name, values in batch.items():
        columns[name].extend(
          v.decode() if isinstance(v, bytes) else v
          for v in values.numpy().tolist()
        )
  return dict(columns)


def test_columns_are_matched_by_name_in_any_order(tmp_path):
  path = _write(tmp_path, 'a.csv', 'n,x,name\n1,0.5,a\n2,1.5,b\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=path)
  assert _read(dataset) == {'name': ['a', 'b'], 'x': [0.5, 1.5], 'n': [1, 2]}


def test_extra_columns_are_ignored_and_logged_once(tmp_path, caplog):
  first = _write(tmp_path, 'a.csv', 'id,name,x,n,note\n7,a,0.5,1,"x,y"\n')
  second = _write(tmp_path, 'b.csv', 'id,name,x,n,note\n8,b,1.5,2,z\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=[first, second])
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    assert _read(dataset)['n'] == [1, 2]
    _read(dataset)
  ignored = [
    r.getMessage()
    for r in caplog.records
    if 'Ignoring the columns' in r.getMessage()
  ]
  assert len(ignored) == 1
  assert "'id', 'note'" in ignored[0]


def test_shards_may_order_their_columns_differently(tmp_path):
  first = _write(tmp_path, 'a.csv', 'name,x,n\na,0.5,1\nb,1.5,2\nc,2.5,3\n')
  second = _write(tmp_path, 'b.csv', 'n,name,x\n4,d,3.5\n5,e,4.5\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=[first, second])
  columns = _read(dataset)
  rows = sorted(zip(columns['name'], columns['x'], columns['n']))
  assert rows == [
    ('a', 0.5, 1),
    ('b', 1.5, 2),
    ('c', 2.5, 3),
    ('d', 3.5, 4),
    ('e', 4.5, 5),
  ]
  # Skipping bad records decodes each shard by its own header too.
  skipping = CsvDataSet(
    SCHEMA, header=True, skip_bad_records=True, train=[first, second]
  )
  assert sorted(_read(skipping)['n']) == [1, 2, 3, 4, 5]


def test_a_field_missing_from_the_header_names_file_and_field(tmp_path):
  path = _write(tmp_path, 'a.csv', 'name,x\na,0.5\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=path)
  with pytest.raises(
    DataError,
    match=(
      rf"{path}:1: the header has no column for field 'n'; its columns "
      r'are name, x\.'
    ),
  ):
    _read(dataset)


def test_a_bad_row_is_located_by_its_file_and_line(tmp_path):
  path = _write(tmp_path, 'a.csv', 'n,x,name\n1,0.5,a\n2,oops,b\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=path)
  with pytest.raises(DataError, match=rf"{path}:3: column 'x' is not a real"):
    _read(dataset)


def test_header_names_that_are_not_identifiers_match_their_field_name():
  assert _csvheader.field_name('Sepal.Length') == 'Sepal_Length'
  assert _csvheader.field_name(' body mass (g) ') == 'body_mass_g'
  assert _csvheader.field_name('2nd') == '_2nd'


def test_the_analysis_reads_each_file_by_its_header(tmp_path):
  first = _write(tmp_path, 'a.csv', 'name,x,n\na,0.5,1\n')
  second = _write(tmp_path, 'b.csv', 'n,extra,name,x\n2,q,b,1.5\n')
  dataset = CsvDataSet(SCHEMA, header=True, train=[first, second])
  with beam.Pipeline() as pipeline:
    batches = dataset['train'].record_batches(pipeline)
    rows = (
      batches | beam.FlatMap(lambda b: b.to_pylist()) | beam.combiners.ToList()
    )
    assert_that(rows, _check_rows)


def _check_rows(rows):
  got = sorted((r['name'][0], r['x'][0], r['n'][0]) for r in rows[0])
  assert got == [(b'a', 0.5, 1), (b'b', 1.5, 2)], got


def test_the_header_is_a_reading_option_of_the_fingerprint(tmp_path):
  path = _write(tmp_path, 'a.csv', 'name,x,n\na,0.5,1\n')
  plain = CsvDataSet(SCHEMA, skip_header=True, train=path)
  named = CsvDataSet(SCHEMA, header=True, train=path)
  assert 'header' not in plain['train'].reading_options()
  assert named['train'].reading_options()['header'] is True
