"""Tests of TFRecord (tf.Example) data: the tf.data reader, record batches, errors."""

import collections
import gzip
import os
import pathlib

import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import ExamplesDataSet
from tensorfx.data import ExamplesDataSource
from tensorfx.data import Schema
from tensorfx.data._examplebatches import record_batches
from tensorfx.data._examples import compression_of
from tensorfx.data._validation import data_errors

SCHEMA = Schema.parse("""\
fields:
- name: name
  type: discrete
- name: x
  type: real
  default: 0.5
- name: n
  type: integer
- name: v
  type: integer
  length: 2
- name: tags
  type: discrete
  length: 0
""")

IRIS = os.path.join(
  os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
  'samples',
  'iris',
)


def example(**features):
  """A tf.Example from Python lists: ints, floats or bytes/str."""
  feature = {}
  for name, values in features.items():
    if not values:
      feature[name] = tf.train.Feature()
    elif isinstance(values[0], float):
      feature[name] = tf.train.Feature(
        float_list=tf.train.FloatList(value=values)
      )
    elif isinstance(values[0], int):
      feature[name] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=values)
      )
    else:
      feature[name] = tf.train.Feature(
        bytes_list=tf.train.BytesList(
          value=[v.encode() if isinstance(v, str) else v for v in values]
        )
      )
  return tf.train.Example(features=tf.train.Features(feature=feature))


def record(name, n, x=None, v=(1, 2), tags=()):
  features = {'name': [name], 'n': [n], 'v': list(v), 'tags': list(tags)}
  if x is not None:
    features['x'] = [x]
  return example(**features).SerializeToString()


def write(path, records, compression=None):
  with tf.io.TFRecordWriter(str(path), compression) as writer:
    for each in records:
      writer.write(each)
  return str(path)


def _values(tensor):
  if isinstance(tensor, tf.SparseTensor):
    rows = [[] for _ in range(int(tensor.dense_shape[0]))]
    for (row, _), value in zip(
      tensor.indices.numpy().tolist(), tensor.values.numpy().tolist()
    ):
      rows[row].append(value.decode() if isinstance(value, bytes) else value)
    return rows
  return [
    v.decode() if isinstance(v, bytes) else v for v in tensor.numpy().tolist()
  ]


def _read(source, batch_size=2, **kwargs):
  """Every record `source.read()` yields, as lists of Python values."""
  columns = collections.defaultdict(list)
  with data_errors():
    for batch in source.read(batch_size, **kwargs):
      for name, values in batch.items():
        columns[name].extend(_values(values))
  return dict(columns)


def _read_error(source, batch_size=2):
  with pytest.raises(DataError) as info:
    _read(source, batch_size)
  assert info.value.__cause__ is None
  return str(info.value)


# Reading.


def test_reads_every_field_kind_with_defaults(tmp_path):
  path = write(
    tmp_path / 'a.tfrecord',
    [
      record('a', 1, 1.5, tags=['t1', 't2']),
      record('b', 2, v=(3, 4)),  # No x: its default.
      record('c', 3, -2.0, tags=['t3']),
    ],
  )
  source = ExamplesDataSource(path, SCHEMA)

  dataset = source.read(batch_size=2)
  spec = dataset.element_spec
  assert {k: s.dtype for k, s in spec.items()} == {
    'name': tf.string,
    'x': tf.float32,
    'n': tf.int64,
    'v': tf.int64,
    'tags': tf.string,
  }
  assert isinstance(spec['tags'], tf.SparseTensorSpec)
  assert spec['v'].shape.as_list() == [None, 2]
  assert [len(b['n']) for b in dataset] == [2, 1]  # Batched, then parsed.
  assert _read(source) == {
    'name': ['a', 'b', 'c'],
    'x': [1.5, 0.5, -2.0],
    'n': [1, 2, 3],
    'v': [[1, 2], [3, 4], [1, 2]],
    'tags': [['t1', 't2'], [], ['t3']],
  }


