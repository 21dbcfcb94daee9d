"""The original tensorfx's last data API works beside tensorfx's own.

Written from what that version's users called: factories of fields and
features, `create` of schemas and feature sets, lower-case enum members,
lists of names, `DataSet(sources, schema, metadata, features)` and sources
made without a schema.
"""

import os

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import CsvDataSource
from tensorfx.data import DataFrameDataSet
from tensorfx.data import DataSet
from tensorfx.data import DataSource
from tensorfx.data import ExamplesDataSet
from tensorfx.data import ExamplesDataSource
from tensorfx.data import Feature
from tensorfx.data import FeatureSet
from tensorfx.data import FeatureType
from tensorfx.data import Schema
from tensorfx.data import SchemaField
from tensorfx.data import SchemaFieldType

SAMPLE = os.path.join(ROOT, 'samples', 'original_iris')


def _schema():
  return Schema.create(
    SchemaField.discrete('c'), SchemaField.integer('n'), SchemaField.real('x')
  )


def test_schema_field_factories_make_typed_fields():
  assert SchemaField.integer('n').type is SchemaFieldType.integer
  assert SchemaField.real('x').type is SchemaFieldType.real
  assert SchemaField.discrete('c').type is SchemaFieldType.discrete
  # Lower- and upper-case members are the same members.
  assert SchemaFieldType.integer is SchemaFieldType.INTEGER
  assert list(SchemaFieldType) == [
    SchemaFieldType.INTEGER,
    SchemaFieldType.REAL,
    SchemaFieldType.DISCRETE,
  ]
  assert SchemaField.real('x', default=0).default == 0.0


def test_schema_create_takes_fields_one_by_one_or_as_a_list():
  schema = _schema()
  assert (
    Schema.create(
      [
        SchemaField.discrete('c'),
        SchemaField.integer('n'),
        SchemaField.real('x'),
      ]
    )
    == schema
  )
  assert len(schema) == 3
  assert schema['n'].type is SchemaFieldType.integer
  assert schema[0].name == 'c' and schema[2].name == 'x'
  with pytest.raises(DataError, match='one or more'):
    Schema.create()


def test_schema_fields_is_the_list_of_names_and_still_the_fields():
  schema = _schema()
  assert schema.fields == ['c', 'n', 'x']
  assert schema.fields != ['c', 'x', 'n']
  assert schema.fields == tuple(schema)
  assert 'n' in schema.fields and 'y' not in schema.fields
  assert schema.fields[2].numeric


def test_feature_factories_and_lower_case_types():
  target = Feature.target('t', 'c')
  assert target.type is FeatureType.target is FeatureType.TARGET
  assert target.fields == ['c']
  assert Feature.identity('i', 'x').type is FeatureType.identity
  assert Feature.log('l', 'x').params['offset'] == 1.0
  scaled = Feature.scale('s', 'x', range=(-1, 1))
  assert (scaled.params['min'], scaled.params['max']) == (-1.0, 1.0)
  assert Feature.one_hot('o', 'c').type is FeatureType.one_hot
  assert Feature.bucketize('b', 'n', [1, 5]).params['boundaries'] == (1.0, 5.0)
  with pytest.raises(DataError, match='Feature.log'):
    Feature.scale('s', 'x', log=True)


def test_concatenate_takes_features_one_by_one_or_as_a_list():
  children = [Feature.scale('a', 'x'), Feature.log('b', 'n')]
  assert Feature.concatenate('X', *children) == Feature.concatenate(
    'X', children
  )
  assert Feature.concatenate('X', *children).fields == ['x', 'n']


def test_feature_set_create_parse_and_fields_lists():
  features = [
    Feature.concatenate('X', Feature.scale('a', 'x')),
    Feature.target('t', 'c'),
  ]
  created = FeatureSet.create(features)
  assert created == FeatureSet.create(*features)
  assert len(created) == 2 and created['t'].fields == ['c']
  parsed = FeatureSet.parse(created.format())
  assert parsed == created
  assert FeatureSet.parse(created) is created
  with pytest.raises(DataError, match='one or more'):
    FeatureSet.create([])


def test_names_inside_a_concat_may_repeat_as_in_the_original_sample():
  features = FeatureSet.create(
    Feature.concatenate(
      'X', Feature.scale('sl', 'x'), Feature.scale('sl', 'n')
    ),
    Feature.target('Y', 'c'),
  )
  features.validate(_schema())
  assert features['X'].fields == ['x', 'n']
  # Not at the top level, and not for features named by their vocabulary.
  with pytest.raises(DataError, match='duplicate feature name'):
    FeatureSet.create(Feature.target('Y', 'c'), Feature.identity('Y', 'x'))
  with pytest.raises(DataError, match='duplicate feature name'):
    FeatureSet.create(
      Feature.concatenate(
        'X', Feature.one_hot('v', 'c'), Feature.one_hot('v', 'n')
      )
    )


