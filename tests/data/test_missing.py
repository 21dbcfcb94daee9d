"""Missing values: one meaning per field for every source, imputed in the graph.

An empty CSV cell, an absent tf.Example feature and NaN/None in a DataFrame
read the same; the transform graph imputes what the analysis computed.
"""

import math
import os
import re

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import DataFrameDataSet
from tensorfx.data import ExamplesDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data import SchemaField
from tensorfx.data import _missing
from tensorfx.data._csv import parse_lines
from tensorfx.data._csv import read_rows
from tensorfx.data._validation import data_errors

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_missing')]

SCHEMA = Schema.parse("""\
fields:
- name: id
  type: integer
- name: age
  type: integer
  missing: median
- name: hours
  type: real
  missing: mean
- name: gain
  type: real
  missing: zero
- name: work
  type: discrete
- name: job
  type: discrete
  missing: mode
- name: size
  type: integer
  missing: mode
- name: country
  type: discrete
  default: US
- name: label
  type: discrete
""")
FEATURES = FeatureSet.parse("""\
features:
- name: key
  type: key
  fields: id
- name: age_v
  type: identity
  fields: age
- name: hours_v
  type: identity
  fields: hours
- name: gain_v
  type: identity
  fields: gain
- name: work_1h
  type: onehot
  fields: work
- name: work_hash
  type: hash
  fields: work
  buckets: 1000
- name: job_v
  type: identity
  fields: job
- name: size_v
  type: identity
  fields: size
- name: country_v
  type: identity
  fields: country
- name: age_missing
  type: indicator
  fields: age
- name: work_missing
  type: indicator
  fields: work
- name: y
  type: target
  fields: label
""")
# Rows 2-5 have holes; `nan` is missing for a real field that imputes.
LINES = [
  '1,20,10.0,1.5,a,x,3,FR,yes',
  '2,,20.0,,b,y,3,,no',
  '3,40,,2.5,,y,,DE,yes',
  '4,30,30.0,3.5,a,,4,US,no',
  '5,50,nan,0.5,a,y,4,US,yes',
  '6,35,25.0,0.0,b,y,4,US,no',
]
NAN, MIN = math.nan, _missing.INTEGER_MARKER
# What every reader gives: the markers of imputed fields, '' for a discrete
# field that says nothing, the default of a field that has one.
RAW = {
  'id': [1, 2, 3, 4, 5, 6],
  'age': [20, MIN, 40, 30, 50, 35],
  'hours': [10.0, 20.0, NAN, 30.0, NAN, 25.0],
  'gain': [1.5, NAN, 2.5, 3.5, 0.5, 0.0],
  'work': ['a', 'b', '', 'a', 'a', 'b'],
  'job': ['x', 'y', 'y', '', 'y', 'y'],
  'size': [3, 3, MIN, 4, 4, 4],
  'country': ['FR', 'US', 'DE', 'US', 'US', 'US'],
  'label': ['yes', 'no', 'yes', 'no', 'yes', 'no'],
}


def _same(actual, expected):
  """Lists equal, NaN equal to NaN."""
  assert len(actual) == len(expected), (actual, expected)
  for a, e in zip(actual, expected):
    if isinstance(e, float) and math.isnan(e):
      assert isinstance(a, float) and math.isnan(a), (actual, expected)
    else:
      assert a == pytest.approx(e) if isinstance(e, float) else a == e, (
        actual,
        expected,
      )


def _plain(tensor):
  return [
    v.decode() if isinstance(v, bytes) else v for v in tensor.numpy().tolist()
  ]


@pytest.fixture(scope='module')
def csv_path(tmp_path_factory):
  path = tmp_path_factory.mktemp('missing') / 'train.csv'
  path.write_text('\n'.join(LINES) + '\n')
  return str(path)


@pytest.fixture(scope='module')
def analyzed(tmp_path_factory, csv_path):
  """The CSV dataset, analyzed once."""
  dataset = CsvDataSet(SCHEMA, features=FEATURES, train=csv_path)
  dataset.analyze(str(tmp_path_factory.mktemp('missing') / 'analysis'))
  return dataset


# What a reader puts where a value is missing.


