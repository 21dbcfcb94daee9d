"""Tests of the FeatureSet -> tf.Transform compilation, on analyzed data.

One tiny dataset with every feature type is analyzed once; each transformed
value is checked against a computation by hand.
"""

import bisect
import math

import numpy as np
import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import FeatureSet
from tensorfx.data import FeatureType
from tensorfx.data import Schema
from tensorfx.data import TransformedFeature
from tensorfx.data._transforms import raw_feature_spec

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_transforms')]

SCHEMA = """\
fields:
- name: id
  type: integer
- name: label
  type: discrete
- name: price
  type: real
- name: color
  type: discrete
- name: x
  type: real
- name: n
  type: integer
"""

FEATURES = """\
features:
- name: key
  type: key
  fields: id
- name: label_t
  type: target
  fields: label
- name: price_t
  type: target
  fields: price
- name: raw_x
  type: identity
  fields: x
- name: raw_n
  type: identity
  fields: n
- name: raw_color
  type: identity
  fields: color
- name: scaled
  type: scale
  fields: x
  min: -1.0
  max: 1.0
- name: z
  type: zscore
  fields: x
- name: logged
  type: log
  fields: n
  offset: 0.5
- name: bucketed
  type: bucketize
  fields: n
  boundaries: [1, 2.5, 10]
- name: quantiles
  type: bucketize
  fields: x
  buckets: 3
- name: color_onehot
  type: onehot
  fields: color
- name: color_top1
  type: onehot
  fields: color
  top_k: 1
  oov_buckets: 0
- name: color_embed
  type: embedding
  fields: color
  dim: 4
- name: color_hashed_embed
  type: embedding
  fields: color
  dim: 2
  hash_buckets: 7
- name: color_hash
  type: hash
  fields: color
  buckets: 5
- name: n_hash
  type: hash
  fields: n
  buckets: 5
- name: crossed
  type: cross
  fields: [color, n]
  buckets: 11
- name: X
  type: concat
  features:
  - name: X_log
    type: log
    fields: x
  - name: X_bucket
    type: bucketize
    fields: n
    boundaries: [2]
  - name: X_embed
    type: embedding
    fields: color
    dim: 3
  - name: X_hash
    type: hash
    fields: color
    buckets: 3
"""

# Training rows: label counts cat 3, dog 2, bird 1; color red 3, blue 2,
# green 1 (so vocabularies are in that order).
ROWS = [
  (1, 'cat', 10.0, 'red', 1.0, 0),
  (2, 'dog', 20.0, 'red', 2.0, 1),
  (3, 'cat', 30.0, 'blue', 3.0, 2),
  (4, 'cat', 40.0, 'red', 4.0, 3),
  (5, 'dog', 50.0, 'blue', 5.0, 4),
  (6, 'bird', 60.0, 'green', 6.0, 10),
]
# Transformed: the training rows, then one with an unseen label and color.
BATCH = ROWS + [(7, 'fish', 70.0, 'purple', 3.5, 2)]
NAMES = ('id', 'label', 'price', 'color', 'x', 'n')
COLUMNS = {name: [row[i] for row in BATCH] for i, name in enumerate(NAMES)}

LABELS = ['cat', 'dog', 'bird']
COLORS = ['red', 'blue', 'green']
X_MEAN = sum(row[4] for row in ROWS) / len(ROWS)
X_STD = math.sqrt(sum((row[4] - X_MEAN) ** 2 for row in ROWS) / len(ROWS))


def _index(vocabulary, value, oov):
  return vocabulary.index(value) if value in vocabulary else oov


def _one_hot(index, width):
  return [1.0 if i == index else 0.0 for i in range(width)]


def _hash(values, buckets):
  """The reference string hash (FarmHash fingerprint, as tf.feature_column)."""
  return tf.strings.to_hash_bucket_fast(values, buckets).numpy().tolist()


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
  """The tiny dataset, analyzed."""
  directory = tmp_path_factory.mktemp('transforms')
  (directory / 'schema.yaml').write_text(SCHEMA)
  (directory / 'features.yaml').write_text(FEATURES)
  (directory / 'train.csv').write_text(
    ''.join(','.join(str(v) for v in row) + '\n' for row in ROWS)
  )
  dataset = CsvDataSet(
    str(directory / 'schema.yaml'),
    features=str(directory / 'features.yaml'),
    train=str(directory / 'train.csv'),
  )
  dataset.analyze(str(directory / 'analysis'))
  return dataset


