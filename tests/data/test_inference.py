"""Schema inference: `tensorfx schema infer` and DataFrames share the rules."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import DataFrameDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data import _inference
from tensorfx.data import _inferfiles
from tensorfx.tools import _main

CSV = """\
Sepal.Length,kind,count,note
5.1,a,3,x
NA,b,NA,
4.9,a,2,y
"""


def _infer(capsys, *argv):
  assert _main.main(['schema', 'infer', *argv]) == 0
  return capsys.readouterr().out


def test_csv_types_holes_and_tokens_from_the_values(tmp_path, capsys):
  path = tmp_path / 'a.csv'
  path.write_text(CSV)
  text = _infer(capsys, str(path), '--header', '--na-values', 'NA')
  schema = Schema.parse(text)
  assert schema.field_names == ('Sepal_Length', 'kind', 'count', 'note')
  assert [f.type.value for f in schema] == [
    'real',
    'discrete',
    'integer',
    'discrete',
  ]
  assert schema['Sepal_Length'].missing == 'mean'
  assert schema['count'].missing == 'mean'
  assert schema['kind'].missing is None  # Text: out of vocabulary.
  assert schema['note'].missing is None
  assert schema['count'].na_values == ('NA',)
  # What was seen, in a comment over each field.
  assert '# count: 3 values, 1 missing' in text
  assert '# kind: 3 values, 2 distinct' in text


def test_without_a_header_columns_are_numbered(tmp_path, capsys):
  path = tmp_path / 'a.csv'
  path.write_text('1,a\n2,b\n')
  schema = Schema.parse(_infer(capsys, str(path)))
  assert schema.field_names == ('column_1', 'column_2')


def test_sample_reads_a_prefix(tmp_path, capsys):
  path = tmp_path / 'a.csv'
  path.write_text('x\n1\n2\noops\n')
  assert (
    Schema.parse(_infer(capsys, str(path), '--header', '--sample', '2'))[
      'x'
    ].type.value
    == 'integer'
  )
  assert (
    Schema.parse(_infer(capsys, str(path), '--header'))['x'].type.value
    == 'discrete'
  )


def test_parquet_types_come_from_the_columns(tmp_path, capsys):
  path = tmp_path / 'a.parquet'
  pq.write_table(
    pa.table(
      {'n': pa.array([1, None], pa.int64()), 'x': [0.5, 1.0], 'c': ['p', 'q']}
    ),
    path,
  )
  schema = Schema.parse(_infer(capsys, str(path)))
  assert [(f.name, f.type.value, f.missing) for f in schema] == [
    ('n', 'integer', 'mean'),
    ('x', 'real', None),
    ('c', 'discrete', None),
  ]


def test_tfrecord_examples_with_lists_and_absent_features(tmp_path, capsys):
  path = str(tmp_path / 'a.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for values, label in (([1, 2], b'a'), ([3], None), ([], b'b')):
      feature = {
        'ids': tf.train.Feature(int64_list=tf.train.Int64List(value=values))
      }
      if label is not None:
        feature['label'] = tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[label])
        )
      writer.write(
        tf.train.Example(
          features=tf.train.Features(feature=feature)
        ).SerializeToString()
      )
  schema = Schema.parse(_infer(capsys, path))
  assert schema['ids'].type.value == 'integer'
  assert schema['ids'].length == 0
  assert schema['label'].type.value == 'discrete'


def test_starter_features_name_the_target_and_train_shapes(tmp_path, capsys):
  path = tmp_path / 'a.csv'
  path.write_text(
    'y,x,c,big\n'
    + ''.join(f'{i % 2},{i / 10},{"ab"[i % 2]},v{i}\n' for i in range(60))
  )
  schema_path, features_path = tmp_path / 's.yaml', tmp_path / 'f.yaml'
  _infer(
    capsys,
    str(path),
    '--header',
    '--output',
    str(schema_path),
    '--features',
    str(features_path),
    '--target',
    'y',
  )
  schema = Schema.load(str(schema_path))
  features = FeatureSet.load(str(features_path))
  features.validate(schema)
  kinds = {f.fields[0]: f.type.value for f in features['X'].features}
  assert kinds == {'x': 'zscore', 'c': 'onehot', 'big': 'embedding'}
  assert features['Y'].fields == ('y',)


def test_bad_requests_are_named(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text('x\n1\n')
  with pytest.raises(DataError, match="The target 'y' is not a column"):
    _inference.starter_features(
      _inferfiles.observe([str(path)], header=True), 'y'
    )


# DataFrames: the same rules, and pandas' dtypes.


def test_a_dataframe_with_holes_gets_missing_policies_and_reads():
  frame = pd.DataFrame(
    {
      'text': pd.array(['a', None, 'b'], dtype='string'),
      'category': pd.Categorical(['x', None, 'y']),
      'count': pd.array([1, pd.NA, 3], dtype='Int64'),
      'flag': pd.array([True, None, False], dtype='boolean'),
      'real': [0.5, float('nan'), 1.5],
      'whole': [1, 2, 3],
    }
  )
  dataset = DataFrameDataSet(train=frame)
  schema = dataset.schema
  assert [(f.type.value, f.missing) for f in schema] == [
    ('discrete', None),
    ('discrete', None),
    ('integer', 'mean'),
    ('discrete', None),
    ('real', 'mean'),
    ('integer', None),
  ]
  batch = next(iter(dataset['train'].read(3)))
  assert batch['text'].numpy().tolist() == [b'a', b'', b'b']
  assert batch['category'].numpy().tolist() == [b'x', b'', b'y']
  assert batch['flag'].numpy().tolist() == [b'True', b'', b'False']
  assert batch['count'].numpy()[0] == 1
  metadata = dataset.infer_metadata()
  assert metadata.to_dict()['fields']['count']['mean'] == 2.0


def test_a_dataframe_source_must_be_a_dataframe():
  with pytest.raises(
    DataError,
    match=r"no option 'shema' \(did you mean "
    r'schema\?\)',
  ):
    DataFrameDataSet(train=pd.DataFrame({'x': [1]}), shema='s.yaml')
