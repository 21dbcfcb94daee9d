"""Multivalent fields (length N and 0): read, transformed, fed to a model.

One tiny TFRecord dataset with list fields is analyzed once; each
transformed value is checked against a computation by hand.
"""

import bisect
import math

import numpy as np
import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import ExamplesDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data._transforms import multi_hot

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_multivalent')]

SCHEMA = """\
fields:
- name: id
  type: integer
- name: label
  type: discrete
- name: tags
  type: discrete
  length: 0
- name: scores
  type: integer
  length: 0
- name: vec
  type: real
  length: 3
"""

FEATURES = """\
features:
- name: key
  type: key
  fields: id
- name: y
  type: target
  fields: label
- name: tags_onehot
  type: onehot
  fields: tags
- name: tags_embed
  type: embedding
  fields: tags
  dim: 2
- name: tags_hash
  type: hash
  fields: tags
  buckets: 5
- name: scores_bucket
  type: bucketize
  fields: scores
  boundaries: [2, 5]
- name: vec_z
  type: zscore
  fields: vec
- name: vec_bucket
  type: bucketize
  fields: vec
  boundaries: [1.5]
- name: X
  type: concat
  features:
  - name: X_tags
    type: onehot
    fields: tags
  - name: X_vec
    type: log
    fields: vec
"""

# tags: x 3 times, y twice, z and new once.
ROWS = [
  {
    'id': [1],
    'label': ['a'],
    'tags': ['x', 'y'],
    'scores': [1, 7],
    'vec': [1.0, 2.0, 3.0],
  },
  {
    'id': [2],
    'label': ['b'],
    'tags': ['x'],
    'scores': [],
    'vec': [2.0, 2.0, 2.0],
  },
  {
    'id': [3],
    'label': ['a'],
    'tags': [],
    'scores': [3],
    'vec': [3.0, 1.0, 0.0],
  },
  {
    'id': [4],
    'label': ['b'],
    'tags': ['z', 'x', 'y', 'new'],
    'scores': [5, 2],
    'vec': [0.0, 0.0, 1.0],
  },
]
TAGS = ['x', 'y', 'z']
VEC = [v for row in ROWS for v in row['vec']]
VEC_MEAN = sum(VEC) / len(VEC)
VEC_STD = math.sqrt(sum((v - VEC_MEAN) ** 2 for v in VEC) / len(VEC))


def _example(row):
  feature = {}
  for name, values in row.items():
    if name in ('tags', 'label'):
      feature[name] = tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[v.encode() for v in values])
      )
    elif name == 'vec':
      feature[name] = tf.train.Feature(
        float_list=tf.train.FloatList(value=values)
      )
    else:
      feature[name] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=values)
      )
  return tf.train.Example(
    features=tf.train.Features(feature=feature)
  ).SerializeToString()


def _rows(tensor):
  """A dense [B, ...] or sparse [B, None] tensor as lists of values, by row."""
  if isinstance(tensor, tf.SparseTensor):
    return tf.RaggedTensor.from_sparse(tensor).to_list()
  return tensor.numpy().tolist()


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
  directory = tmp_path_factory.mktemp('multivalent')
  path = str(directory / 'train.tfrecord.gz')
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for row in ROWS:
      writer.write(_example(row))
  dataset = ExamplesDataSet(
    Schema.parse(SCHEMA), features=FeatureSet.parse(FEATURES), train=path
  )
  dataset.analyze(str(directory / 'analysis'))
  return dataset


@pytest.fixture(scope='module')
def batch(dataset):
  raw = dataset['train'].read(batch_size=len(ROWS))
  return next(iter(dataset.transform(raw)))


def test_statistics_count_every_value(dataset):
  assert dataset.metadata.instances == 4
  tags = dataset.metadata.field('tags')
  assert tags['count'] == 7
  assert dict(tags['vocabulary']) == {'x': 3, 'y': 2, 'z': 1, 'new': 1}
  assert dataset.metadata.field('vec')['mean'] == pytest.approx(VEC_MEAN)


def test_onehot_of_a_list_is_multi_hot(dataset, batch):
  vocabulary = [
    v.decode()
    for v in dataset.transform_output.vocabulary_by_name('tags_onehot')
  ]
  # By count, ties by value down ('new' is seen in training too).
  assert vocabulary == ['x', 'y', 'z', 'new']
  assert _rows(batch['tags_onehot']) == [
    [1.0 if tag in row['tags'] else 0.0 for tag in vocabulary] + [0.0]
    for row in ROWS
  ]


def test_embedding_and_hash_of_a_list_give_an_index_per_value(dataset, batch):
  vocabulary = [
    v.decode()
    for v in dataset.transform_output.vocabulary_by_name('tags_embed')
  ]
  assert vocabulary == ['x', 'y', 'z', 'new']
  assert _rows(batch['tags_embed']) == [
    [vocabulary.index(t) for t in row['tags']] for row in ROWS
  ]
  hashes = [
    tf.strings.to_hash_bucket_fast(row['tags'], 5).numpy().tolist()
    if row['tags']
    else []
    for row in ROWS
  ]
  assert _rows(batch['tags_hash']) == hashes


def test_bucketize_of_a_variable_length_list(batch):
  assert _rows(batch['scores_bucket']) == [
    [bisect.bisect_right([2, 5], s) for s in row['scores']] for row in ROWS
  ]


