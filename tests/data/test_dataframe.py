"""Tests of pandas DataFrame sources: schema inference, reading, analysis."""

import collections
import math

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import DataFrameDataSet
from tensorfx.data import DataFrameDataSource
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data._dataframe import infer_schema

FEATURES = """\
features:
- name: key
  type: key
  fields: id
- name: y
  type: target
  fields: label
- name: X
  type: concat
  features:
  - name: x_z
    type: zscore
    fields: x
  - name: color_onehot
    type: onehot
    fields: color
"""


def _frame(rows=6):
  return pd.DataFrame(
    {
      'id': np.arange(1, rows + 1),
      'label': ['cat', 'dog'] * (rows // 2),
      'x': np.linspace(1.0, 2.0, rows),
      'color': pd.Categorical(['red', 'blue', 'red'] * (rows // 3)),
      'flag': [True, False] * (rows // 2),
    }
  )


def _read(source, batch_size=4, **kwargs):
  columns = collections.defaultdict(list)
  for batch in source.read(batch_size, **kwargs):
    for name, values in batch.items():
      if isinstance(values, tf.SparseTensor):
        values = tf.RaggedTensor.from_sparse(values).to_list()
      else:
        values = values.numpy().tolist()
      columns[name].extend(_text(v) for v in values)
  return dict(columns)


def _text(value):
  if isinstance(value, bytes):
    return value.decode()
  if isinstance(value, list):
    return [_text(v) for v in value]
  return value


def test_the_schema_is_inferred_from_the_dtypes():
  schema = infer_schema(_frame())

  assert schema == Schema.parse("""\
fields:
- name: id
  type: integer
- name: label
  type: discrete
- name: x
  type: real
- name: color
  type: discrete
- name: flag
  type: discrete
""")


def test_list_cells_are_variable_length_fields():
  frame = pd.DataFrame(
    {
      'tags': [['a', 'b'], [], ['c']],
      'scores': [[1, 2], [3], []],
      'weights': [np.array([0.5]), [1.5, 2.0], []],
    }
  )

  assert [(f.name, f.type.value, f.length) for f in infer_schema(frame)] == [
    ('tags', 'discrete', 0),
    ('scores', 'integer', 0),
    ('weights', 'real', 0),
  ]
  assert _read(DataFrameDataSource(frame, infer_schema(frame))) == {
    'tags': [['a', 'b'], [], ['c']],
    'scores': [[1, 2], [3], []],
    'weights': [[0.5], [1.5, 2.0], []],
  }


@pytest.mark.parametrize(
  'frame,message',
  [
    (pd.DataFrame({'a b': [1]}), "Received: 'a b'"),
    (
      pd.DataFrame({'t': pd.to_datetime(['2024-01-01'])}),
      "Column 't' has dtype datetime64",
    ),
    (pd.DataFrame({'m': [['a'], 'b']}), "Column 'm' mixes lists and single"),
    (pd.DataFrame({'m': [[1], ['b']]}), "Column 'm' mixes value types"),
    (pd.DataFrame(), 'The DataFrame has no columns'),
  ],
)
def test_schemas_that_cannot_be_inferred_are_errors(frame, message):
  with pytest.raises(DataError, match=message):
    infer_schema(frame)


def test_reads_columns_with_schema_dtypes():
  dataset = DataFrameDataSet(train=_frame())
  source = dataset['train']

  spec = source.read(4).element_spec
  assert {k: v.dtype for k, v in spec.items()} == {
    'id': tf.int64,
    'label': tf.string,
    'x': tf.float32,
    'color': tf.string,
    'flag': tf.string,
  }
  assert [len(b['id']) for b in source.read(4)] == [4, 2]
  values = _read(source)
  assert values['id'] == [1, 2, 3, 4, 5, 6]
  assert values['x'] == pytest.approx([1.0, 1.2, 1.4, 1.6, 1.8, 2.0])
  assert values['color'] == ['red', 'blue', 'red'] * 2
  assert values['flag'] == ['True', 'False'] * 3
  assert len(source) == 6 and source.files() == []


def test_epochs_and_seeded_shuffles():
  source = DataFrameDataSet(train=_frame(30))['train']

  in_order = _read(source)['id']
  assert _read(source, epochs=2)['id'] == in_order * 2
  first = _read(source, shuffle=True, seed=2, epochs=2)['id']
  assert first == _read(source, shuffle=True, seed=2, epochs=2)['id']
  assert sorted(first[:30]) == sorted(first[30:]) == in_order
  assert first[:30] != in_order and first[:30] != first[30:]


def test_missing_values_take_defaults_or_are_named():
  schema = Schema.parse("""\
fields:
- name: n
  type: integer
  default: -1
- name: x
  type: real
  default: 0.5
- name: c
  type: discrete
  default: none
""")
  frame = pd.DataFrame(
    {
      'n': [1, None, 3],
      'x': [np.nan, 2.0, 3.0],
      'c': ['a', None, 'b'],
      'extra': [0, 0, 0],
    },
    index=['r1', 'r2', 'r3'],
  )

  assert _read(DataFrameDataSet(schema, train=frame)['train']) == {
    'n': [1, -1, 3],
    'x': [0.5, 2.0, 3.0],
    'c': ['a', 'none', 'b'],
  }
  required = Schema.parse('fields:\n- name: x\n  type: real\n')
  with pytest.raises(
    DataError,
    match=r"DataFrame 'train': row 'r1': column "
    r"'x' is empty",
  ):
    _read(DataFrameDataSet(required, train=frame)['train'])


@pytest.mark.parametrize(
  'frame,message',
  [
    (
      pd.DataFrame({'n': ['1', 'two']}),
      r"row 1: column 'n' is not a number: 'two'",
    ),
    (pd.DataFrame({'n': [1.0, 2.5]}), r"row 1: column 'n' is not an integer"),
    (pd.DataFrame({'m': [1]}), r"has no column 'n'; its columns are m"),
  ],
)
def test_values_that_do_not_fit_the_schema_are_named(frame, message):
  schema = Schema.parse('fields:\n- name: n\n  type: integer\n')
  with pytest.raises(DataError, match=message):
    _read(DataFrameDataSet(schema, eval=frame)['eval'])


def test_sources_must_be_dataframes():
  with pytest.raises(
    DataError, match="Source 'train' must be a pandas DataFrame. Received: list"
  ):
    DataFrameDataSet(train=[1, 2])
  with pytest.raises(DataError, match='needs a schema or at least one source'):
    DataFrameDataSet()


def test_record_batches_hold_the_checked_columns():
  source = DataFrameDataSet(train=_frame())['train']
  batches = list(source.arrow_batches(rows=4))
  assert [b.num_rows for b in batches] == [4, 2]
  row = {k: v[1] for k, v in batches[0].to_pydict().items()}
  assert row == {
    'id': [2],
    'label': [b'dog'],
    'x': [pytest.approx(1.2)],
    'color': [b'blue'],
    'flag': [b'False'],
  }


@pytest.mark.slow
def test_metadata_in_memory_and_on_beam_agree(tmp_path):
  frame = _frame()
  dataset = DataFrameDataSet(
    train=frame, eval=frame.iloc[:3], features=FeatureSet.parse(FEATURES)
  )

  inferred = dataset.infer_metadata()
  assert inferred.instances == 6
  assert dict(inferred.field('label')['vocabulary']) == {'cat': 3, 'dog': 3}
  assert inferred.field('x')['mean'] == pytest.approx(1.5)
  assert inferred.field('x')['std'] == pytest.approx(
    math.sqrt(sum((v - 1.5) ** 2 for v in frame['x']) / 6)
  )

  analyzed = dataset.analyze(str(tmp_path / 'analysis'))
  assert analyzed == inferred
  batch = next(iter(dataset.transform(dataset['eval'].read(3))))
  assert batch['key'].numpy().tolist() == [1, 2, 3]
  # Tied counts: the vocabulary is by value, down (dog, cat).
  assert batch['y'].numpy().tolist() == [1, 0, 1]
  # zscore of x, then onehot of color (red, blue, OOV).
  assert batch['X'].numpy()[:, 1:].tolist() == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]
