"""The feature catalogue's embedding tables, and list fields served as text."""

import pytest
import tensorflow as tf

from tensorfx import DataError
from tensorfx import embeddings
from tensorfx.data import FeatureSet
from tensorfx.data import Schema
from tensorfx.data import _listtext
from tensorfx.data import _transforms

SCHEMA = Schema.parse("""\
fields:
- name: user
  type: integer
- name: item
  type: integer
- name: history
  type: integer
  length: 0
- name: tags
  type: discrete
  length: 0
- name: pair
  type: real
  length: 2
""")


def test_table_features_parse_and_share_tables():
  features = FeatureSet.parse("""\
features:
- name: item
  type: embedding
  dim: 8
  capacity: 1000
  admit_after: 2
  evict_after_steps: 500
- name: history
  type: embedding
  table: item
  combiner: sqrtn
- name: user
  type: embedding
  dim: 4
  hash_buckets: 10
""")
  features.validate(SCHEMA)
  assert dict(features['item'].params) == {
    'dim': 8,
    'capacity': 1000,
    'admit_after': 2,
    'evict_after_steps': 500,
  }
  assert dict(features['history'].params) == {
    'table': 'item',
    'combiner': 'sqrtn',
  }
  assert [f.table for f in features] == ['item', 'item', None]
  # Raw keys pass through the transform unchanged: the table hashes them.
  raw = {
    'item': tf.constant([7, 8], tf.int64),
    'history': tf.sparse.from_dense(tf.constant([[1, 2], [0, 0]], tf.int64)),
    'user': tf.constant([1, 2], tf.int64),
  }
  assert _transforms._transform(features['item'], raw, SCHEMA) is raw['item']
  assert FeatureSet.parse(features.format()) == features


def test_table_options_reach_the_table():
  features = FeatureSet.parse("""\
features:
- name: item
  type: embedding
  dim: 8
  capacity: 1000
  hashing: exact
  initializer:
    class_name: TruncatedNormal
    config: {stddev: 0.02, seed: 7}
  admit_after: 2
  evict_after_steps: 500
  evict_every_steps: 50
- name: history
  type: embedding
  table: item
  combiner: sum
- name: user
  type: embedding
  dim: 4
  capacity: 64
  hashing: fingerprint
  initializer: zeros
""")
  features.validate(SCHEMA)
  assert FeatureSet.parse(features.format()) == features
  item = embeddings.EmbeddingTable.from_params('item', features['item'].params)
  assert (
    item.hashing,
    item.capacity,
    item.dim,
    item.admit_after,
    item.evict_after_steps,
    item.combiner,
  ) == ('exact', 1000, 8, 2, 500, 'mean')
  assert item._evict_every == 50
  config = item._initializer.get_config()
  assert type(item._initializer).__name__ == 'TruncatedNormal'
  assert (config['stddev'], config['seed']) == (0.02, 7)
  item.bind(step_counter=tf.Variable(0, dtype=tf.int64))
  item.lookup(tf.constant([5, 5], tf.int64), training=True)
  assert item.rows(tf.constant([5, 6], tf.int64)).numpy().tolist() == [0, -1]
  assert 0 < abs(item.embeddings.numpy()[0]).max() <= 0.04  # 2 stddev
  user = embeddings.EmbeddingTable.from_params('user', features['user'].params)
  assert user.hashing == 'fingerprint'
  user.build()
  assert not user.embeddings.numpy().any()


@pytest.mark.parametrize(
  'yaml,problem',
  [
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  hashing: md5',
      'hashing must be one of mod, fingerprint, exact',
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  initializer: [1, 2]',
      "initializer must be a tf_keras initializer's name",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  initializer: {name: zeros}',
      "initializer must be a tf_keras initializer's name",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  evict_every_steps: 3',
      "'evict_every_steps' needs 'evict_after_steps'",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  hashing: exact',
      "'hashing' needs an embedding table: give the feature 'capacity'",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  table: b\n'
      '  initializer: zeros',
      "'initializer' belongs to the table's own feature",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  admit_after: 3',
      "'admit_after' needs an embedding table: give the feature 'capacity'",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  top_k: 3',
      "'top_k' needs a vocabulary; a table hashes raw keys itself",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  table: b\n  dim: 3',
      "'dim' belongs to the table's own feature",
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n  combiner: max',
      'combiner must be one of sum, mean, sqrtn',
    ),
    (
      '- name: a\n  type: embedding\n  fields: user\n  dim: 2\n'
      '  capacity: 5\n  table: b',
      "'table' shares another feature's table",
    ),
  ],
)
def test_bad_table_parameters_are_located_errors(yaml, problem):
  with pytest.raises(DataError, match=r'f\.yaml:\d+: .*' + problem):
    FeatureSet.parse(f'features:\n{yaml}\n', source='f.yaml')


@pytest.mark.parametrize(
  'yaml,problem',
  [
    (
      '- name: h\n  type: embedding\n  fields: history\n  table: nope',
      "'nope' must be an embedding feature with its own table",
    ),
    (
      '- name: t\n  type: embedding\n  fields: tags\n  table: item\n'
      '- name: item\n  type: embedding\n  dim: 2\n  capacity: 9',
      'must both be integers or both be strings',
    ),
    (
      '- name: X\n  type: concat\n  features:\n  - name: i\n'
      '    type: embedding\n    fields: item\n    dim: 2\n    capacity: 9',
      'an embedding table over raw keys cannot be part of a concat',
    ),
  ],
)
def test_tables_are_checked_against_the_feature_set(yaml, problem):
  features = FeatureSet.parse(f'features:\n{yaml}\n', source='f.yaml')
  with pytest.raises(DataError, match=problem):
    features.validate(SCHEMA)


def test_list_fields_are_served_as_text():
  text = _listtext.text_schema(SCHEMA)
  assert [(f.type.value, f.length) for f in text] == [
    ('integer', 1),
    ('integer', 1),
    ('discrete', 1),
    ('discrete', 1),
    ('discrete', 1),
  ]
  parsed = _listtext.parse_lists(
    {
      'user': tf.constant([1, 2], tf.int64),
      'history': tf.constant(['7 8 9', '']),
      'tags': tf.constant([' a  b', 'c']),
      'pair': tf.constant(['0.5 1', '2 3']),
    },
    SCHEMA,
  )
  assert parsed['user'].numpy().tolist() == [1, 2]
  history = parsed['history']
  assert isinstance(history, tf.SparseTensor)
  assert history.values.numpy().tolist() == [7, 8, 9]
  assert history.dense_shape.numpy().tolist() == [2, 3]
  assert tf.sparse.to_dense(parsed['tags'], '').numpy().tolist() == [
    [b'a', b'b'],
    [b'c', b''],
  ]
  assert parsed['pair'].numpy().tolist() == [[0.5, 1.0], [2.0, 3.0]]
  with pytest.raises(
    tf.errors.InvalidArgumentError, match="field 'pair' needs 2 values"
  ):
    _listtext.parse_lists({'pair': tf.constant(['1 2 3'])}, SCHEMA)
