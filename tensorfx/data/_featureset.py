"""FeatureSet: how raw schema fields become model inputs (YAML).

A feature names a transform (its type), the schema fields it reads and the
transform's parameters. `tensorfx.data._transforms` compiles a FeatureSet
into a tf.Transform `preprocessing_fn`; this module (and `_feature`,
`_featureparams`, `_featuretypes`) only describes and validates, so it runs
without TensorFlow.
"""

from typing import Any

from tensorfx import _yaml
from tensorfx.data import _missing
from tensorfx.data._collection import NamedCollection
from tensorfx.data._feature import Feature
from tensorfx.data._featuretypes import BAGS
from tensorfx.data._featuretypes import NOT_IN_CONCAT
from tensorfx.data._featuretypes import NUMERIC_TYPES
from tensorfx.data._featuretypes import SINGLE_VALUED
from tensorfx.data._featuretypes import FeatureType
from tensorfx.data._featuretypes import an

_FEATURE_KEYS = ('name', 'type', 'fields', 'features', 'transform')
# Types whose name names their vocabulary file in the analysis.
_VOCABULARY_TYPES = frozenset({FeatureType.ONEHOT, FeatureType.EMBEDDING})


def _parse_feature(item, where, locations):
  """Builds a Feature from its YAML mapping; records where it was."""
  if not isinstance(item, dict):
    raise where.error(
      'a feature must be a mapping with a name and a type', item
    )
  for key in ('name', 'type'):
    if key not in item:
      raise where.error(f'a feature needs a {key!r}', item)
  # Made a Params (defaults filled in) by the Feature.
  params: Any = {k: v for k, v in item.items() if k not in _FEATURE_KEYS}
  # The original tensorfx put parameters under `transform:`.
  transform = item.get('transform')
  if transform is not None:
    if not isinstance(transform, dict):
      raise where.at(item, 'transform').error(
        'transform must be a mapping of parameters', transform
      )
    for key, value in transform.items():
      if key in params:
        raise (
          where.at(item, 'transform')
          .at(transform, key)
          .error(
            f'parameter {key!r} is given twice, here and beside the name', value
          )
        )
      params[key] = value
  children = item.get('features', ())
  if isinstance(children, list):
    children_where = where.at(item, 'features')
    children = tuple(
      _parse_feature(child, children_where.at(children, i), locations)
      for i, child in enumerate(children)
    )
  try:
    feature = Feature(
      item['name'],
      item['type'],
      fields=item.get('fields', ()),
      features=children,
      params=params,
    )
  except _yaml.Invalid as e:
    path = e.path
    if (
      transform is not None
      and path
      and path[0] in transform
      and path[0] not in item
    ):
      path = ('transform',) + path
    raise where.locate(item, path).error(e.problem, e.value, e.label) from None
  if feature.name not in locations:
    fields_where = where.at(item, 'fields')
    locations[feature.name] = (where, fields_where)
  return feature


