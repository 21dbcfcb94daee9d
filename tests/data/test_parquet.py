"""Parquet sources: columns by name, nulls as missing values."""

import collections
import math

import apache_beam as beam
from apache_beam.testing.util import assert_that
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tensorfx import DataError
from tensorfx.data import ParquetDataSet
from tensorfx.data import Schema
from tensorfx.data._validation import data_errors

SCHEMA = Schema.parse("""\
fields:
- {name: name, type: discrete}
- {name: x, type: real, missing: mean}
- {name: n, type: integer, default: 7}
""")


def _write(directory, table, name='a.parquet'):
  path = directory / name
  pq.write_table(pa.table(table), path)
  return str(path)


def _read(dataset, **kwargs):
  columns = collections.defaultdict(list)
  with data_errors():
    for batch in dataset['train'].read(2, **kwargs):
      for name, values in batch.items():
        columns[name].extend(
          v.decode() if isinstance(v, bytes) else v
          for v in values.numpy().tolist()
        )
  return dict(columns)


def test_columns_by_name_and_nulls_as_missing_values(tmp_path):
  path = _write(
    tmp_path,
    {
      'n': pa.array([1, None, 3], pa.int32()),
      'extra': ['p', 'q', 'r'],
      'x': [0.5, None, float('nan')],
      'name': pa.array(['a', None, 'c']).dictionary_encode(),
    },
  )
  columns = _read(ParquetDataSet(SCHEMA, train=path))
  assert columns['name'] == ['a', '', 'c']
  assert columns['n'] == [1, 7, 3]
  assert columns['x'][0] == 0.5
  assert math.isnan(columns['x'][1]) and math.isnan(columns['x'][2])


def test_several_files_shuffled_and_repeated(tmp_path):
  first = _write(tmp_path, {'name': ['a', 'b'], 'x': [1.0, 2.0], 'n': [1, 2]})
  second = _write(tmp_path, {'x': [3.0], 'n': [3], 'name': ['c']}, 'b.parquet')
  dataset = ParquetDataSet(SCHEMA, train=[first, second])
  columns = _read(dataset, epochs=2, shuffle=True, seed=3)
  assert sorted(columns['n']) == [1, 1, 2, 2, 3, 3]


def test_a_null_the_field_cannot_take_names_file_row_and_column(tmp_path):
  schema = Schema.parse('fields:\n- {name: x, type: real}\n')
  path = _write(tmp_path, {'x': [1.0, 2.0, None]})
  with pytest.raises(
    DataError,
    match=rf"{path}: row 3: column 'x' is null; "
    'say what a missing x means',
  ):
    _read(ParquetDataSet(schema, train=path))


def test_a_missing_or_mistyped_column_is_named(tmp_path):
  path = _write(tmp_path, {'name': ['a'], 'x': ['text'], 'n': [1]})
  with pytest.raises(
    DataError,
    match=rf"{path}: column 'x' holds string, "
    'not numbers',
  ):
    _read(ParquetDataSet(SCHEMA, train=path))
  path = _write(tmp_path, {'name': ['a'], 'n': [1]}, 'b.parquet')
  with pytest.raises(DataError, match=rf"{path}: no column 'x'"):
    _read(ParquetDataSet(SCHEMA, train=path))


def test_the_analysis_reads_arrow_record_batches(tmp_path):
  path = _write(
    tmp_path, {'name': ['a', None], 'x': [0.5, None], 'n': [None, 2]}
  )
  dataset = ParquetDataSet(SCHEMA, train=path)
  with beam.Pipeline() as pipeline:
    rows = (
      dataset['train'].record_batches(pipeline)
      | beam.FlatMap(lambda b: b.to_pylist())
      | beam.combiners.ToList()
    )
    assert_that(rows, _check_rows)


def _check_rows(rows):
  got = sorted((r['name'][0], r['n'][0]) for r in rows[0])
  assert got == [(b'', 2), (b'a', 7)], got
