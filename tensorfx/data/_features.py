"""FeatureSet: how raw schema fields become model inputs (YAML).

A feature names a transform (its type), the schema fields it reads and the
transform's parameters. `tensorfx.data._transforms` compiles a FeatureSet
into a tf.Transform `preprocessing_fn`; this module only describes and
validates, so it runs without TensorFlow.
"""

import collections.abc
import dataclasses
import enum
import math

from tensorfx import _yaml
from tensorfx.data import _missing
from tensorfx.data._schema import is_identifier

_NOTHING = _yaml.NOTHING


class FeatureType(enum.StrEnum):
  """The transform that makes a feature.

  YAML also accepts the aliases 'z-score'/'z_score' (zscore),
  'one-hot'/'one_hot' (onehot), 'bucket' (bucketize) and 'hash_bucket'
  (hash).

  Example:
    >>> FeatureType('one-hot')
    <FeatureType.ONEHOT: 'onehot'>
  """
  IDENTITY = 'identity'
  TARGET = 'target'
  KEY = 'key'
  CONCAT = 'concat'
  SCALE = 'scale'
  ZSCORE = 'zscore'
  LOG = 'log'
  BUCKETIZE = 'bucketize'
  ONEHOT = 'onehot'
  EMBEDDING = 'embedding'
  HASH = 'hash'
  CROSS = 'cross'
  INDICATOR = 'indicator'

  @classmethod
  def _missing_(cls, value):
    if not isinstance(value, str):
      return None
    name = value.strip().lower()
    name = _ALIASES.get(name, name)
    return cls._value2member_map_.get(name)


_ALIASES = {
    'z-score': 'zscore', 'z_score': 'zscore',
    'one-hot': 'onehot', 'one_hot': 'onehot',
    'bucket': 'bucketize',
    'hash_bucket': 'hash',
}

# Types that need a numeric field: they do arithmetic on the value.
NUMERIC_TYPES = frozenset({FeatureType.SCALE, FeatureType.ZSCORE,
                           FeatureType.LOG, FeatureType.BUCKETIZE})
# Types that read only single-valued (length 1) fields.
_SINGLE_VALUED = frozenset({FeatureType.TARGET, FeatureType.KEY,
                            FeatureType.CROSS, FeatureType.INDICATOR})
# Types that read a variable-length field as a bag of values.
_BAGS = frozenset({FeatureType.ONEHOT, FeatureType.EMBEDDING, FeatureType.HASH,
                   FeatureType.BUCKETIZE})
# Types that may not sit inside a concat (the concat would hide them).
_NOT_IN_CONCAT = frozenset({FeatureType.TARGET, FeatureType.KEY,
                            FeatureType.CONCAT})


def _a(word):
  return f'an {word}' if word[0] in 'aeiou' else f'a {word}'


def _accepted_types():
  return ', '.join(t.value for t in FeatureType)


class Params(collections.abc.Mapping):
  """Immutable, hashable parameters of a feature: a read-only mapping.

  Lists become tuples, so features can be compared, hashed and used as keys.

  Example:
    >>> params = Params({'boundaries': [1, 2]})
    >>> params['boundaries'], params.get('buckets')
    ((1, 2), None)
  """

  def __init__(self, items=None, **kwargs):
    data = dict(items or {}, **kwargs)
    self._data = {k: _frozen(v) for k, v in data.items()}
    self._hash = None

  def __getitem__(self, key):
    return self._data[key]

  def __iter__(self):
    return iter(self._data)

  def __len__(self):
    return len(self._data)

  def __eq__(self, other):
    if isinstance(other, collections.abc.Mapping):
      return self._data == dict(other.items())
    return NotImplemented

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(frozenset(self._data.items()))
    return self._hash

  def __repr__(self):
    return f'Params({self._data!r})'


def _frozen(value):
  if isinstance(value, (list, tuple)):
    return tuple(_frozen(v) for v in value)
  if isinstance(value, collections.abc.Mapping):
    return Params(value)
  return value


# Parameter checks: each returns the normalized value or raises ValueError
# with what was expected.