def test_numeric_transforms_keep_one_slot_per_position(batch):
  assert np.array(_rows(batch['vec_z'])) == pytest.approx(
    np.array([[(v - VEC_MEAN) / VEC_STD for v in row['vec']] for row in ROWS]),
    rel=1e-5,
  )
  assert _rows(batch['vec_bucket']) == [
    [1 if v >= 1.5 else 0 for v in row['vec']] for row in ROWS
  ]


def test_concat_of_list_features(dataset, batch):
  width = dataset.transformed_features['X'].dense_width
  assert width == 5 + 3  # Multi-hot tags (4 values + OOV), then log(vec).
  x = np.array(_rows(batch['X']))
  assert x[:, :5].tolist() == _rows(batch['tags_onehot'])
  assert x[:, 5:] == pytest.approx(
    np.log1p(np.array([row['vec'] for row in ROWS])), rel=1e-6
  )


def test_describe_multivalent_features(dataset):
  described = dataset.transformed_features
  assert described['tags_embed'].cardinality == 5
  assert described['tags_embed'].embedding_dim == 2
  assert described['tags_onehot'].dense_width == 5
  assert described['vec_z'].dense_width == 3
  assert described['scores_bucket'].cardinality == 3


def test_multi_hot():
  sparse = tf.sparse.from_dense(tf.constant([[1, 2], [0, 0]], tf.int64))
  assert multi_hot(sparse, 3).numpy().tolist() == [[0, 1, 1], [0, 0, 0]]
  assert multi_hot(tf.constant([[2, 2], [0, 1]]), 3).numpy().tolist() == [
    [0, 0, 1],
    [1, 1, 0],
  ]
  assert multi_hot(tf.constant([1, 0]), 2).numpy().tolist() == [[0, 1], [1, 0]]
  empty = tf.SparseTensor(
    tf.zeros([0, 2], tf.int64), tf.zeros([0], tf.int64), [2, 0]
  )
  assert multi_hot(empty, 2).numpy().tolist() == [[0, 0], [0, 0]]


def test_a_feedforward_model_reads_multivalent_features(dataset, batch):
  from tensorfx.models import nn

  features = FeatureSet.parse("""\
features:
- name: y
  type: target
  fields: label
- name: tags_embed
  type: embedding
  fields: tags
  dim: 2
- name: tags_hash
  type: hash
  fields: tags
  buckets: 5
- name: vec_z
  type: zscore
  fields: vec
""")
  model_dataset = ExamplesDataSet(
    dataset.schema, features=features, metadata=dataset.metadata
  )
  model_dataset._transform_output = dataset.transform_output
  args = nn.FeedForwardClassificationArguments.parse(['--hidden-layers:1', '4'])
  builder = nn.FeedForwardClassification(args, model_dataset)
  inputs = {k: batch[k] for k in ('y', 'tags_embed', 'tags_hash', 'vec_z')}

  logits = builder.build_inference(inputs, training=False)
  assert logits.shape == (4, 2)
  # The same rows embedded and multi-hot by hand: mean embedding, then hash
  # buckets, then the z-scores (features in name order).
  table = builder._embeddings['tags_embed'].embeddings.numpy()
  embedded = [
    table[ids].mean(axis=0) if ids else np.zeros(2)
    for ids in _rows(batch['tags_embed'])
  ]
  hashed = multi_hot(batch['tags_hash'], 5).numpy()
  x = np.concatenate(
    [np.array(embedded), hashed, batch['vec_z'].numpy()], axis=1
  )
  for layer in builder._layers:
    x = layer(tf.constant(x, tf.float32)).numpy()
  assert logits.numpy() == pytest.approx(x, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
  'feature,problem',
  [
    (
      '- name: t\n  type: target\n  fields: tags',
      "a target feature needs a single-valued field (length 1); 'tags' has "
      'length 0',
    ),
    (
      '- name: k\n  type: key\n  fields: vec',
      "a key feature needs a single-valued field (length 1); 'vec' has "
      'length 3',
    ),
    (
      '- name: c\n  type: cross\n  fields: [tags, label]\n  buckets: 4',
      "a cross feature needs a single-valued field (length 1); 'tags' has "
      'length 0',
    ),
    (
      '- name: z\n  type: zscore\n  fields: scores',
      "a zscore feature needs a fixed-length field; 'scores' has variable "
      'length (0)',
    ),
    (
      '- name: X\n  type: concat\n  features:\n  - name: s\n'
      '    type: identity\n    fields: scores',
      "an identity feature needs a fixed-length field; 'scores' has variable "
      'length (0)',
    ),
  ],
)
def test_transforms_that_need_fewer_values_are_errors(feature, problem):
  features = FeatureSet.parse(f'features:\n{feature}\n', source='f.yaml')
  with pytest.raises(
    DataError, match=problem.replace('(', r'\(').replace(')', r'\)')
  ):
    features.validate(Schema.parse(SCHEMA))


def test_csv_cannot_hold_list_fields():
  from tensorfx.data import CsvDataSet

  with pytest.raises(
    DataError,
    match="field 'tags' has length 0. Use ExamplesDataSet for list fields",
  ):
    CsvDataSet(Schema.parse(SCHEMA), train='a.csv')