@pytest.mark.parametrize(
  'field,fill',
  [
    (SchemaField('x', 'integer', missing='median'), MIN),
    (SchemaField('x', 'integer', missing='zero'), MIN),
    (SchemaField('x', 'integer', default=7), 7),
    (SchemaField('x', 'integer'), None),
    (SchemaField('x', 'real', missing='error'), None),
    (SchemaField('x', 'discrete'), ''),
    (SchemaField('x', 'discrete', missing='mode'), ''),
    (SchemaField('x', 'discrete', default='none'), 'none'),
    (SchemaField('x', 'discrete', missing='error'), None),
    (SchemaField('x', 'discrete', length=0), None),
  ],
)
def test_the_fill_value_of_each_kind_of_field(field, fill):
  assert _missing.fill_value(field) == fill
  real = SchemaField('r', 'real', missing='mean')
  assert math.isnan(_missing.fill_value(real))


def test_every_csv_reader_reads_holes_alike(csv_path):
  dataset = CsvDataSet(SCHEMA, features=FEATURES, train=csv_path)
  source = dataset['train']
  with data_errors():
    batch = next(iter(source.read(batch_size=10)))
  parsed, reasons = parse_lines(tf.constant(LINES), source.schema)
  rows = list(read_rows(csv_path, source.schema))

  assert _plain(reasons) == [''] * len(LINES)
  for name, expected in RAW.items():
    _same(_plain(batch[name]), expected)
    _same(_plain(parsed[name]), expected)
    _same([row[name] for row in rows], expected)


def test_tf_examples_without_a_feature_read_as_holes(tmp_path):
  path = str(tmp_path / 'train.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for line in LINES:
      feature = {}
      for field, text in zip(SCHEMA, line.split(',')):
        if text in ('', 'nan'):
          continue  # Absent: a missing value.
        if field.type.value == 'integer':
          value = tf.train.Feature(
            int64_list=tf.train.Int64List(value=[int(text)])
          )
        elif field.type.value == 'real':
          value = tf.train.Feature(
            float_list=tf.train.FloatList(value=[float(text)])
          )
        else:
          value = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[text.encode()])
          )
        feature[field.name] = value
      writer.write(
        tf.train.Example(
          features=tf.train.Features(feature=feature)
        ).SerializeToString()
      )
  dataset = ExamplesDataSet(SCHEMA, features=FEATURES, train=path)

  batch = next(iter(dataset['train'].read(batch_size=10)))
  for name, expected in RAW.items():
    _same(_plain(batch[name]), expected)
  # Serving parses a tf.Example with the same fill values.
  serialized = [
    tf.train.Example(
      features=tf.train.Features(
        feature={
          'id': tf.train.Feature(int64_list=tf.train.Int64List(value=[9]))
        }
      )
    ).SerializeToString()
  ]
  parsed = tf.io.parse_example(
    serialized,
    {k: v for k, v in dataset.raw_feature_spec().items() if k != 'label'},
  )
  assert _plain(parsed['age']) == [MIN]
  assert math.isnan(_plain(parsed['hours'])[0])
  assert _plain(parsed['work']) == [''] and _plain(parsed['country']) == ['US']


def test_dataframe_nan_and_none_read_as_holes():
  frame = pd.DataFrame(
    {
      'id': [1, 2],
      'age': [20, None],
      'hours': [np.nan, 2.0],
      'gain': [None, 1.0],
      'work': [None, 'b'],
      'job': ['x', np.nan],
      'size': [3.0, np.nan],
      'country': [np.nan, 'FR'],
      'label': ['yes', 'no'],
    }
  )
  dataset = DataFrameDataSet(SCHEMA, features=FEATURES, train=frame)

  batch = next(iter(dataset['train'].read(batch_size=10)))
  _same(_plain(batch['age']), [20, MIN])
  _same(_plain(batch['hours']), [NAN, 2.0])
  _same(_plain(batch['gain']), [NAN, 1.0])
  assert _plain(batch['work']) == ['', 'b']
  assert _plain(batch['job']) == ['x', '']
  _same(_plain(batch['size']), [3, MIN])
  assert _plain(batch['country']) == ['US', 'FR']


# Missing values that make a record bad: named, with the ways to fix it.


def test_a_missing_number_without_a_policy_is_an_error_naming_the_fixes(
  tmp_path,
):
  schema = Schema([SchemaField('name', 'discrete'), SchemaField('x', 'real')])
  path = tmp_path / 'a.csv'
  path.write_text('a,1\nb,\n')
  message = (
    f"{path}:2: column 'x' is empty; say what a missing x means in "
    'the schema (missing: mean, median, mode or zero; or default: '
    'VALUE), or fix the data'
  )

  with pytest.raises(DataError) as info:
    with data_errors():
      list(CsvDataSet(schema, train=str(path))['train'].read(10))
  assert str(info.value) == message
  frame = pd.DataFrame({'name': ['a', 'b'], 'x': [1.0, None]})
  with pytest.raises(
    DataError,
    match=r"DataFrame 'train': row 1: column "
    r"'x' is empty; say what a missing x means",
  ):
    DataFrameDataSet(schema, train=frame)['train'].columns()