def _is_int(value):
  return isinstance(value, int) and not isinstance(value, bool)


def _number(value):
  if not (_is_int(value) or isinstance(value, float)) or math.isnan(value):
    raise ValueError('must be a number')
  return float(value)


def _int_at_least(minimum):
  def check(value):
    if not _is_int(value) or value < minimum:
      raise ValueError(f'must be an integer >= {minimum}')
    return value
  return check


def _boundaries(value):
  # The original tensorfx wrote boundaries as a string: '18,35,55,65'.
  if isinstance(value, str):
    try:
      value = [float(v) for v in value.split(',') if v.strip()]
    except ValueError:
      raise ValueError('must be a list of numbers') from None
  if not isinstance(value, (list, tuple)) or not value:
    raise ValueError('must be a non-empty list of numbers')
  try:
    numbers = tuple(_number(v) for v in value)
  except ValueError:
    raise ValueError('must be a list of numbers') from None
  if any(a >= b for a, b in zip(numbers, numbers[1:])):
    raise ValueError('must be strictly increasing')
  return numbers


_POSITIVE = _int_at_least(1)

# How an embedding table reduces an instance's keys (tensorfx.embeddings).
_COMBINERS = ('sum', 'mean', 'sqrtn')


def _combiner(value):
  if value not in _COMBINERS:
    raise ValueError(f'must be one of {", ".join(_COMBINERS)}')
  return value


def _feature_name(value):
  if not isinstance(value, str) or not is_identifier(value):
    raise ValueError('must be the name of another embedding feature')
  return value


# How a table over raw keys gives them rows (tensorfx.embeddings).
_HASHINGS = ('mod', 'fingerprint', 'exact')


def _hashing(value):
  if value not in _HASHINGS:
    raise ValueError(f'must be one of {", ".join(_HASHINGS)}')
  return value


def _initializer(value):
  # A tf_keras initializer's name, or its config; the table checks which.
  if isinstance(value, str) and value:
    return value
  if isinstance(value, collections.abc.Mapping) and isinstance(
      value.get('class_name'), str) and set(value) <= {'class_name',
                                                       'config'}:
    return value
  raise ValueError("must be a tf_keras initializer's name (e.g. "
                   'truncated_normal) or {class_name: ..., config: {...}}')


# Embedding parameters of a table over raw keys (`capacity`), and the ones a
# feature sharing another's table (`table`) takes from it.
_TABLE_ONLY = ('admit_after', 'evict_after_steps', 'evict_every_steps',
               'hashing', 'initializer')
_VOCABULARY_PARAMS = ('top_k', 'oov_buckets', 'hash_buckets')

# Per type: parameter name -> (check, default or _NOTHING when optional).
_PARAMS = {
    FeatureType.SCALE: {'min': (_number, 0.0), 'max': (_number, 1.0)},
    FeatureType.LOG: {'offset': (_number, 1.0)},
    FeatureType.BUCKETIZE: {'boundaries': (_boundaries, _NOTHING),
                            'buckets': (_int_at_least(2), _NOTHING)},
    FeatureType.ONEHOT: {'top_k': (_POSITIVE, _NOTHING),
                         'oov_buckets': (_int_at_least(0), 1)},
    FeatureType.EMBEDDING: {'dim': (_POSITIVE, _NOTHING),
                            'top_k': (_POSITIVE, _NOTHING),
                            'oov_buckets': (_int_at_least(0), 1),
                            'hash_buckets': (_POSITIVE, _NOTHING),
                            'combiner': (_combiner, _NOTHING),
                            'capacity': (_POSITIVE, _NOTHING),
                            'table': (_feature_name, _NOTHING),
                            'admit_after': (_POSITIVE, _NOTHING),
                            'evict_after_steps': (_POSITIVE, _NOTHING),
                            'evict_every_steps': (_POSITIVE, _NOTHING),
                            'hashing': (_hashing, _NOTHING),
                            'initializer': (_initializer, _NOTHING)},
    FeatureType.HASH: {'buckets': (_POSITIVE, _NOTHING)},
    FeatureType.CROSS: {'buckets': (_POSITIVE, _NOTHING)},
}
_REQUIRED = {
    FeatureType.EMBEDDING: ('dim',),
    FeatureType.HASH: ('buckets',),
    FeatureType.CROSS: ('buckets',),
}


