"""Tests of FeatureSet, Feature and FeatureType."""

import re

import pytest

from tensorfx import DataError
from tensorfx.data import Feature
from tensorfx.data import FeatureSet
from tensorfx.data import FeatureType
from tensorfx.data import Schema
from tensorfx.data import _featureparams

IRIS = """\
features:
- name: X
  type: concat
  features:
  - name: petal_width
    type: scale
  - name: sepal_width
    type: log
- name: Y
  type: target
  fields: species
"""

SCHEMA = Schema.parse("""\
fields:
- name: species
  type: discrete
- name: sepal_width
  type: real
- name: petal_width
  type: real
- name: count
  type: integer
""")

ALL_TYPES = """\
features:
- name: id
  type: key
  fields: count
- name: label
  type: target
  fields: species
- name: raw
  type: identity
  fields: count
- name: X
  type: concat
  features:
  - name: scaled
    type: scale
    fields: petal_width
    min: -1.0
    max: 1.0
  - name: z
    type: zscore
    fields: sepal_width
  - name: logged
    type: log
    fields: count
    offset: 0.5
  - name: bucketed
    type: bucketize
    fields: count
    boundaries: [1.0, 2.5, 10.0]
  - name: quantiles
    type: bucketize
    fields: petal_width
    buckets: 4
  - name: onehot
    type: onehot
    fields: species
    top_k: 10
    oov_buckets: 0
- name: embedded
  type: embedding
  fields: species
  dim: 8
  top_k: 100
- name: hashed_embedding
  type: embedding
  fields: species
  dim: 4
  hash_buckets: 50
- name: hashed
  type: hash
  fields: species
  buckets: 16
- name: crossed
  type: cross
  fields: [species, count]
  buckets: 100
"""


def _error(text, source='features.yaml'):
  """The message of the DataError that parsing `text` raises."""
  with pytest.raises(DataError) as info:
    FeatureSet.parse(text, source)
  return str(info.value)


def test_parses_the_iris_format():
  features = FeatureSet.parse(IRIS)
  assert features == FeatureSet(
    [
      Feature(
        'X',
        FeatureType.CONCAT,
        features=(
          Feature(
            'petal_width',
            FeatureType.SCALE,
            fields=('petal_width',),
            params={'min': 0.0, 'max': 1.0},
          ),
          Feature('sepal_width', FeatureType.LOG, params={'offset': 1.0}),
        ),
      ),
      Feature('Y', FeatureType.TARGET, fields=('species',)),
    ]
  )
  assert features['X'].fields == ('petal_width', 'sepal_width')
  assert features['X'].params == {}
  assert features.target is features['Y']
  assert features.targets == (features['Y'],)
  assert features.keys == ()


def test_the_iris_set_is_valid_for_its_schema():
  assert FeatureSet.parse(IRIS).validate(SCHEMA) is None


def test_round_trip_of_every_type():
  features = FeatureSet.parse(ALL_TYPES)
  text = features.format()
  assert FeatureSet.parse(text) == features
  assert FeatureSet.parse(text).format() == text
  assert features.validate(SCHEMA) is None


def test_format_omits_defaults():
  assert FeatureSet.parse(IRIS).format() == IRIS
  text = 'features:\n- name: a\n  type: scale\n  min: 0\n  max: 2\n'
  assert FeatureSet.parse(text).format() == (
    'features:\n- name: a\n  type: scale\n  max: 2.0\n'
  )


def test_params_are_a_read_only_mapping_with_defaults():
  features = FeatureSet.parse(ALL_TYPES)
  assert features['X'].features[0].params['min'] == -1.0
  assert dict(features['X'].features[2].params) == {'offset': 0.5}
  assert features['X'].features[3].params['boundaries'] == (1.0, 2.5, 10.0)
  assert features['X'].features[3].params.get('buckets') is None
  assert features['X'].features[4].params['buckets'] == 4
  assert dict(features['embedded'].params) == {
    'dim': 8,
    'top_k': 100,
    'oov_buckets': 1,
  }
  assert dict(features['hashed_embedding'].params) == {
    'dim': 4,
    'hash_buckets': 50,
  }
  assert dict(Feature('a', 'scale').params) == {'min': 0.0, 'max': 1.0}
  assert dict(Feature('a', 'onehot').params) == {'oov_buckets': 1}
  with pytest.raises(TypeError):
    features['embedded'].params['dim'] = 3


