"""Feature: one named model input (or target, or key) made from schema fields.

A feature names a transform (its type), the schema fields it reads and the
transform's parameters; its constructor checks each of them on its own.
Checks against the schema and the other features are `FeatureSet`'s.
"""

import collections.abc
import dataclasses
from typing import Any

from tensorfx import _yaml
from tensorfx.data._featureparams import PARAMS
from tensorfx.data._featureparams import REQUIRED
from tensorfx.data._featureparams import TABLE_ONLY
from tensorfx.data._featureparams import VOCABULARY_PARAMS
from tensorfx.data._featureparams import Params
from tensorfx.data._featuretypes import NOT_IN_CONCAT
from tensorfx.data._featuretypes import FeatureType
from tensorfx.data._featuretypes import an
from tensorfx.data._names import Names
from tensorfx.data._schema import is_identifier

_NOTHING = _yaml.NOTHING


def _accepted_types():
  return ', '.join(t.value for t in FeatureType)


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
      `evict_after_steps`, `evict_every_steps`, `evict_after_secs`,
      `evict_every_secs`, `dynamic_expansion`), or `table` (another's),
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
        'Feature',
        ('name',),
        'a feature name must be letters, digits and '
        'underscores, not starting with a digit',
        self.name,
      )
    subject = f'Feature {self.name!r}'
    try:
      kind = FeatureType(self.type)
    except ValueError:
      raise _yaml.Invalid(
        subject,
        ('type',),
        'unknown feature type'
        f'{_yaml.did_you_mean(self.type, list(FeatureType))}; accepted '
        f'types are {_accepted_types()}',
        self.type,
      ) from None
    object.__setattr__(self, 'type', kind)
    self._init_features(subject, kind)
    self._init_fields(subject, kind)
    self._init_params(subject, kind)

  def _init_features(self, subject, kind):
    features = self.features
    if not isinstance(features, (list, tuple)):
      raise _yaml.Invalid(
        subject, ('features',), 'features must be a list of features', features
      )
    features = tuple(features)
    object.__setattr__(self, 'features', features)
    if kind is not FeatureType.CONCAT:
      if features:
        raise _yaml.Invalid(
          subject,
          ('features',),
          f'only concat features have child features, not {kind.value} ones',
          features,
        )
      return
    if not features:
      raise _yaml.Invalid(
        subject,
        ('features',),
        'a concat feature needs a non-empty list of features',
        features,
      )
    for i, child in enumerate(features):
      if not isinstance(child, Feature):
        raise _yaml.Invalid(
          subject, ('features', i), 'expected a Feature', child
        )
      if child.type in NOT_IN_CONCAT:
        raise _yaml.Invalid(
          subject,
          ('features', i, 'type'),
          'a concat '
          f'feature cannot contain {child.type.value} '
          f'features (child {child.name!r})',
          child.type.value,
        )

  def _init_fields(self, subject, kind):
    fields = _as_fields(self.fields)
    if not isinstance(fields, tuple) or not all(
      isinstance(f, str) and f for f in fields
    ):
      raise _yaml.Invalid(
        subject,
        ('fields',),
        'fields must be a field name or a list of field names',
        self.fields,
      )
    if kind is FeatureType.CONCAT:
      union: list[Any] = []
      for child in self.features:
        union.extend(f for f in child.fields if f not in union)
      if fields and fields != tuple(union):
        raise _yaml.Invalid(
          subject,
          ('fields',),
          'a concat feature reads the '
          'fields of its features; it takes no fields of '
          'its own',
          self.fields,
        )
      fields = tuple(union)
    elif not fields:
      fields = (self.name,)
    if len(set(fields)) != len(fields):
      raise _yaml.Invalid(
        subject, ('fields',), 'fields must not repeat', self.fields
      )
    if kind is FeatureType.CROSS and len(fields) < 2:
      raise _yaml.Invalid(
        subject,
        ('fields',),
        'a cross feature needs at least 2 fields',
        self.fields or fields,
      )
    if kind not in (FeatureType.CROSS, FeatureType.CONCAT) and len(fields) != 1:
      raise _yaml.Invalid(
        subject,
        ('fields',),
        f'{an(kind.value)} feature reads exactly one field',
        self.fields,
      )
    object.__setattr__(self, 'fields', Names(fields))

  def _init_params(self, subject, kind):
    given: Any = self.params  # As given; made a Params here.
    if given is None:
      given = {}
    if not isinstance(given, collections.abc.Mapping):
      raise _yaml.Invalid(
        subject, ('params',), 'params must be a mapping', given
      )
    specs = PARAMS.get(kind, {})
    unknown = [k for k in given if k not in specs]
    if unknown:
      names = ', '.join(repr(k) for k in unknown)
      accepts = f'it accepts {", ".join(specs)}' if specs else 'it takes none'
      raise _yaml.Invalid(
        subject,
        (unknown[0],),
        f'unknown parameter'
        f'{"s" if len(unknown) > 1 else ""} {names} for '
        f'{an(kind.value)} feature; {accepts}',
        given[unknown[0]],
      )
    if kind is FeatureType.BUCKETIZE and ('boundaries' in given) == (
      'buckets' in given
    ):
      raise _yaml.Invalid(
        subject,
        (),
        'a bucketize feature needs exactly '
        "one of 'boundaries' (a list) or 'buckets' (a "
        'count, quantiles from analysis)',
        dict(given),
        label='params',
      )
    hashed = kind is FeatureType.EMBEDDING and 'hash_buckets' in given
    if hashed:
      for key in ('top_k', 'oov_buckets'):
        if key in given:
          raise _yaml.Invalid(
            subject,
            (key,),
            f'{key!r} needs a vocabulary; '
            "a feature with 'hash_buckets' has none",
            given[key],
          )
    keyed = kind is FeatureType.EMBEDDING and (
      'capacity' in given or 'table' in given
    )
    if kind is FeatureType.EMBEDDING:
      self._check_table_params(subject, given)
    for key in REQUIRED.get(kind, ()):
      if key == 'dim' and kind is FeatureType.EMBEDDING and 'table' in given:
        continue  # The shared table's.
      if key not in given:
        raise _yaml.Invalid(
          subject,
          (),
          f'{an(kind.value)} feature needs {key!r}',
          dict(given),
          label='params',
        )
    params = {}
    for key, (check, default) in specs.items():
      if key in given:
        try:
          params[key] = check(given[key])
        except ValueError as e:
          raise _yaml.Invalid(
            subject, (key,), f'{key} {e}', given[key]
          ) from None
      elif default is not _NOTHING and not (
        (hashed or keyed) and key == 'oov_buckets'
      ):
        params[key] = default
    if kind is FeatureType.SCALE and not params['min'] < params['max']:
      raise _yaml.Invalid(
        subject,
        ('max',),
        f'max must be greater than min ({params["min"]})',
        params['max'],
      )
    object.__setattr__(self, 'params', Params(params))

  @staticmethod
  def _check_table_params(subject, given):
    """An embedding table over raw keys takes no vocabulary parameters."""
    if 'capacity' in given and 'table' in given:
      raise _yaml.Invalid(
        subject,
        ('table',),
        "'table' shares another "
        "feature's table; a feature with 'capacity' has "
        'its own',
        given['table'],
      )
    owner = (
      'capacity'
      if 'capacity' in given
      else ('table' if 'table' in given else None)
    )
    if owner is not None:
      refused = VOCABULARY_PARAMS + (
        ('dim',) + TABLE_ONLY if owner == 'table' else ()
      )
      for key in refused:
        if key in given:
          reason = (
            f"{key!r} belongs to the table's own feature"
            if owner == 'table'
            else f'{key!r} needs a vocabulary; a table hashes raw keys itself'
          )
          raise _yaml.Invalid(
            subject,
            (key,),
            f'{reason} (this feature has {owner!r})',
            given[key],
          )
      for unit in ('steps', 'secs'):
        if (
          f'evict_every_{unit}' in given and f'evict_after_{unit}' not in given
        ):
          raise _yaml.Invalid(
            subject,
            (f'evict_every_{unit}',),
            f"'evict_every_{unit}' needs 'evict_after_{unit}'",
            given[f'evict_every_{unit}'],
          )
      if 'evict_after_steps' in given and 'evict_after_secs' in given:
        raise _yaml.Invalid(
          subject,
          ('evict_after_secs',),
          'a table evicts '
          "by 'evict_after_steps' or 'evict_after_secs', "
          'not both',
          given['evict_after_secs'],
        )
      return
    for key in TABLE_ONLY:
      if key in given:
        raise _yaml.Invalid(
          subject,
          (key,),
          f"{key!r} needs an embedding table: give the feature 'capacity'",
          given[key],
        )

  # The original tensorfx's factories: Feature.target('Y', 'species').

  @classmethod
  def identity(cls, name, field):
    """A feature holding a field's value unchanged.

    Example:
      >>> Feature.identity('x', 'petal_length').fields == ['petal_length']
      True
    """
    return cls(name, FeatureType.IDENTITY, fields=(field,))

  @classmethod
  def target(cls, name, field):
    """The target (label) feature, read from `field`.

    Example:
      >>> Feature.target('Y', 'species').type
      <FeatureType.TARGET: 'target'>
    """
    return cls(name, FeatureType.TARGET, fields=(field,))

  @classmethod
  def concatenate(cls, name, *features):
    """A concat of features, given one by one or as one list.

    Example:
      >>> x = Feature.concatenate('X', Feature.scale('a', 'a'),
      ...                         Feature.log('b', 'b'))
      >>> x.fields == ['a', 'b']
      True
    """
    if len(features) == 1 and isinstance(features[0], (list, tuple)):
      features = tuple(features[0])
    return cls(name, FeatureType.CONCAT, features=tuple(features))

  @classmethod
  def scale(cls, name, field, range=(0.0, 1.0), log=False):
    """Min-max scaling of a numeric field to `range` (min, max).

    Example:
      >>> Feature.scale('pl', 'petal_length', range=(-1, 1)).params['min']
      -1.0

    Raises:
      DataError: `log=True`, which tensorfx spells as its own feature.
    """
    if log:
      raise _yaml.Invalid(
        f'Feature {name!r}',
        ('log',),
        'scaling the log of '
        'a value is not supported; use Feature.log (log(x '
        '+ 1)) or a zscore feature',
        log,
      )
    low, high = range
    return cls(
      name,
      FeatureType.SCALE,
      fields=(field,),
      params=Params({'min': low, 'max': high}),
    )

  @classmethod
  def log(cls, name, field, offset=1.0):
    """The logarithm of a numeric field, of the field plus `offset`.

    Example:
      >>> Feature.log('sw', 'sepal_width').params['offset']
      1.0
    """
    return cls(
      name, FeatureType.LOG, fields=(field,), params=Params({'offset': offset})
    )

  @classmethod
  def one_hot(cls, name, field, top_k=None, oov_buckets=1):
    """A one-hot encoding of a field over its analyzed vocabulary.

    Example:
      >>> Feature.one_hot('c', 'country', top_k=50).params['top_k']
      50
    """
    params = {'oov_buckets': oov_buckets}
    if top_k is not None:
      params['top_k'] = top_k
    return cls(name, FeatureType.ONEHOT, fields=(field,), params=Params(params))

  @classmethod
  def bucketize(cls, name, field, boundaries=None, buckets=None):
    """Buckets of a numeric field: fixed `boundaries` or `buckets` quantiles.

    Example:
      >>> Feature.bucketize('age', 'age', [18, 35, 65]).params['boundaries']
      (18.0, 35.0, 65.0)
    """
    params = {}
    if boundaries is not None:
      params['boundaries'] = boundaries
    if buckets is not None:
      params['buckets'] = buckets
    return cls(
      name, FeatureType.BUCKETIZE, fields=(field,), params=Params(params)
    )

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
    data: dict[str, Any] = {'name': self.name, 'type': self.type.value}
    if self.type is FeatureType.CONCAT:
      data['features'] = [f.to_dict() for f in self.features]
    elif self.fields != (self.name,):
      data['fields'] = (
        self.fields[0] if len(self.fields) == 1 else list(self.fields)
      )
    specs = PARAMS.get(self.type, {})
    for key, value in self.params.items():
      if value != specs[key][1]:
        data[key] = list(value) if isinstance(value, tuple) else value
    return data