def _as_fields(fields):
  # The original tensorfx wrote several fields as one string: 'a,b'.
  if isinstance(fields, str):
    return tuple(f.strip() for f in fields.split(',') if f.strip())
  if isinstance(fields, (list, tuple)):
    return tuple(fields)
  return fields


@dataclasses.dataclass(frozen=True)
class Feature:
  """One named model input (or target, or key) made from schema fields.

  Example:
    >>> Feature('petal', 'scale', fields='petal_width').params['max']
    1.0
    >>> Feature('age', 'bucketize', params={'boundaries': [18, 65]}).fields
    ('age',)
    >>> x = Feature('X', 'concat', features=(Feature('a', 'zscore'),
    ...                                      Feature('b', 'log')))
    >>> x.fields
    ('a', 'b')

  Attributes:
    name: the feature's name (letters, digits, underscores); unique in its
      FeatureSet, children of concat features included.
    type: a `FeatureType` (or its name or alias, e.g. 'one-hot').
    fields: the schema fields it reads: a tuple (a name or a comma-separated
      string is accepted). Defaults to `(name,)`. Cross features read two or
      more, concat features none of their own (the property is the union of
      their children's fields, in order), every other type exactly one.
    features: the children of a concat feature (not target, key or concat).
    params: the type's parameters, a read-only mapping with defaults filled
      in: `feature.params['min']`, `feature.params.get('top_k')`.
      scale: `min` (0.0) < `max` (1.0). log: `offset` (1.0), the value is
      log(x + offset). bucketize: either `boundaries` (strictly increasing
      numbers) or `buckets` (>= 2, quantiles from analysis). onehot:
      `top_k` (optional), `oov_buckets` (1). embedding: `dim` (required),
      then `top_k` and `oov_buckets` (1) for a vocabulary, or
      `hash_buckets` instead, or a table over raw keys: `capacity` and the
      table's options (`hashing`, `initializer`, `admit_after`,
      `evict_after_steps`, `evict_every_steps`), or `table` (another's),
      and `combiner`. hash and cross: `buckets` (required).
      identity, target, key, zscore, concat and indicator (1.0 where the
      field's value is missing) take none.

  Raises:
    DataError: a value is invalid; the message names the feature and key.
  """
  name: str
  type: FeatureType
  fields: tuple[str, ...] = ()
  features: tuple['Feature', ...] = ()
  params: Params = Params()

  def __post_init__(self):
    if not is_identifier(self.name):
      raise _yaml.Invalid(
          'Feature', ('name',), 'a feature name must be letters, digits and '
          'underscores, not starting with a digit', self.name)
    subject = f'Feature {self.name!r}'
    try:
      kind = FeatureType(self.type)
    except ValueError:
      raise _yaml.Invalid(subject, ('type',), 'unknown feature type; '
                          f'accepted types are {_accepted_types()}',
                          self.type) from None
    object.__setattr__(self, 'type', kind)
    self._init_features(subject, kind)
    self._init_fields(subject, kind)
    self._init_params(subject, kind)

  def _init_features(self, subject, kind):
    features = self.features
    if not isinstance(features, (list, tuple)):
      raise _yaml.Invalid(subject, ('features',),
                          'features must be a list of features', features)
    features = tuple(features)
    object.__setattr__(self, 'features', features)
    if kind is not FeatureType.CONCAT:
      if features:
        raise _yaml.Invalid(subject, ('features',), 'only concat features '
                            f'have child features, not {kind.value} ones',
                            features)
      return
    if not features:
      raise _yaml.Invalid(subject, ('features',), 'a concat feature needs a '
                          'non-empty list of features', features)
    for i, child in enumerate(features):
      if not isinstance(child, Feature):
        raise _yaml.Invalid(subject, ('features', i), 'expected a Feature',
                            child)
      if child.type in _NOT_IN_CONCAT:
        raise _yaml.Invalid(subject, ('features', i, 'type'), 'a concat '
                            f'feature cannot contain {child.type.value} '
                            f'features (child {child.name!r})',
                            child.type.value)

  def _init_fields(self, subject, kind):
    fields = _as_fields(self.fields)
    if not isinstance(fields, tuple) or not all(
        isinstance(f, str) and f for f in fields):
      raise _yaml.Invalid(subject, ('fields',), 'fields must be a field name '
                          'or a list of field names', self.fields)
    if kind is FeatureType.CONCAT:
      union = []
      for child in self.features:
        union.extend(f for f in child.fields if f not in union)
      if fields and fields != tuple(union):
        raise _yaml.Invalid(subject, ('fields',), 'a concat feature reads the '
                            'fields of its features; it takes no fields of '
                            'its own', self.fields)
      fields = tuple(union)
    elif not fields:
      fields = (self.name,)
    if len(set(fields)) != len(fields):
      raise _yaml.Invalid(subject, ('fields',), 'fields must not repeat',
                          self.fields)
    if kind is FeatureType.CROSS and len(fields) < 2:
      raise _yaml.Invalid(subject, ('fields',), 'a cross feature needs at '
                          'least 2 fields', self.fields or fields)
    if kind not in (FeatureType.CROSS, FeatureType.CONCAT) and \
        len(fields) != 1:
      raise _yaml.Invalid(subject, ('fields',), f'{_a(kind.value)} feature '
                          'reads exactly one field', self.fields)
    object.__setattr__(self, 'fields', fields)

  def _init_params(self, subject, kind):
    given = self.params
    if given is None:
      given = {}
    if not isinstance(given, collections.abc.Mapping):
      raise _yaml.Invalid(subject, ('params',),
                          'params must be a mapping', given)
    specs = _PARAMS.get(kind, {})
    unknown = [k for k in given if k not in specs]
    if unknown:
      names = ', '.join(repr(k) for k in unknown)
      accepts = (f'it accepts {", ".join(specs)}' if specs
                 else 'it takes none')
      raise _yaml.Invalid(subject, (unknown[0],), f'unknown parameter'
                          f'{"s" if len(unknown) > 1 else ""} {names} for '
                          f'{_a(kind.value)} feature; {accepts}',
                          given[unknown[0]])
    if kind is FeatureType.BUCKETIZE and \
        ('boundaries' in given) == ('buckets' in given):
      raise _yaml.Invalid(subject, (), 'a bucketize feature needs exactly '
                          "one of 'boundaries' (a list) or 'buckets' (a "
                          'count, quantiles from analysis)', dict(given),
                          label='params')
    hashed = kind is FeatureType.EMBEDDING and 'hash_buckets' in given
    if hashed:
      for key in ('top_k', 'oov_buckets'):
        if key in given:
          raise _yaml.Invalid(subject, (key,), f"{key!r} needs a vocabulary; "
                              "a feature with 'hash_buckets' has none",
                              given[key])
    keyed = kind is FeatureType.EMBEDDING and (
        'capacity' in given or 'table' in given)
    if kind is FeatureType.EMBEDDING:
      self._check_table_params(subject, given)
    for key in _REQUIRED.get(kind, ()):
      if key == 'dim' and kind is FeatureType.EMBEDDING and 'table' in given:
        continue  # The shared table's.
      if key not in given:
        raise _yaml.Invalid(subject, (), f'{_a(kind.value)} feature needs '
                            f'{key!r}', dict(given), label='params')
    params = {}
    for key, (check, default) in specs.items():
      if key in given:
        try:
          params[key] = check(given[key])
        except ValueError as e:
          raise _yaml.Invalid(subject, (key,), f'{key} {e}',
                              given[key]) from None
      elif default is not _NOTHING and not (
          (hashed or keyed) and key == 'oov_buckets'):
        params[key] = default
    if kind is FeatureType.SCALE and not params['min'] < params['max']:
      raise _yaml.Invalid(subject, ('max',), 'max must be greater than min '
                          f'({params["min"]})', params['max'])
    object.__setattr__(self, 'params', Params(params))

  @staticmethod
  def _check_table_params(subject, given):
    """An embedding table over raw keys takes no vocabulary parameters."""
    if 'capacity' in given and 'table' in given:
      raise _yaml.Invalid(subject, ('table',), "'table' shares another "
                          "feature's table; a feature with 'capacity' has "
                          'its own', given['table'])
    owner = 'capacity' if 'capacity' in given else (
        'table' if 'table' in given else None)
    if owner is not None:
      refused = _VOCABULARY_PARAMS + (
          ('dim',) + _TABLE_ONLY if owner == 'table' else ())
      for key in refused:
        if key in given:
          reason = (f"{key!r} belongs to the table's own feature" if
                    owner == 'table' else
                    f"{key!r} needs a vocabulary; a table hashes raw keys "
                    'itself')
          raise _yaml.Invalid(subject, (key,), f'{reason} (this feature has '
                              f'{owner!r})', given[key])
      if 'evict_every_steps' in given and 'evict_after_steps' not in given:
        raise _yaml.Invalid(subject, ('evict_every_steps',), "'evict_every_"
                            "steps' needs 'evict_after_steps'",
                            given['evict_every_steps'])
      return
    for key in _TABLE_ONLY:
      if key in given:
        raise _yaml.Invalid(subject, (key,), f"{key!r} needs an embedding "
                            "table: give the feature 'capacity'", given[key])

  @property
  def table(self):
    """For an embedding over raw keys, the feature owning its table.

    The feature's own name when it has `capacity`, the shared table's
    feature with `table: NAME`, None otherwise.
    """
    if self.type is not FeatureType.EMBEDDING:
      return None
    if self.params.get('capacity'):
      return self.name
    return self.params.get('table')

  def walk(self):
    """This feature, then its children (depth first)."""
    yield self
    for child in self.features:
      yield from child.walk()

  def to_dict(self):
    """The YAML mapping of the feature, without the values left at default."""
    data = {'name': self.name, 'type': self.type.value}
    if self.type is FeatureType.CONCAT:
      data['features'] = [f.to_dict() for f in self.features]
    elif self.fields != (self.name,):
      data['fields'] = (self.fields[0] if len(self.fields) == 1
                        else list(self.fields))
    specs = _PARAMS.get(self.type, {})
    for key, value in self.params.items():
      if value != specs[key][1]:
        data[key] = list(value) if isinstance(value, tuple) else value
    return data