def test_gzip_is_read_by_suffix_or_when_asked(tmp_path):
  plain = write(tmp_path / 'a.tfrecord', [record('a', 1)])
  zipped = write(tmp_path / 'b.tfrecord.gz', [record('b', 2)], 'GZIP')
  odd = write(tmp_path / 'c.data', [record('c', 3)], 'GZIP')

  assert compression_of(zipped) == 'GZIP'
  assert compression_of(plain) == ''
  assert compression_of(odd, 'GZIP') == 'GZIP'
  assert compression_of(zipped, None) == ''
  assert ExamplesDataSource([plain, zipped], SCHEMA).compressions() == [
    '',
    'GZIP',
  ]
  assert _read(ExamplesDataSource([plain, zipped], SCHEMA))['name'] == [
    'a',
    'b',
  ]
  assert _read(ExamplesDataSource(odd, SCHEMA, compression='GZIP'))['name'] == [
    'c'
  ]
  with gzip.open(zipped) as f:  # Really GZIP.
    assert f.read()


def test_interleaves_shards_from_patterns_and_lists(tmp_path):
  (tmp_path / 'shards').mkdir()
  for shard in range(3):
    write(
      tmp_path / 'shards' / f'part-{shard}-of-3.tfrecord.gz',
      [record(f's{shard}r{i}', i) for i in range(2)],
      'GZIP',
    )
  other = write(tmp_path / 'other.tfrecord', [record('o', 9)])
  pattern = str(tmp_path / 'shards' / 'part-*-of-3.tfrecord.gz')
  dataset = ExamplesDataSet(SCHEMA, train=f'{pattern},{other}', eval=[other])

  assert len(dataset['train'].files()) == 4
  # One record from each file in turn, files in the order given.
  assert _read(dataset['train'])['name'] == [
    's0r0',
    's1r0',
    's2r0',
    'o',
    's0r1',
    's1r1',
    's2r1',
  ]
  assert _read(dataset['eval'])['name'] == ['o']


def test_epochs_and_seeded_shuffles(tmp_path):
  a = write(tmp_path / 'a.tfrecord', [record(f'a{i}', i) for i in range(30)])
  b = write(
    tmp_path / 'b.tfrecord.gz', [record(f'b{i}', i) for i in range(30)], 'GZIP'
  )
  source = ExamplesDataSource([a, b], SCHEMA)

  in_order = _read(source, batch_size=8)['name']
  assert _read(source, epochs=2, batch_size=8)['name'] == in_order * 2
  first = _read(source, batch_size=8, shuffle=True, seed=5, epochs=2)['name']
  again = _read(source, batch_size=8, shuffle=True, seed=5, epochs=2)['name']
  assert first == again
  assert sorted(first[:60]) == sorted(first[60:]) == sorted(in_order)
  assert first[:60] != in_order and first[:60] != first[60:]


def test_bad_arguments_are_named():
  with pytest.raises(
    DataError,
    match="compression must be None, 'GZIP', "
    r"'ZLIB' or 'auto'. Received: compression='zip'",
  ):
    ExamplesDataSet(SCHEMA, train='a.tfrecord', compression='zip')
  with pytest.raises(DataError, match="Source 'train' has no paths"):
    ExamplesDataSet(SCHEMA, train='')
  with pytest.raises(DataError, match='No data file matches'):
    ExamplesDataSource('/nonexistent/*.tfrecord', SCHEMA).read(2)


# Bad files and records: errors name the file, the record and the feature.


def _records(count):
  return [record(f'r{i}', i) for i in range(count)]


def test_a_truncated_file_is_named(tmp_path):
  good = write(tmp_path / 'good.tfrecord', _records(5))
  path = write(tmp_path / 'cut.tfrecord', _records(2000))
  data = pathlib.Path(path).read_bytes()
  with open(path, 'wb') as f:
    f.write(data[:-7])

  message = _read_error(ExamplesDataSource([good, path], SCHEMA), 64)
  assert message.startswith(
    f'{path}: record 2000: truncated or corrupt TFRecord file ('
  )
  with pytest.raises(DataError) as info:
    list(record_batches(path, SCHEMA))
  assert str(info.value) == message