@pytest.fixture(scope='module')
def layer(dataset):
  """The transform graph of the analysis, as a Keras layer."""
  return dataset.transform_output.transform_features_layer()


@pytest.fixture(scope='module')
def transformed(layer):
  """BATCH through the transform graph: feature name -> list of values."""
  dtypes = {
    'id': tf.int64,
    'n': tf.int64,
    'price': tf.float32,
    'x': tf.float32,
    'label': tf.string,
    'color': tf.string,
  }
  raw = {
    name: tf.constant(values, dtypes[name]) for name, values in COLUMNS.items()
  }
  return {name: value.numpy().tolist() for name, value in layer(raw).items()}


def test_outputs_one_tensor_per_top_level_feature(transformed):
  features = FeatureSet.parse(FEATURES)
  assert sorted(transformed) == sorted(f.name for f in features)


def test_key_and_identity_pass_values_through(transformed):
  assert transformed['key'] == COLUMNS['id']
  assert transformed['raw_x'] == pytest.approx(COLUMNS['x'])
  assert transformed['raw_n'] == pytest.approx(COLUMNS['n'])
  assert transformed['raw_color'] == [c.encode() for c in COLUMNS['color']]


def test_targets_index_labels_and_unseen_labels_map_to_minus_one(transformed):
  assert transformed['label_t'] == [0, 1, 0, 0, 1, 2, -1]
  assert transformed['label_t'] == [
    _index(LABELS, v, -1) for v in COLUMNS['label']
  ]
  assert transformed['price_t'] == pytest.approx(COLUMNS['price'])


def test_scale_maps_the_training_range_to_min_max(transformed):
  assert transformed['scaled'] == pytest.approx(
    [-1.0 + 2.0 * (x - 1.0) / (6.0 - 1.0) for x in COLUMNS['x']]
  )
  assert transformed['scaled'][0] == -1.0
  assert transformed['scaled'][5] == 1.0


def test_zscore_uses_the_training_mean_and_std(transformed):
  assert transformed['z'] == pytest.approx(
    [(x - X_MEAN) / X_STD for x in COLUMNS['x']], rel=1e-5
  )


def test_log_adds_the_offset(transformed):
  assert transformed['logged'] == pytest.approx(
    [math.log(n + 0.5) for n in COLUMNS['n']], rel=1e-6
  )


def test_bucketize_with_boundaries(transformed):
  # A value on a boundary goes to the bucket above it.
  assert transformed['bucketed'] == [0, 1, 1, 2, 2, 3, 1]
  assert transformed['bucketed'] == [
    bisect.bisect_right([1, 2.5, 10], n) for n in COLUMNS['n']
  ]


def test_bucketize_into_quantiles_of_the_training_data(transformed):
  # Tertiles of 1..6: two values per bucket.
  assert transformed['quantiles'] == [0, 0, 1, 1, 2, 2, 1]


def test_onehot_over_the_vocabulary_with_an_oov_bucket(transformed):
  assert transformed['color_onehot'] == [
    _one_hot(_index(COLORS, c, 3), 4) for c in COLUMNS['color']
  ]


def test_onehot_top_k_without_oov_buckets(transformed):
  assert transformed['color_top1'] == [
    [1.0] if c == 'red' else [0.0] for c in COLUMNS['color']
  ]


def test_unseen_values_map_to_oov_buckets(transformed):
  # The last row's color, 'purple', is not in the training data.
  assert transformed['color_onehot'][-1] == [0.0, 0.0, 0.0, 1.0]
  assert transformed['color_top1'][-1] == [0.0]  # No OOV bucket: all zeros.
  assert transformed['color_embed'][-1] == 3
  assert transformed['X'][-1][3:7] == [0.0, 0.0, 0.0, 1.0]


def test_embedding_of_a_vocabulary_gives_indices_with_oov(transformed):
  assert transformed['color_embed'] == [0, 0, 1, 0, 1, 2, 3]


def test_embedding_with_hash_buckets(transformed):
  assert transformed['color_hashed_embed'] == _hash(COLUMNS['color'], 7)


def test_hash_of_strings_and_of_integers(transformed):
  assert transformed['color_hash'] == _hash(COLUMNS['color'], 5)
  assert transformed['n_hash'] == _hash([str(n) for n in COLUMNS['n']], 5)
  assert all(0 <= v < 5 for v in transformed['n_hash'])