def test_features_are_hashable_values():
  a = FeatureSet.parse(ALL_TYPES)
  b = FeatureSet.parse(ALL_TYPES)
  assert a == b and hash(a) == hash(b)
  assert len({f for f in a}) == len(a)
  with pytest.raises(AttributeError):
    a['embedded'].name = 'other'


def test_equality_ignores_where_it_was_parsed_from():
  a = FeatureSet.parse(IRIS, 'a.yaml')
  b = FeatureSet.parse('\n\n# moved down\n' + IRIS, 'b.yaml')
  assert a == b
  assert a == FeatureSet(list(a))


@pytest.mark.parametrize(
  'alias, kind',
  [
    ('z-score', FeatureType.ZSCORE),
    ('z_score', FeatureType.ZSCORE),
    ('one-hot', FeatureType.ONEHOT),
    ('one_hot', FeatureType.ONEHOT),
    ('bucket', FeatureType.BUCKETIZE),
    ('hash_bucket', FeatureType.HASH),
    ('zscore', FeatureType.ZSCORE),
  ],
)
def test_type_aliases(alias, kind):
  params = {
    FeatureType.BUCKETIZE: '  buckets: 3\n',
    FeatureType.HASH: '  buckets: 3\n',
  }.get(kind, '')
  text = f'features:\n- name: a\n  type: {alias}\n{params}'
  assert FeatureSet.parse(text)['a'].type is kind


def test_fields_may_be_a_string_a_list_or_absent():
  text = """\
features:
- name: a
  type: identity
- name: b
  type: identity
  fields: count
- name: c
  type: cross
  fields: [species, count]
  buckets: 10
- name: d
  type: cross
  fields: species, count
  buckets: 10
"""
  features = FeatureSet.parse(text)
  assert [f.fields for f in features] == [
    ('a',),
    ('count',),
    ('species', 'count'),
    ('species', 'count'),
  ]


def test_accepts_the_original_transform_mapping():
  text = """\
features:
- name: age
  type: bucketize
  transform:
    boundaries: 18,35,55,65
"""
  feature = FeatureSet.parse(text)['age']
  assert feature.params['boundaries'] == (18.0, 35.0, 55.0, 65.0)
  assert FeatureSet.parse(FeatureSet.parse(text).format())['age'] == feature


def test_several_targets():
  features = FeatureSet(
    [Feature('a', 'target'), Feature('b', 'target'), Feature('k', 'key')]
  )
  assert [f.name for f in features.targets] == ['a', 'b']
  assert [f.name for f in features.keys] == ['k']
  with pytest.raises(
    DataError,
    match=re.escape(
      'FeatureSet: there are several target features; use `targets`. '
      "Received: ['a', 'b']"
    ),
  ):
    _ = features.target
  assert FeatureSet([Feature('a', 'identity')]).target is None


def test_unknown_feature_names_it_and_the_known_ones():
  with pytest.raises(
    DataError,
    match=re.escape(
      "no feature named 'Z'; the features are X, Y. Received: 'Z'"
    ),
  ):
    _ = FeatureSet.parse(IRIS)['Z']
  assert 'X' in FeatureSet.parse(IRIS)
  assert 'petal_width' not in FeatureSet.parse(IRIS)  # A child, not top-level.


@pytest.mark.parametrize(
  'kwargs, message',
  [
    (
      dict(name='a', type='scale', params={'min': 2, 'max': 1}),
      "Feature 'a': max: max must be greater than min (2.0). Received: max=1.0",
    ),
    (
      dict(name='a', type='concat'),
      "Feature 'a': features: a concat feature needs a non-empty list of "
      'features. Received: features=[]',
    ),
    (
      dict(name='a', type='identity', fields=('x', 'y')),
      "Feature 'a': fields: an identity feature reads exactly one field. "
      "Received: fields=['x', 'y']",
    ),
    (
      dict(name='a', type='magic'),
      "Feature 'a': type: unknown feature type; accepted types are identity, "
      'target, key, concat, scale, zscore, log, bucketize, onehot, embedding, '
      "hash, cross, indicator, weight. Received: type='magic'",
    ),
    (
      dict(name='a-b', type='identity'),
      'Feature: name: a feature name must be letters, digits and '
      "underscores, not starting with a digit. Received: name='a-b'",
    ),
  ],
)
def test_feature_constructor_validates(kwargs, message):
  with pytest.raises(DataError, match=re.escape(message)):
    Feature(**kwargs)