def test_dataset_of_sources_schema_metadata_features(tmp_path):
  features = FeatureSet.create(
    Feature.concatenate('X', Feature.scale('a', 'x')), Feature.target('t', 'c')
  )
  dataset = DataSet(
    {
      'train': CsvDataSource(str(tmp_path / 'none-*.csv')),
      'eval': CsvDataSource(str(tmp_path / 'e.csv')),
    },
    _schema(),
    None,
    features,
  )
  assert len(dataset) == 2
  assert dataset.sources == ['train', 'eval']
  assert dataset['train'].schema.field_names == ('c', 'n', 'x')
  assert dataset.features is features
  # Files are touched only when read.
  with pytest.raises(DataError, match='No data file matches'):
    dataset['train'].files()
  with pytest.raises(DataError, match='must be a DataSource'):
    DataSet({'train': 'a.csv'}, _schema())
  with pytest.raises(TypeError, match='unexpected keyword'):
    DataSet(_schema(), sourcez={})


def test_a_bare_data_source_reads_nothing_yet():
  source = DataSource()
  assert source.paths == [] and source.schema is None
  with pytest.raises(NotImplementedError):
    source.read(1)


def test_csv_dataset_of_csv_sources_reads_them_by_its_schema():
  dataset = CsvDataSet(
    os.path.join(SAMPLE, 'data', 'schema.yaml'),
    train=CsvDataSource(os.path.join(SAMPLE, 'data', 'train.csv')),
    eval=CsvDataSource(os.path.join(SAMPLE, 'data', 'eval.csv')),
  )
  assert dataset.sources == ['train', 'eval']
  batch = next(iter(dataset['eval'].read(batch_size=4)))
  assert batch['species'].numpy().tolist()[0] == b'setosa'
  assert batch['petal_length'].dtype.name == 'float32'


def test_examples_dataset_reads_the_original_tfrecord_files():
  data = os.path.join(SAMPLE, 'data')
  dataset = ExamplesDataSet(
    os.path.join(data, 'schema.yaml'),
    train=os.path.join(data, 'train.tfrecord'),
    eval=ExamplesDataSource(os.path.join(data, 'eval.tfrecord')),
    metadata=os.path.join(data, 'metadata.json'),
    features=os.path.join(SAMPLE, 'trainer', 'features.yaml'),
  )
  rows = sum(
    int(b['species'].shape[0]) for b in dataset['eval'].read(batch_size=8)
  )
  with open(os.path.join(data, 'eval.csv')) as f:
    assert rows == sum(1 for line in f if line.strip())
  # The original's metadata.json is statistics, not an analysis.
  assert not dataset.analyzed


def test_dataframe_dataset_infers_category_columns_as_discrete():
  frame = pd.DataFrame(
    {
      'c': pd.Series(['a', 'b', 'a'], dtype='category'),
      'x': np.array([1.0, 2.0, 3.0]),
    }
  )
  features = FeatureSet.create(
    Feature.concatenate('X', Feature.scale('s', 'x')), Feature.target('t', 'c')
  )
  dataset = DataFrameDataSet(features=features, train=frame, eval=frame)
  assert dataset.schema['c'].type is SchemaFieldType.discrete
  assert dataset.schema.fields == ['c', 'x']
  assert len(dataset) == 2


def test_a_dataset_holds_the_very_sources_it_was_given():
  # The original tensorfx's own dataset tests, as its last version wrote
  # them: `assertEqual(ds['foo'], source)` compares identities.
  schema = Schema.create(SchemaField.numeric('x'))
  source = DataSource()
  dataset = DataSet({'foo': source}, schema, None, None)
  assert dataset['foo'] is source
  assert len(DataSet({}, schema, None, None)) == 0
  schema = Schema.create(SchemaField.numeric('x'), SchemaField.numeric('y'))
  train, evaluation = CsvDataSource('...'), CsvDataSource('...')
  dataset = CsvDataSet(schema, train=train, eval=evaluation)
  assert dataset['train'] is train and dataset['eval'] is evaluation
  assert len(dataset) == 2 and dataset.sources == ['train', 'eval']
  # A source already reading by another dataset's schema is copied for a
  # second dataset, and stays as the first one holds it.
  reading = train.schema
  other = CsvDataSet(
    Schema.create(SchemaField.discrete('x'), SchemaField.numeric('y')),
    train=train,
  )
  assert other['train'] is not train and train.schema is reading
  assert other['train'].schema['x'].type == SchemaFieldType.DISCRETE


def test_schema_field_numeric_is_the_originals_factory_and_a_property():
  field = SchemaField.numeric('x')
  assert field.type == SchemaFieldType.REAL and field.numeric
  assert not SchemaField.discrete('species').numeric