def test_cross_hashes_the_joined_values(transformed):
  assert transformed['crossed'] == _hash(
    [f'{c}\x1f{n}' for c, n in zip(COLUMNS['color'], COLUMNS['n'])], 11
  )
  # The same pair always lands in the same bucket.
  assert transformed['crossed'][2] == transformed['crossed'][6]


def test_concat_joins_children_and_one_hot_encodes_categorical_ones(
  transformed,
):
  hashes = _hash(COLUMNS['color'], 3)
  expected = [
    [math.log(x + 1.0)]
    + _one_hot(bisect.bisect_right([2], n), 2)
    + _one_hot(_index(COLORS, c, 3), 4)
    + _one_hot(h, 3)
    for x, n, c, h in zip(COLUMNS['x'], COLUMNS['n'], COLUMNS['color'], hashes)
  ]
  assert np.array(transformed['X']) == pytest.approx(
    np.array(expected), rel=1e-6
  )


def test_describe(dataset):
  def feature(name, kind, **kwargs):
    return TransformedFeature(name, FeatureType(kind), **kwargs)

  assert dataset.transformed_features == {
    'key': feature('key', 'key', dense_width=1),
    'label_t': feature(
      'label_t',
      'target',
      dense_width=1,
      cardinality=3,
      vocabulary=('cat', 'dog', 'bird'),
    ),
    'price_t': feature('price_t', 'target', dense_width=1),
    'raw_x': feature('raw_x', 'identity', dense_width=1),
    'raw_n': feature('raw_n', 'identity', dense_width=1),
    'raw_color': feature('raw_color', 'identity', dense_width=1),
    'scaled': feature('scaled', 'scale', dense_width=1),
    'z': feature('z', 'zscore', dense_width=1),
    'logged': feature('logged', 'log', dense_width=1),
    'bucketed': feature('bucketed', 'bucketize', cardinality=4),
    'quantiles': feature('quantiles', 'bucketize', cardinality=3),
    'color_onehot': feature('color_onehot', 'onehot', dense_width=4),
    'color_top1': feature('color_top1', 'onehot', dense_width=1),
    'color_embed': feature(
      'color_embed', 'embedding', cardinality=4, embedding_dim=4
    ),
    'color_hashed_embed': feature(
      'color_hashed_embed', 'embedding', cardinality=7, embedding_dim=2
    ),
    'color_hash': feature('color_hash', 'hash', cardinality=5),
    'n_hash': feature('n_hash', 'hash', cardinality=5),
    'crossed': feature('crossed', 'cross', cardinality=11),
    'X': feature('X', 'concat', dense_width=10),
  }
  assert dataset.transformed_features['label_t'].categorical
  assert dataset.transformed_features['crossed'].categorical
  assert not dataset.transformed_features['X'].categorical


def test_transformed_values_fit_the_described_features(dataset, transformed):
  for name, described in dataset.transformed_features.items():
    values = np.array(transformed[name])
    if described.categorical and described.type != FeatureType.TARGET:
      assert values.min() >= 0 and values.max() < described.cardinality, name
    elif described.dense_width > 1:
      assert values.shape == (len(BATCH), described.dense_width), name


def test_transform_applies_the_graph_to_read_batches(
  dataset, layer, transformed
):
  raw = dataset['train'].read(batch_size=4)
  batches = list(dataset.transform(raw, layer=layer))

  assert [len(b['label_t']) for b in batches] == [4, 2]
  for name in ('label_t', 'scaled', 'color_embed', 'crossed', 'X'):
    values = np.concatenate([b[name].numpy() for b in batches])
    np.testing.assert_allclose(
      values, transformed[name][: len(ROWS)], rtol=1e-6, err_msg=name
    )


def test_preprocessing_needs_a_feature_set():
  dataset = CsvDataSet(Schema.parse(SCHEMA), train='train.csv')
  with pytest.raises(DataError, match='Preprocessing needs a feature set'):
    dataset.preprocessing_fn  # noqa: B018  (reading the property raises)
  with pytest.raises(DataError, match='Describing features needs a feature'):
    dataset.transformed_features  # noqa: B018  (reading the property raises)


def test_raw_feature_spec_follows_field_lengths():
  schema = Schema.parse("""\
fields:
- name: a
  type: real
- name: b
  type: integer
  length: 3
- name: c
  type: discrete
  length: 0
""")
  assert raw_feature_spec(schema) == {
    'a': tf.io.FixedLenFeature([], tf.float32),
    'b': tf.io.FixedLenFeature([3], tf.int64),
    'c': tf.io.VarLenFeature(tf.string),
  }