class FeatureSet(NamedCollection):
  """The features a model reads, in order. Immutable; equal by value.

  Example:
    >>> features = FeatureSet.parse('''
    ... features:
    ... - name: X
    ...   type: concat
    ...   features:
    ...   - name: petal_width
    ...     type: scale
    ...   - name: sepal_width
    ...     type: log
    ... - name: Y
    ...   type: target
    ...   fields: species
    ... ''', 'features.yaml')
    >>> features['X'].fields, features.target.name
    (('petal_width', 'sepal_width'), 'Y')

  Args:
    features: the top-level `Feature`s. Names are unique across the set,
      children of concat features included (a name also names the
      feature's vocabulary file), except that children of concats other
      than onehot and embedding may repeat a name among themselves.

  Raises:
    DataError: a feature is not a Feature, or two share a name.
  """

  _KIND = 'FeatureSet'
  _NOUN = 'a feature set'
  _KEY = 'features'
  _ITEM = 'feature'
  _ITEM_CLASS = 'Feature'

  def __init__(self, features):
    self._keep(features, Feature, _named, _may_repeat)
    # Where each feature was parsed from (name -> (Where, fields Where)),
    # for validate()'s messages. Not part of the value.
    self._locations = {}

  @property
  def features(self):
    """The top-level features, a tuple of `Feature`s."""
    return self._items

  @property
  def targets(self):
    """The target features, a tuple."""
    return tuple(f for f in self._items if f.type is FeatureType.TARGET)

  @property
  def target(self):
    """The target feature, or None when there is none.

    Raises:
      DataError: there are several targets.
    """
    targets = self.targets
    if len(targets) > 1:
      raise _yaml.Invalid(
        'FeatureSet',
        (),
        'there are several target features; use `targets`',
        [t.name for t in targets],
      )
    return targets[0] if targets else None

  @property
  def weight(self):
    r"""The `weight` feature (per-example loss weights), or None.

    Example:
      >>> FeatureSet.parse('features:\\n- name: w\\n  type: weight\\n'
      ...                  '  fields: importance\\n').weight.fields
      ('importance',)

    Raises:
      DataError: there are several weight features.
    """
    weights = tuple(f for f in self._items if f.type is FeatureType.WEIGHT)
    if len(weights) > 1:
      raise _yaml.Invalid(
        'FeatureSet',
        (),
        'there are several weight features; an example has one weight',
        [w.name for w in weights],
      )
    return weights[0] if weights else None

  @property
  def keys(self):
    """The key features (instance keys passed through to predictions)."""
    return tuple(f for f in self._items if f.type is FeatureType.KEY)

  def validate(self, schema):
    """Checks the features against the schema of the data they read.

    Example:
      >>> features.validate(schema)  # doctest: +SKIP

    Args:
      schema: the `Schema` of the raw data.

    Raises:
      DataError: naming the feature (and its file and line when parsed from
        YAML): a field it reads is not in the schema, or a numeric-only
        type (scale, zscore, log, bucketize) reads a discrete field, or an
        identity feature in a concat reads a discrete field, or a target,
        key, cross or indicator reads a multivalent field, or an indicator
        reads a field whose missing values never reach the transform graph
        (a default, or none allowed), or a numeric type (or a
        concat child other than onehot, embedding, hash, bucketize) reads a
        variable-length one.
    """
    for feature in self._items:
      for each in feature.walk():
        self._validate_one(each, schema, in_concat=each is not feature)
      self._validate_table(feature, schema)

  def _validate_table(self, feature, schema):
    """`table: NAME` names a feature with its own table, of the same keys."""
    shared = (
      feature.params.get('table')
      if feature.type is FeatureType.EMBEDDING
      else None
    )
    if shared is None:
      return
    where, _ = self._locations.get(feature.name, (None, None))
    owner = self[shared] if shared in self else None

    def fail(problem):
      if where is None:
        return _yaml.Invalid(
          f'Feature {feature.name!r}', ('table',), problem, shared
        )
      return where.error(f'feature {feature.name!r}: table: {problem}', shared)

    if owner is None or owner.table != owner.name:
      raise fail(
        f'{shared!r} must be an embedding feature with its own '
        "table ('capacity') in this feature set"
      )
    mine = schema[feature.fields[0]].numeric
    theirs = schema[owner.fields[0]].numeric
    if mine != theirs:
      raise fail(
        f'the keys of {feature.name!r} ({feature.fields[0]}) and of '
        f'table {shared!r} ({owner.fields[0]}) must both be '
        'integers or both be strings'
      )

  def _validate_one(self, feature, schema, in_concat):
    where, fields_where = self._locations.get(feature.name, (None, None))

    def fail(problem, value, at_fields=True):
      located = fields_where if at_fields else where
      if located is None:
        return _yaml.Invalid(f'Feature {feature.name!r}', (), problem, value)
      return located.error(f'feature {feature.name!r}: {problem}', value)

    # Constructors already enforce these; a subclass or a changed
    # constructor must not slip through to the transform.
    if feature.type is FeatureType.TARGET and len(feature.fields) != 1:
      raise fail('a target feature reads exactly one field', feature.fields)
    if in_concat and feature.type in NOT_IN_CONCAT:
      raise fail(
        f'a concat feature cannot contain {feature.type.value} features',
        feature.type.value,
        at_fields=False,
      )
    if in_concat and feature.table is not None:
      raise fail(
        'an embedding table over raw keys cannot be part of a concat',
        feature.type.value,
        at_fields=False,
      )
    if feature.type is FeatureType.CONCAT:
      return
    for name in feature.fields:
      if name not in schema:
        raise fail(
          f'field {name!r} is not in the schema; the schema fields '
          f'are {", ".join(schema.field_names)}',
          name,
        )
      field = schema[name]
      if field.length != 1 and feature.type in SINGLE_VALUED:
        raise fail(
          f'{an(feature.type.value)} feature needs a single-valued '
          f'field (length 1); {name!r} has length {field.length}',
          name,
        )
      if (
        field.length == 0
        and feature.type not in BAGS
        and (feature.type in NUMERIC_TYPES or in_concat)
      ):
        raise fail(
          f'{an(feature.type.value)} feature needs a fixed-length '
          f'field; {name!r} has variable length (0): read it with '
          'onehot, embedding, hash or bucketize (a bag of values)',
          name,
        )
      if feature.type in NUMERIC_TYPES and not field.numeric:
        raise fail(
          f'{an(feature.type.value)} feature needs a numeric field; '
          f'{name!r} is {field.type.value}',
          name,
        )
      if (
        feature.type is FeatureType.INDICATOR
        and field.length == 1
        and not _missing.imputed(field)
        and _missing.fill_value(field) != ''
      ):
        raise fail(
          f'an indicator feature needs a field whose missing values '
          f'reach the transform; {name!r} '
          + (
            'fills them with its default: use missing: zero (or '
            'mean, median, mode) instead'
            if field.default is not None
            else 'allows none: give it missing: mean, median, mode or zero'
          ),
          name,
        )
      if (
        in_concat and feature.type is FeatureType.IDENTITY and not field.numeric
      ):
        raise fail(
          f'an identity feature inside a concat needs a numeric '
          f'field; {name!r} is {field.type.value} (use onehot or '
          'embedding)',
          name,
        )

  @classmethod
  def parse(cls, text, source='<string>'):
    r"""Parses a feature set from YAML text.

    Example:
      >>> FeatureSet.parse('features:\n- name: y\n  type: target\n').target
      Feature(name='y', type=<FeatureType.TARGET: 'target'>, fields=('y',), ...)

    Args:
      text: YAML: a mapping whose `features` lists mappings with `name`,
        `type`, optionally `fields` (a name or a list), `features` (for
        concat) and the type's parameters beside them (or, as in the
        original tensorfx, under `transform`).
      source: where the text came from, for error messages.

    Raises:
      DataError: the text is invalid; names the source, line and key path.
    """
    if isinstance(text, FeatureSet):
      return text  # The original accepted a parsed set too.
    locations: dict[str, Any] = {}
    feature_set: FeatureSet = cls._parse_list(
      text, source, lambda item, where: _parse_feature(item, where, locations)
    )
    feature_set._locations = locations
    return feature_set


def _named(feature, path):
  yield path, feature
  for j, child in enumerate(feature.features):
    yield from _named(child, path + ('features', j))


def _may_repeat(first, path, feature):
  """Whether a feature may share the name of `first` (its (path, feature)).

  Children of concats may repeat a name, as the original tensorfx's own
  samples did, unless either names a vocabulary file by it (onehot,
  embedding): the concat reads its children by position, not by name.
  """
  other_path, other = first
  nested = len(path) > 2 and len(other_path) > 2
  return nested and not {feature.type, other.type} & _VOCABULARY_TYPES