def test_a_missing_target_is_an_error_or_a_skipped_bad_record(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text('\n'.join(LINES + ['7,20,1.0,1.0,a,x,3,US,']) + '\n')
  dataset = CsvDataSet(SCHEMA, features=FEATURES, train=str(path))

  with pytest.raises(DataError) as info:
    with data_errors():
      list(dataset['train'].read(20))
  assert str(info.value) == (
    f"{path}:7: column 'label' is empty; every record needs it: fix the "
    'data, or skip such records (--skip-bad-records)'
  )
  dataset.skip_bad_records()
  with data_errors():
    rows = sum(int(b['id'].shape[0]) for b in dataset['train'].read(20))
  assert rows == len(LINES)
  assert dataset.bad_records() == {'train': 1}


def test_the_analysis_skips_and_counts_a_missing_target(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text('\n'.join(LINES + ['7,20,1.0,1.0,a,x,3,US,']) + '\n')
  dataset = CsvDataSet(
    SCHEMA, features=FEATURES, train=str(path), skip_bad_records=True
  )

  metadata = dataset.analyze(str(tmp_path / 'analysis'))
  assert metadata.instances == len(LINES)
  assert metadata.field('label')['count'] == len(LINES)


def test_the_analysis_names_the_line_of_a_missing_target(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text('\n'.join(LINES[:3] + ['7,20,1.0,1.0,a,x,3,US,']) + '\n')
  dataset = CsvDataSet(SCHEMA, features=FEATURES, train=str(path))

  with pytest.raises(DataError) as info:
    dataset.analyze(str(tmp_path / 'analysis'))
  assert str(info.value) == (
    f"{path}:4: column 'label' is empty; every record needs it: fix the "
    'data, or skip such records (--skip-bad-records)'
  )


# The schema and feature set say what is allowed.


@pytest.mark.parametrize(
  'kwargs,message',
  [
    (
      {'type': 'discrete', 'missing': 'mean'},
      "missing: mean needs a numeric field; 'x' is discrete (use mode, or a "
      "default). Received: missing='mean'",
    ),
    (
      {'type': 'real', 'missing': 'average'},
      'unknown missing policy; missing must be one of mean, median, mode, '
      "zero, error. Received: missing='average'",
    ),
    (
      {'type': 'real', 'missing': 'mean', 'default': 0.0},
      'give either missing (a policy) or default (a constant), not both. '
      "Received: missing='mean'",
    ),
    (
      {'type': 'real', 'missing': 'mean', 'length': 0},
      'missing applies to single-valued fields (length 1)',
    ),
  ],
)
def test_bad_missing_policies_are_named(kwargs, message):
  with pytest.raises(DataError, match=re.escape(message)):
    SchemaField('x', **kwargs)


def test_policies_are_written_back_and_read_case_blind():
  schema = Schema.parse('fields:\n- name: x\n  type: real\n  missing: Mean\n')
  assert schema['x'].missing == 'mean'
  assert Schema.parse(schema.format()) == schema
  assert 'missing: mean' in schema.format()


@pytest.mark.parametrize(
  'field,problem',
  [
    ('x', "'x' allows none: give it missing: mean, median, mode or zero"),
    (
      'd',
      "'d' fills them with its default: use missing: zero (or mean, "
      'median, mode) instead',
    ),
  ],
)
def test_an_indicator_needs_holes_that_reach_the_transform(field, problem):
  schema = Schema(
    [SchemaField('x', 'real'), SchemaField('d', 'real', default=0.0)]
  )
  features = FeatureSet.parse(
    f'features:\n- name: m\n  type: indicator\n  fields: {field}\n',
    'features.yaml',
  )
  with pytest.raises(
    DataError,
    match=re.escape(
      "features.yaml:4: features[0].fields: feature 'm': an indicator "
      'feature needs a field '
      f'whose missing values reach the transform; {problem}'
    ),
  ):
    features.validate(schema)


# The transform graph imputes what the analysis computed.


def test_the_transform_imputes_the_statistics_of_the_values_present(analyzed):
  batch = next(iter(analyzed.transform(analyzed['train'].read(10))))
  values = {name: _plain(tensor) for name, tensor in batch.items()}

  # The median of 20, 40, 30, 50, 35 (approximate: a middle value).
  assert values['age_v'][1] == 35.0
  assert values['hours_v'] == pytest.approx([10, 20, 21.25, 30, 21.25, 25])
  assert values['gain_v'] == pytest.approx([1.5, 0.0, 2.5, 3.5, 0.5, 0.0])
  assert values['job_v'] == ['x', 'y', 'y', 'y', 'y', 'y']  # The mode.
  assert values['size_v'] == [3.0, 3.0, 4.0, 4.0, 4.0, 4.0]
  assert values['country_v'] == ['FR', 'US', 'DE', 'US', 'US', 'US']
  assert values['age_missing'] == [0, 1, 0, 0, 0, 0]
  assert values['work_missing'] == [0, 0, 1, 0, 0, 0]
  # An empty discrete value is out of the vocabulary (a, b): the OOV bucket.
  assert values['work_1h'][2] == [0.0, 0.0, 1.0]
  assert values['work_1h'][0] == [1.0, 0.0, 0.0]
  # Tied counts: the vocabulary is by value, down (yes, no).
  assert values['y'] == [0, 1, 0, 1, 0, 1]


def test_metadata_counts_the_holes_apart(analyzed):
  metadata = analyzed.metadata
  assert metadata.field('age')['missing'] == 1
  assert metadata.field('age')['count'] == 5
  assert metadata.field('hours')['missing'] == 2
  assert metadata.field('hours')['mean'] == pytest.approx(21.25)
  assert metadata.field('work')['missing'] == 1
  assert dict(metadata.field('work')['vocabulary']) == {'a': 3, 'b': 2}
  assert 'missing' not in metadata.field('country')  # Its default fills.


def _is_hole(value):
  return (
    value == ''
    or value == MIN
    or (isinstance(value, float) and math.isnan(value))
  )


def test_the_same_holes_from_a_dataframe_transform_the_same(analyzed):
  columns = {
    name: [None if _is_hole(v) else v for v in values]
    for name, values in RAW.items()
  }
  columns['country'][1] = None  # Its default, US, fills it.
  dataset = DataFrameDataSet(
    SCHEMA,
    features=FEATURES,
    metadata=analyzed.analysis_dir,
    eval=pd.DataFrame(columns),
  )

  expected = next(iter(analyzed.transform(analyzed['train'].read(10))))
  actual = next(iter(dataset.transform(dataset['eval'].read(10))))
  for name, tensor in expected.items():
    assert _plain(actual[name]) == _plain(tensor), name


def test_dataset_knows_where_its_analysis_is(analyzed):
  assert os.path.isfile(os.path.join(analyzed.analysis_dir, 'fingerprint.json'))


def test_with_several_targets_a_nan_default_target_may_be_missing(tmp_path):
  # Tasks: a record measured for one task only trains that one; with a
  # single target, a record without it is bad whatever its default says.
  schema = Schema.parse("""\
fields:
- {name: x, type: real}
- {name: y1, type: real, default: .nan}
- {name: y2, type: real, default: .nan}
""")
  features = FeatureSet.parse("""\
features:
- {name: x, type: identity, fields: x}
- {name: y1, type: target, fields: y1}
- {name: y2, type: target, fields: y2}
""")
  path = str(tmp_path / 'a.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for values in ({'x': 1.0, 'y1': 2.0}, {'x': 2.0, 'y2': 4.0}):
      writer.write(
        tf.train.Example(
          features=tf.train.Features(
            feature={
              k: tf.train.Feature(float_list=tf.train.FloatList(value=[v]))
              for k, v in values.items()
            }
          )
        ).SerializeToString()
      )
  dataset = ExamplesDataSet(schema, features=features, train=path)
  with data_errors():
    [batch] = list(dataset['train'].read(2))
  assert batch['y1'].numpy()[0] == 2.0 and math.isnan(batch['y1'].numpy()[1])
  assert math.isnan(batch['y2'].numpy()[0]) and batch['y2'].numpy()[1] == 4.0
  # The same from CSV: an empty cell (or nan) is the NaN default.
  csv = tmp_path / 'a.csv'
  csv.write_text('1.0,2.0,\n2.0,nan,4.0\n')
  with data_errors():
    [batch] = list(
      CsvDataSet(schema, features=features, train=str(csv))['train'].read(2)
    )
  assert math.isnan(batch['y2'].numpy()[0]) and math.isnan(
    batch['y1'].numpy()[1]
  )
  single = FeatureSet.parse("""\
features:
- {name: x, type: identity, fields: x}
- {name: y1, type: target, fields: y1}
""")
  dataset = ExamplesDataSet(schema, features=single, train=path)
  with pytest.raises(DataError, match="'y1'"):
    with data_errors():
      list(dataset['train'].read(2))