@pytest.mark.parametrize(
  'text, message',
  [
    # The document.
    (
      '- name: a\n',
      "features.yaml:1: a feature set must be a mapping with a 'features' "
      "list. Received: [{'name': 'a'}]",
    ),
    (
      'feature: []\n',
      "features.yaml:1: feature: unknown key 'feature' in a feature set; "
      'accepted keys are features. Received: feature=[]',
    ),
    (
      'features:\n',
      'features.yaml:1: features: features must be a non-empty list of '
      'features. Received: features=None',
    ),
    (
      'features:\n- name: a\n  type: [identity\n',
      'features.yaml:4:1: invalid YAML: expected',
    ),
    # Names and types.
    (
      'features:\n- name: a\n  type: identity\n- type: log\n',
      "features.yaml:4: features[1]: a feature needs a 'name'. Received: "
      "features[1]={'type': 'log'}",
    ),
    (
      'features:\n- name: a\n',
      "features.yaml:2: features[0]: a feature needs a 'type'. Received: "
      "features[0]={'name': 'a'}",
    ),
    (
      'features:\n- name: a\n  type: identity\n- x\n',
      'features.yaml:4: features[1]: a feature must be a mapping with a name '
      "and a type. Received: features[1]='x'",
    ),
    (
      'features:\n- name: a\n  type: normalize\n',
      'features.yaml:3: features[0].type: unknown feature type; accepted '
      'types are identity, target, key, concat, scale, zscore, log, '
      'bucketize, onehot, embedding, hash, cross, indicator, weight. Received: '
      "type='normalize'",
    ),
    (
      'features:\n- name: 9a\n  type: identity\n',
      'features.yaml:2: features[0].name: a feature name must be letters, '
      "digits and underscores, not starting with a digit. Received: name='9a'",
    ),
    (
      'features:\n- name: a\n  type: identity\n- name: a\n  type: log\n',
      'features.yaml:4: features[1].name: duplicate feature name; features[0] '
      "has the same name. Received: name='a'",
    ),
    (
      'features:\n- name: a\n  type: identity\n- name: X\n  type: concat\n'
      '  features:\n  - name: a\n    type: log\n',
      'features.yaml:7: features[1].features[0].name: duplicate feature '
      "name; features[0] has the same name. Received: name='a'",
    ),
    # Fields.
    (
      'features:\n- name: Y\n  type: target\n  fields: [a, b]\n',
      'features.yaml:4: features[0].fields: a target feature reads exactly '
      "one field. Received: fields=['a', 'b']",
    ),
    (
      'features:\n- name: c\n  type: cross\n  fields: a\n  buckets: 4\n',
      'features.yaml:4: features[0].fields: a cross feature needs at least 2 '
      "fields. Received: fields='a'",
    ),
    (
      'features:\n- name: c\n  type: identity\n  fields: {a: 1}\n',
      'features.yaml:4: features[0].fields: fields must be a field name or a '
      "list of field names. Received: fields={'a': 1}",
    ),
    # Concat.
    (
      'features:\n- name: X\n  type: concat\n  features:\n  - name: Y\n'
      '    type: target\n    fields: species\n',
      'features.yaml:6: features[0].features[0].type: a concat feature cannot '
      "contain target features (child 'Y'). Received: type='target'",
    ),
    (
      'features:\n- name: X\n  type: concat\n  features:\n  - name: k\n'
      '    type: key\n',
      'features.yaml:6: features[0].features[0].type: a concat feature cannot '
      "contain key features (child 'k'). Received: type='key'",
    ),
    (
      'features:\n- name: X\n  type: concat\n  features: []\n',
      'features.yaml:4: features[0].features: a concat feature needs a '
      'non-empty list of features. Received: features=[]',
    ),
    (
      'features:\n- name: X\n  type: concat\n  fields: a\n  features:\n'
      '  - name: b\n    type: log\n',
      'features.yaml:4: features[0].fields: a concat feature reads the fields '
      'of its features; it takes no fields of its own. Received: fields='
      "'a'",
    ),
    (
      'features:\n- name: a\n  type: log\n  features:\n  - name: b\n'
      '    type: log\n',
      'features.yaml:4: features[0].features: only concat features have child '
      'features, not log ones.',
    ),
    # Parameters.
    (
      'features:\n- name: a\n  type: scale\n  min: 1\n  max: 1\n',
      'features.yaml:5: features[0].max: max must be greater than min (1.0). '
      'Received: max=1.0',
    ),
    (
      'features:\n- name: a\n  type: scale\n  min: low\n',
      'features.yaml:4: features[0].min: min must be a number. Received: '
      "min='low'",
    ),
    (
      'features:\n- name: a\n  type: scale\n  mean: 0\n  range: 1\n',
      "features.yaml:4: features[0].mean: unknown parameters 'mean', 'range' "
      'for a scale feature; it accepts min, max. Received: mean=0',
    ),
    (
      'features:\n- name: a\n  type: zscore\n  min: 0\n',
      "features.yaml:4: features[0].min: unknown parameter 'min' for a zscore "
      'feature; it takes none. Received: min=0',
    ),
    (
      'features:\n- name: a\n  type: log\n  offset: true\n',
      'features.yaml:4: features[0].offset: offset must be a number. '
      'Received: offset=True',
    ),
    (
      'features:\n- name: a\n  type: bucketize\n',
      'features.yaml:2: features[0]: a bucketize feature needs exactly one of '
      "'boundaries' (a list) or 'buckets' (a count, quantiles from analysis). "
      'Received: params={}',
    ),
    (
      'features:\n- name: a\n  type: bucketize\n  buckets: 3\n'
      '  boundaries: [1]\n',
      'features.yaml:2: features[0]: a bucketize feature needs exactly one of',
    ),
    (
      'features:\n- name: a\n  type: bucketize\n  boundaries: [1, 3, 2]\n',
      'features.yaml:4: features[0].boundaries: boundaries must be strictly '
      'increasing. Received: boundaries=[1, 3, 2]',
    ),
    (
      'features:\n- name: a\n  type: bucketize\n  transform:\n'
      '    boundaries: 1,1\n',
      'features.yaml:5: features[0].transform.boundaries: boundaries must be '
      "strictly increasing. Received: boundaries='1,1'",
    ),
    (
      'features:\n- name: a\n  type: bucketize\n  buckets: 1\n',
      'features.yaml:4: features[0].buckets: buckets must be an integer >= 2. '
      'Received: buckets=1',
    ),
    (
      'features:\n- name: a\n  type: onehot\n  top_k: 0\n',
      'features.yaml:4: features[0].top_k: top_k must be an integer >= 1. '
      'Received: top_k=0',
    ),
    (
      'features:\n- name: a\n  type: onehot\n  oov_buckets: -1\n',
      'features.yaml:4: features[0].oov_buckets: oov_buckets must be an '
      'integer >= 0. Received: oov_buckets=-1',
    ),
    (
      'features:\n- name: a\n  type: embedding\n  top_k: 5\n',
      "features.yaml:2: features[0]: an embedding feature needs 'dim'. "
      "Received: params={'top_k': 5}",
    ),
    (
      'features:\n- name: a\n  type: embedding\n  dim: 0\n',
      'features.yaml:4: features[0].dim: dim must be an integer >= 1. '
      'Received: dim=0',
    ),
    (
      'features:\n- name: a\n  type: embedding\n  dim: 4\n'
      '  hash_buckets: 10\n  oov_buckets: 2\n',
      "features.yaml:6: features[0].oov_buckets: 'oov_buckets' needs a "
      "vocabulary; a feature with 'hash_buckets' has none. Received: "
      'oov_buckets=2',
    ),
    (
      'features:\n- name: a\n  type: hash\n',
      "features.yaml:2: features[0]: a hash feature needs 'buckets'. "
      'Received: params={}',
    ),
    (
      'features:\n- name: a\n  type: cross\n  fields: [b, c]\n  buckets: 2.5\n',
      'features.yaml:5: features[0].buckets: buckets must be an integer >= 1. '
      'Received: buckets=2.5',
    ),
    (
      'features:\n- name: a\n  type: log\n  offset: 1\n  transform:\n'
      '    offset: 2\n',
      "features.yaml:6: features[0].transform.offset: parameter 'offset' is "
      'given twice, here and beside the name. Received: offset=2',
    ),
  ],
)
def test_parse_errors_name_source_line_and_key(text, message):
  assert _error(text).startswith(message)