_FEATURE_KEYS = ('name', 'type', 'fields', 'features', 'transform')


def _parse_feature(item, where, locations):
  """Builds a Feature from its YAML mapping; records where it was."""
  if not isinstance(item, dict):
    raise where.error('a feature must be a mapping with a name and a type',
                      item)
  for key in ('name', 'type'):
    if key not in item:
      raise where.error(f'a feature needs a {key!r}', item)
  params = {k: v for k, v in item.items() if k not in _FEATURE_KEYS}
  # The original tensorfx put parameters under `transform:`.
  transform = item.get('transform')
  if transform is not None:
    if not isinstance(transform, dict):
      raise where.at(item, 'transform').error(
          'transform must be a mapping of parameters', transform)
    for key, value in transform.items():
      if key in params:
        raise where.at(item, 'transform').at(transform, key).error(
            f'parameter {key!r} is given twice, here and beside the name',
            value)
      params[key] = value
  children = item.get('features', ())
  if isinstance(children, list):
    children_where = where.at(item, 'features')
    children = tuple(
        _parse_feature(child, children_where.at(children, i), locations)
        for i, child in enumerate(children))
  try:
    feature = Feature(item['name'], item['type'],
                      fields=item.get('fields', ()), features=children,
                      params=params)
  except _yaml.Invalid as e:
    path = e.path
    if transform is not None and path and path[0] in transform and \
        path[0] not in item:
      path = ('transform',) + path
    raise where.locate(item, path).error(e.problem, e.value,
                                         e.label) from None
  if feature.name not in locations:
    fields_where = where.at(item, 'fields')
    locations[feature.name] = (where, fields_where)
  return feature


