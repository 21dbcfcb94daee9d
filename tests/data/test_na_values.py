"""Missing-value tokens (`NA`, `?`), stripped cells, and typos named."""

import collections
import math

import pytest

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import ExamplesDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data import SchemaField
from tensorfx.data import _missing
from tensorfx.data._csv import parse_lines
from tensorfx.data._csv import read_rows
from tensorfx.data._validation import data_errors

SCHEMA = Schema.parse("""\
fields:
- {name: name, type: discrete}
- {name: x, type: real, missing: mean}
- {name: n, type: integer, default: 7}
""")


def _write(directory, text, name='a.csv'):
  path = directory / name
  path.write_text(text)
  return str(path)


def _read(dataset):
  columns = collections.defaultdict(list)
  with data_errors():
    for batch in dataset['train'].read(8):
      for name, values in batch.items():
        columns[name].extend(
          v.decode() if isinstance(v, bytes) else v
          for v in values.numpy().tolist()
        )
  return dict(columns)


def test_a_token_of_the_data_set_is_a_missing_value_in_every_column(tmp_path):
  path = _write(tmp_path, 'a,1.5,2\nNA,NA,NA\n?,?,?\n')
  dataset = CsvDataSet(SCHEMA, na_values=['NA', '?'], train=path)
  columns = _read(dataset)
  assert columns['name'] == ['a', '', '']
  assert columns['x'][0] == 1.5 and math.isnan(columns['x'][1])
  assert columns['n'] == [2, 7, 7]
  # The readers' three paths agree: Python rows, checked lines.
  rows = list(read_rows(path, dataset['train'].schema))
  assert [r['n'] for r in rows] == [2, 7, 7]
  skipping = CsvDataSet(
    SCHEMA, na_values='NA,?', skip_bad_records=True, train=path
  )
  assert _read(skipping)['n'] == [2, 7, 7]
  assert skipping.bad_records() == {'train': 0}


def test_tokens_per_field_in_the_schema(tmp_path):
  schema = Schema.parse("""\
fields:
- {name: name, type: discrete}
- {name: x, type: real, missing: mean, na_values: ['?']}
- {name: n, type: integer, default: 7, na_values: [-999]}
""")
  assert schema['n'].na_values == ('-999',)
  assert Schema.parse(schema.format()) == schema
  path = _write(tmp_path, 'NA,?,-999\n')
  columns = _read(CsvDataSet(schema, train=path))
  # Only the field's own tokens: NA is a name here.
  assert columns['name'] == ['NA'] and columns['n'] == [7]
  assert math.isnan(columns['x'][0])


def test_an_undeclared_token_is_a_bad_number_with_a_hint(tmp_path):
  path = _write(tmp_path, 'a,1.5,2\nb,NA,3\n')
  with pytest.raises(
    DataError,
    match=(
      rf"{path}:2: column 'x' is not a real number: NA \(if NA means a "
      r"missing value, say so: na_values: \['NA'\] in the schema, or "
      r'--na-values NA\)'
    ),
  ):
    _read(CsvDataSet(SCHEMA, train=path))


def test_a_token_in_a_required_field_follows_its_missing_policy(tmp_path):
  schema = Schema.parse('fields:\n- {name: x, type: real}\n')
  path = _write(tmp_path, '1.5\nNA\n')
  with pytest.raises(
    DataError,
    match=rf"{path}:2: column 'x' is empty; "
    'say what a missing x means',
  ):
    _read(CsvDataSet(schema, na_values=['NA'], train=path))


def test_parse_lines_reads_tokens_as_serving_does():
  schema = SCHEMA.with_na_values(['NA'])
  features, reasons = parse_lines(
    __import__('tensorflow').constant(['NA,NA,NA', 'b,2,3']), schema
  )
  assert reasons.numpy().tolist() == [b'', b'']
  assert features['n'].numpy().tolist() == [7, 3]
  assert features['name'].numpy().tolist() == [b'', b'b']


def test_strip_cells_drops_the_spaces_after_delimiters(tmp_path):
  path = _write(tmp_path, 'a, 1.5, 2\nb , NA , 3\n')
  columns = _read(
    CsvDataSet(SCHEMA, na_values=['NA'], strip_cells=True, train=path)
  )
  assert columns['name'] == ['a', 'b'] and columns['n'] == [2, 3]
  assert math.isnan(columns['x'][1])
  # Without it a text cell keeps its spaces.
  plain = _read(
    CsvDataSet(SCHEMA, train=_write(tmp_path, 'a, 1.5, 2\nb , 2, 3\n', 'b.csv'))
  )
  assert plain['name'] == ['a', 'b ']


def test_bad_na_values_are_named():
  with pytest.raises(
    DataError, match='na_values must be a list of non-empty strings'
  ):
    SchemaField('x', 'real', na_values=[''])
  with pytest.raises(DataError, match='na_values applies to single-valued'):
    SchemaField('x', 'real', length=0, na_values=['NA'])


# Typos.


def test_unknown_types_and_policies_get_a_did_you_mean():
  with pytest.raises(
    DataError,
    match=r'unknown field type \(did you mean '
    r"real\?\).*Received: type='reel'",
  ):
    SchemaField('x', 'reel')
  with pytest.raises(
    DataError,
    match=r'unknown missing policy \(did you '
    r"mean median\?\).*Received: missing='medain'",
  ):
    SchemaField('x', 'real', missing='medain')
  with pytest.raises(
    DataError,
    match=r'unknown feature type \(did you '
    r'mean onehot\?\)',
  ):
    FeatureSet.parse('features:\n- {name: a, type: onehott}\n')


@pytest.mark.parametrize(
  'make, keyword',
  [
    (lambda: CsvDataSet(SCHEMA, train='a.csv', heade=True), 'heade'),
    (lambda: CsvDataSet(SCHEMA, train='a.csv', na_value='NA'), 'na_value'),
    (lambda: CsvDataSet(SCHEMA, train='a.csv', delimeter=';'), 'delimeter'),
    (
      lambda: ExamplesDataSet(SCHEMA, train='a.tfrecord', compresion='gzip'),
      'compresion',
    ),
  ],
)
def test_a_keyword_that_is_no_option_nor_source_is_named(make, keyword):
  with pytest.raises(
    DataError,
    match=rf"has no option '{keyword}' \(did you "
    r'mean \w+\?\); its options are',
  ):
    make()


def test_a_source_must_be_paths():
  with pytest.raises(
    DataError,
    match=r"Source 'holdout' must be a path.*"
    r'Received: int \(holdout=3\)',
  ):
    CsvDataSet(SCHEMA, train='a.csv', holdout=3)


def test_the_data_set_tokens_reach_its_schema_and_fill_values():
  dataset = CsvDataSet(SCHEMA, na_values=['NA'], train='a.csv')
  assert dataset.schema['x'].na_values == ('NA',)
  assert _missing.fill_value(dataset.schema['n']) == 7