def test_validate_names_a_field_missing_from_the_schema():
  text = IRIS.replace('type: log', 'type: log\n    fields: sepal_length')
  features = FeatureSet.parse(text, 'features.yaml')
  with pytest.raises(
    DataError,
    match=re.escape(
      'features.yaml:9: features[0].features[1].fields: feature '
      "'sepal_width': field 'sepal_length' is not in the schema; the schema "
      'fields are species, sepal_width, petal_width, count. Received: '
      "fields='sepal_length'"
    ),
  ):
    features.validate(SCHEMA)


def test_validate_names_a_discrete_field_under_scale():
  features = FeatureSet.parse(
    IRIS.replace(
      '- name: petal_width', '- name: petal_width\n    fields: species'
    ),
    'features.yaml',
  )
  with pytest.raises(
    DataError,
    match=re.escape(
      'features.yaml:6: features[0].features[0].fields: feature '
      "'petal_width': a scale feature needs a numeric field; 'species' is "
      "discrete. Received: fields='species'"
    ),
  ):
    features.validate(SCHEMA)


def test_validate_locates_a_defaulted_field_at_its_feature():
  features = FeatureSet.parse(
    'features:\n- name: a\n  type: identity\n- name: b\n  type: zscore\n',
    'f.yaml',
  )
  with pytest.raises(
    DataError,
    match=re.escape(
      "f.yaml:2: features[0].fields: feature 'a': field 'a' is not in"
    ),
  ):
    features.validate(SCHEMA)


