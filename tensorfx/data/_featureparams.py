"""Params: a feature's parameters, and per type each one's check and default.

`Feature` fills in the defaults and runs the checks; the checks return the
normalized value or raise ValueError saying what was expected.
"""

import collections.abc
import math
from typing import Any

from tensorfx import _yaml
from tensorfx.data._featuretypes import FeatureType
from tensorfx.data._schema import is_identifier

_NOTHING = _yaml.NOTHING


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


def _one_of(choices):
  def check(value):
    if value not in choices:
      raise ValueError(f'must be one of {", ".join(choices)}')
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


def _boolean(value):
  if not isinstance(value, bool):
    raise ValueError('must be true or false')
  return value


# How an embedding table reduces an instance's keys (tensorfx.embeddings).
_COMBINERS = ('sum', 'mean', 'sqrtn')
_combiner = _one_of(_COMBINERS)


def _feature_name(value):
  if not isinstance(value, str) or not is_identifier(value):
    raise ValueError('must be the name of another embedding feature')
  return value


# How a table over raw keys gives them rows (tensorfx.embeddings).
_HASHINGS = ('mod', 'fingerprint', 'exact')
_hashing = _one_of(_HASHINGS)


def _initializer(value):
  # A tf_keras initializer's name, or its config; the table checks which.
  if isinstance(value, str) and value:
    return value
  if (
    isinstance(value, collections.abc.Mapping)
    and isinstance(value.get('class_name'), str)
    and set(value) <= {'class_name', 'config'}
  ):
    return value
  raise ValueError(
    "must be a tf_keras initializer's name (e.g. "
    'truncated_normal) or {class_name: ..., config: {...}}'
  )


def _vocabulary_file(value):
  # A file of one token per line, instead of the analysis's vocabulary.
  if not isinstance(value, str) or not value.strip():
    raise ValueError('must be the path of a file of one token per line')
  return value


# Embedding parameters of a table over raw keys (`capacity`), and the ones a
# feature sharing another's table (`table`) takes from it.
TABLE_ONLY = (
  'admit_after',
  'evict_after_steps',
  'evict_every_steps',
  'evict_after_secs',
  'evict_every_secs',
  'dynamic_expansion',
  'hashing',
  'initializer',
)
VOCABULARY_PARAMS = ('top_k', 'oov_buckets', 'hash_buckets')

# Per type: parameter name -> (check, default or _NOTHING when optional).
PARAMS: dict[Any, dict[str, Any]] = {
  FeatureType.SCALE: {'min': (_number, 0.0), 'max': (_number, 1.0)},
  FeatureType.LOG: {'offset': (_number, 1.0)},
  FeatureType.BUCKETIZE: {
    'boundaries': (_boundaries, _NOTHING),
    'buckets': (_int_at_least(2), _NOTHING),
  },
  FeatureType.ONEHOT: {
    'top_k': (_POSITIVE, _NOTHING),
    'oov_buckets': (_int_at_least(0), 1),
    'vocabulary_file': (_vocabulary_file, _NOTHING),
  },
  FeatureType.EMBEDDING: {
    'dim': (_POSITIVE, _NOTHING),
    'top_k': (_POSITIVE, _NOTHING),
    'oov_buckets': (_int_at_least(0), 1),
    'hash_buckets': (_POSITIVE, _NOTHING),
    'vocabulary_file': (_vocabulary_file, _NOTHING),
    'combiner': (_combiner, _NOTHING),
    'capacity': (_POSITIVE, _NOTHING),
    'table': (_feature_name, _NOTHING),
    'admit_after': (_POSITIVE, _NOTHING),
    'evict_after_steps': (_POSITIVE, _NOTHING),
    'evict_every_steps': (_POSITIVE, _NOTHING),
    'evict_after_secs': (_POSITIVE, _NOTHING),
    'evict_every_secs': (_POSITIVE, _NOTHING),
    'dynamic_expansion': (_boolean, _NOTHING),
    'hashing': (_hashing, _NOTHING),
    'initializer': (_initializer, _NOTHING),
  },
  FeatureType.HASH: {'buckets': (_POSITIVE, _NOTHING)},
  FeatureType.CROSS: {'buckets': (_POSITIVE, _NOTHING)},
}
REQUIRED = {
  FeatureType.EMBEDDING: ('dim',),
  FeatureType.HASH: ('buckets',),
  FeatureType.CROSS: ('buckets',),
}