def test_a_corrupt_record_is_named(tmp_path):
  path = write(tmp_path / 'flip.tfrecord', _records(10))
  data = bytearray(pathlib.Path(path).read_bytes())
  size = len(data) // 10
  data[3 * size + 20] ^= 0xFF  # A byte of the 4th record's payload.
  pathlib.Path(path).write_bytes(bytes(data))

  message = _read_error(ExamplesDataSource(path, SCHEMA))
  assert message.startswith(
    f'{path}: record 4: truncated or corrupt TFRecord file (corrupted record at'
  )


def test_a_truncated_gzip_file_is_named(tmp_path):
  good = write(tmp_path / 'good.tfrecord.gz', _records(5), 'GZIP')
  path = write(tmp_path / 'cut.tfrecord.gz', _records(3000), 'GZIP')
  data = pathlib.Path(path).read_bytes()
  pathlib.Path(path).write_bytes(data[: len(data) // 2])

  message = _read_error(ExamplesDataSource([good, path], SCHEMA), 100)
  assert message.startswith(f'{path}: record ')
  assert 'truncated or corrupt TFRecord file' in message
  assert not message.startswith(good)


def test_uncompressed_data_read_as_gzip_is_named(tmp_path):
  path = write(tmp_path / 'plain.tfrecord', _records(3))

  message = _read_error(ExamplesDataSource(path, SCHEMA, compression='GZIP'))
  assert message.startswith(f'{path}: record 1: truncated or corrupt')


_MISMATCHES = [
  (
    example(name=['a'], v=[1, 2]),
    "missing required feature 'n'; say what "
    'a missing n means in the schema (missing: mean, median, mode or zero; '
    'or default: VALUE), or fix the data',
  ),
  (
    example(name=['a'], n=[1.5], v=[1, 2]),
    "feature 'n': Data types don't match",
  ),
  (
    example(name=['a'], n=[1], v=[1, 2, 3]),
    "feature 'v': Number of int64 values != expected",
  ),
]


@pytest.mark.parametrize('bad,problem', _MISMATCHES)
def test_a_record_that_does_not_match_the_schema_is_named(
  tmp_path, bad, problem
):
  good = write(tmp_path / 'good.tfrecord', _records(3))
  path = write(
    tmp_path / 'bad.tfrecord',
    _records(1500) + [bad.SerializeToString()] + _records(2),
  )

  message = _read_error(ExamplesDataSource([good, path], SCHEMA), 256)
  assert message.startswith(f'{path}: record 1501: {problem}')


def test_a_record_that_is_not_an_example_is_named(tmp_path):
  path = write(tmp_path / 'junk.tfrecord', _records(2) + [b'\xff\xfe junk'])

  assert _read_error(ExamplesDataSource(path, SCHEMA)) == (
    f'{path}: record 3: not a serialized tf.Example'
  )
  with pytest.raises(
    DataError, match=f'{path}: record 3: not a serialized tf.Example'
  ):
    list(record_batches(path, SCHEMA))


def test_other_tensorflow_errors_pass_through():
  with pytest.raises(tf.errors.DataLossError, match='checkpoint'):
    with data_errors():
      raise tf.errors.DataLossError(None, None, 'bad checkpoint data')
  with pytest.raises(UnicodeDecodeError):
    with data_errors():
      b'\xff'.decode('utf-8')


def test_serving_parse_errors_become_data_errors():
  spec = {'x': tf.io.FixedLenFeature([], tf.float32)}
  with pytest.raises(
    DataError,
    match=r'^a tf.Example is missing required '
    r"feature 'x'$",
  ):
    with data_errors():
      tf.io.parse_example([example(y=[1.0]).SerializeToString()], spec)


# What the analysis reads: Arrow RecordBatches, parsed as training parses.


def test_record_batches_hold_the_parsed_values(tmp_path):
  path = write(
    tmp_path / 'a.tfrecord.gz',
    [
      record('a', 1, 1.5, tags=['t1', 't2']),
      record('b', 2, v=(3, 4)),
      example(n=[3], v=[5, 6]).SerializeToString(),
    ],
    'GZIP',
  )

  batches = list(record_batches(path, SCHEMA, 'GZIP'))
  assert len(batches) == 1
  assert batches[0].to_pydict() == {
    'name': [[b'a'], [b'b'], [b'']],  # Missing: the empty string.
    'x': [[1.5], [0.5], [0.5]],  # Missing: the default.
    'n': [[1], [2], [3]],
    'v': [[1, 2], [3, 4], [5, 6]],
    'tags': [[b't1', b't2'], [], []],
  }


@pytest.mark.parametrize(
  'bad,problem',
  _MISMATCHES
  + [
    (
      example(name=['a', 'b'], n=[1], v=[1, 2]),
      "feature 'name': Can't parse serialized Example",
    ),
  ],
)
def test_record_batches_name_file_record_and_feature(tmp_path, bad, problem):
  path = write(
    tmp_path / 'bad.tfrecord', _records(2) + [bad.SerializeToString()]
  )

  with pytest.raises(DataError) as info:
    list(record_batches(path, SCHEMA))
  assert str(info.value).startswith(f'{path}: record 3: {problem}')


@pytest.mark.slow
def test_analysis_of_tfrecords_matches_the_csv_analysis(
  tmp_path, iris_analysis
):
  import csv
  import json

  schema = os.path.join(IRIS, 'schema.yaml')
  with open(os.path.join(IRIS, 'data', 'train.csv')) as f:
    rows = [row for row in csv.reader(f) if row]
  shards = []
  for shard in range(2):
    shards.append(
      write(
        tmp_path / f'train-{shard}.tfrecord.gz',
        [
          example(
            species=[r[0]],
            sepal_length=[float(r[1])],
            sepal_width=[float(r[2])],
            petal_length=[float(r[3])],
            petal_width=[float(r[4])],
          ).SerializeToString()
          for r in rows[shard::2]
        ],
        'GZIP',
      )
    )
  dataset = ExamplesDataSet(
    schema,
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(tmp_path / 'train-*.tfrecord.gz'),
  )

  metadata = dataset.analyze(str(tmp_path / 'analysis'))
  assert metadata.instances == 120
  with open(os.path.join(iris_analysis, 'metadata.json')) as f:
    expected = json.load(f)
  assert (
    metadata.to_dict()['fields']['species'] == expected['fields']['species']
  )
  for name in ('sepal_length', 'petal_width'):
    assert metadata.field(name)['mean'] == pytest.approx(
      expected['fields'][name]['mean'], rel=1e-6
    )
  # The transform graph reads the TFRecord batches.
  batch = next(iter(dataset.transform(dataset['train'].read(8))))
  assert batch['X'].shape == (8, 4)
  assert batch['Y'].dtype == tf.int64


@pytest.mark.slow
def test_analysis_names_the_bad_record(tmp_path):
  schema = os.path.join(IRIS, 'schema.yaml')
  path = write(
    tmp_path / 'train.tfrecord',
    [
      example(
        species=['setosa'],
        sepal_length=[5.1],
        sepal_width=[3.5],
        petal_length=[1.4],
        petal_width=[0.2],
      ).SerializeToString(),
      example(
        species=['setosa'],
        sepal_length=[5.1],
        sepal_width=[3.5],
        petal_length=[1.4],
      ).SerializeToString(),
    ],
  )
  dataset = ExamplesDataSet(
    schema, features=os.path.join(IRIS, 'features.yaml'), train=path
  )

  with pytest.raises(DataError) as info:
    dataset.analyze(str(tmp_path / 'analysis'))
  assert str(info.value) == (
    f"{path}: record 2: missing required feature 'petal_width'; say what a "
    'missing petal_width means in the schema (missing: mean, median, mode '
    'or zero; or default: VALUE), or fix the data'
  )