class FeatureSet:
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
      feature's vocabulary file).

  Raises:
    DataError: a feature is not a Feature, or two share a name.
  """

  def __init__(self, features):
    features = tuple(features)
    seen = {}
    for i, feature in enumerate(features):
      if not isinstance(feature, Feature):
        raise _yaml.Invalid('FeatureSet', ('features', i),
                            'expected a Feature', feature)
      for path, each in _named(feature, ('features', i)):
        if each.name in seen:
          raise _yaml.Invalid('FeatureSet', path + ('name',),
                              'duplicate feature name; '
                              f'{_dotted(seen[each.name])} has the same name',
                              each.name)
        seen[each.name] = path
    self._features = features
    self._index = {f.name: f for f in features}
    # Where each feature was parsed from (name -> (Where, fields Where)),
    # for validate()'s messages. Not part of the value.
    self._locations = {}

  @property
  def features(self):
    """The top-level features, a tuple of `Feature`s."""
    return self._features

  @property
  def targets(self):
    """The target features, a tuple."""
    return tuple(f for f in self._features if f.type is FeatureType.TARGET)

  @property
  def target(self):
    """The target feature, or None when there is none.

    Raises:
      DataError: there are several targets.
    """
    targets = self.targets
    if len(targets) > 1:
      raise _yaml.Invalid('FeatureSet', (), 'there are several target '
                          'features; use `targets`',
                          [t.name for t in targets])
    return targets[0] if targets else None

  @property
  def keys(self):
    """The key features (instance keys passed through to predictions)."""
    return tuple(f for f in self._features if f.type is FeatureType.KEY)

  def __getitem__(self, key):
    """The top-level feature named `key` (a str), or at index `key`."""
    if isinstance(key, int) and not isinstance(key, bool):
      return self._features[key]
    if key not in self._index:
      raise _yaml.Invalid(
          'FeatureSet', (), f'no feature named {key!r}; the features are '
          f'{", ".join(self._index) or "(none)"}', key)
    return self._index[key]

  def __contains__(self, name):
    return name in self._index

  def __iter__(self):
    return iter(self._features)

  def __len__(self):
    return len(self._features)

  def __eq__(self, other):
    if not isinstance(other, FeatureSet):
      return NotImplemented
    return self._features == other._features

  def __hash__(self):
    return hash(self._features)

  def __repr__(self):
    return f'FeatureSet({list(self._features)!r})'

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
    for feature in self._features:
      for each in feature.walk():
        self._validate_one(each, schema, in_concat=each is not feature)
      self._validate_table(feature, schema)

  def _validate_table(self, feature, schema):
    """`table: NAME` names a feature with its own table, of the same keys."""
    shared = feature.params.get('table') if \
        feature.type is FeatureType.EMBEDDING else None
    if shared is None:
      return
    where, _ = self._locations.get(feature.name, (None, None))
    owner = self._index.get(shared)

    def fail(problem):
      if where is None:
        return _yaml.Invalid(f'Feature {feature.name!r}', ('table',),
                             problem, shared)
      return where.error(f'feature {feature.name!r}: table: {problem}',
                         shared)

    if owner is None or owner.table != owner.name:
      raise fail(f'{shared!r} must be an embedding feature with its own '
                 "table ('capacity') in this feature set")
    mine = schema[feature.fields[0]].numeric
    theirs = schema[owner.fields[0]].numeric
    if mine != theirs:
      raise fail(f'the keys of {feature.name!r} ({feature.fields[0]}) and of '
                 f'table {shared!r} ({owner.fields[0]}) must both be '
                 'integers or both be strings')

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
    if in_concat and feature.type in _NOT_IN_CONCAT:
      raise fail(f'a concat feature cannot contain {feature.type.value} '
                 'features', feature.type.value, at_fields=False)
    if in_concat and feature.table is not None:
      raise fail('an embedding table over raw keys cannot be part of a '
                 'concat', feature.type.value, at_fields=False)
    if feature.type is FeatureType.CONCAT:
      return
    for name in feature.fields:
      if name not in schema:
        raise fail(f'field {name!r} is not in the schema; the schema fields '
                   f'are {", ".join(schema.field_names)}', name)
      field = schema[name]
      if field.length != 1 and feature.type in _SINGLE_VALUED:
        raise fail(f'{_a(feature.type.value)} feature needs a single-valued '
                   f'field (length 1); {name!r} has length {field.length}',
                   name)
      if field.length == 0 and feature.type not in _BAGS and (
          feature.type in NUMERIC_TYPES or in_concat):
        raise fail(f'{_a(feature.type.value)} feature needs a fixed-length '
                   f'field; {name!r} has variable length (0): read it with '
                   'onehot, embedding, hash or bucketize (a bag of values)',
                   name)
      if feature.type in NUMERIC_TYPES and not field.numeric:
        raise fail(f'{_a(feature.type.value)} feature needs a numeric field; '
                   f'{name!r} is {field.type.value}', name)
      if feature.type is FeatureType.INDICATOR and field.length == 1 and \
          not _missing.imputed(field) and _missing.fill_value(field) != '':
        raise fail(f'an indicator feature needs a field whose missing values '
                   f'reach the transform; {name!r} '
                   + ('fills them with its default: use missing: zero (or '
                      'mean, median, mode) instead' if field.default is not None
                      else 'allows none: give it missing: mean, median, mode '
                      'or zero'), name)
      if in_concat and feature.type is FeatureType.IDENTITY and \
          not field.numeric:
        raise fail(f'an identity feature inside a concat needs a numeric '
                   f'field; {name!r} is {field.type.value} (use onehot or '
                   'embedding)', name)

  @classmethod
  def parse(cls, text, source='<string>'):
    """Parses a feature set from YAML text.

    Example:
      >>> FeatureSet.parse('features:\\n- name: y\\n  type: target\\n').target
      Feature(name='y', type=<FeatureType.TARGET: 'target'>, fields=('y',), \
features=(), params=Params({}))

    Args:
      text: YAML: a mapping whose `features` lists mappings with `name`,
        `type`, optionally `fields` (a name or a list), `features` (for
        concat) and the type's parameters beside them (or, as in the
        original tensorfx, under `transform`).
      source: where the text came from, for error messages.

    Raises:
      DataError: the text is invalid; names the source, line and key path.
    """
    doc = _yaml.load_yaml(text, source)
    where = _yaml.root(doc, source)
    if not isinstance(doc, dict):
      raise where.error("a feature set must be a mapping with a 'features' "
                        'list', doc)
    _yaml.check_keys(where, doc, ('features',), 'a feature set')
    if 'features' not in doc:
      raise where.error("a feature set needs a 'features' list", doc)
    items = doc['features']
    items_where = where.at(doc, 'features')
    if not isinstance(items, list) or not items:
      raise items_where.error('features must be a non-empty list of features',
                              items)
    locations = {}
    features = [_parse_feature(item, items_where.at(items, i), locations)
                for i, item in enumerate(items)]
    try:
      feature_set = cls(features)
    except _yaml.Invalid as e:
      raise where.relocate(doc, e) from None
    feature_set._locations = locations  # pylint: disable=protected-access
    return feature_set

  @classmethod
  def load(cls, path):
    """Reads and parses a feature set YAML file (local or `gs://`).

    Example:
      >>> features = FeatureSet.load('gs://b/features.yaml')  # doctest: +SKIP

    Raises:
      DataError: the file is missing or invalid; names the path.
    """
    return cls.parse(_yaml.read_text(path), source=str(path))

  def to_dict(self):
    """The YAML mapping of the feature set."""
    return {'features': [f.to_dict() for f in self._features]}

  def format(self):
    """The set as YAML text that `parse` reads back to an equal set."""
    return _yaml.dump_yaml(self.to_dict())


def _named(feature, path):
  yield path, feature
  for j, child in enumerate(feature.features):
    yield from _named(child, path + ('features', j))


def _dotted(path):
  text = ''
  for key in path:
    text = f'{text}[{key}]' if isinstance(key, int) else (
        f'{text}.{key}' if text else key)
  return text