@pytest.mark.parametrize(
  'feature, message',
  [
    (
      Feature('z', 'zscore', fields='species'),
      "Feature 'z': a zscore feature needs a numeric field; 'species' is "
      "discrete. Received: 'species'",
    ),
    (
      Feature('b', 'bucketize', fields='species', params={'buckets': 3}),
      "Feature 'b': a bucketize feature needs a numeric field",
    ),
    (
      Feature('l', 'log'),
      "Feature 'l': field 'l' is not in the schema; the schema fields are "
      "species, sepal_width, petal_width, count. Received: 'l'",
    ),
    (
      Feature(
        'X', 'concat', features=(Feature('s', 'identity', fields='species'),)
      ),
      "Feature 's': an identity feature inside a concat needs a numeric "
      "field; 'species' is discrete (use onehot or embedding)",
    ),
    (
      Feature('c', 'cross', fields=('species', 'nope'), params={'buckets': 5}),
      "Feature 'c': field 'nope' is not in the schema",
    ),
  ],
)
def test_validate_of_a_set_built_in_code(feature, message):
  with pytest.raises(DataError, match=re.escape(message)):
    FeatureSet([feature]).validate(SCHEMA)


def test_constructor_rejects_duplicates_nested_too():
  with pytest.raises(
    DataError,
    match=re.escape(
      'FeatureSet: features[1].features[0].name: duplicate feature name; '
      "features[0] has the same name. Received: name='a'"
    ),
  ):
    FeatureSet(
      [
        Feature('a', 'identity'),
        Feature('X', 'concat', features=(Feature('a', 'log'),)),
      ]
    )


def test_load_reads_a_file(tmp_path):
  path = tmp_path / 'features.yaml'
  path.write_text(IRIS)
  assert FeatureSet.load(str(path)) == FeatureSet.parse(IRIS)


def test_load_errors_name_the_path(tmp_path):
  path = tmp_path / 'features.yaml'
  path.write_text(IRIS.replace('type: log', 'type: logarithm'))
  with pytest.raises(
    DataError,
    match=re.escape(
      f'{path}:8: features[0].features[1].type: unknown feature type'
    ),
  ):
    FeatureSet.load(str(path))


def test_validate_after_load_names_the_path(tmp_path):
  path = tmp_path / 'features.yaml'
  path.write_text(IRIS.replace('fields: species', 'fields: label'))
  features = FeatureSet.load(str(path))
  with pytest.raises(
    DataError,
    match=re.escape(
      f"{path}:11: features[1].fields: feature 'Y': field 'label' is not in "
      'the schema'
    ),
  ):
    features.validate(SCHEMA)


def test_load_of_a_missing_file_names_it(tmp_path):
  path = str(tmp_path / 'nope' / 'features.yaml')
  with pytest.raises(DataError, match=re.escape(f'{path}: no such file')):
    FeatureSet.load(path)


def test_embedding_parameters_accept_what_the_tables_accept():
  # The data layer cannot import tensorfx.embeddings, so it keeps its own
  # lists of combiners and hashings; they must not drift apart.
  from tensorfx import embeddings
  from tensorfx.embeddings import _options

  assert _featureparams._COMBINERS == embeddings.COMBINERS
  assert _featureparams._HASHINGS == _options.HASHINGS
