"""FeatureType: the transform that makes a feature, and what each reads.

The types are grouped by what they need of the fields they read (numeric,
single-valued, a bag of values) and whether a concat may hold them; `Feature`
and `FeatureSet.validate` check those groups.
"""

import enum

from tensorfx.data._schema import member_named


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
  # A per-example weight of the training loss (a numeric field, >= 0).
  WEIGHT = 'weight'
  # The original tensorfx's lower-case spelling of the same members.
  identity = 'identity'
  target = 'target'
  key = 'key'
  concat = 'concat'
  scale = 'scale'
  zscore = 'zscore'
  log = 'log'
  bucketize = 'bucketize'
  onehot = 'onehot'
  one_hot = 'onehot'
  embedding = 'embedding'
  hash = 'hash'
  cross = 'cross'
  indicator = 'indicator'
  weight = 'weight'

  @classmethod
  def _missing_(cls, value):
    return member_named(cls, value, _ALIASES)


_ALIASES = {
  'z-score': 'zscore',
  'z_score': 'zscore',
  'one-hot': 'onehot',
  'one_hot': 'onehot',
  'bucket': 'bucketize',
  'hash_bucket': 'hash',
}

# Types that need a numeric field: they do arithmetic on the value.
NUMERIC_TYPES = frozenset(
  {
    FeatureType.SCALE,
    FeatureType.ZSCORE,
    FeatureType.LOG,
    FeatureType.BUCKETIZE,
    FeatureType.WEIGHT,
  }
)
# Types that read only single-valued (length 1) fields.
SINGLE_VALUED = frozenset(
  {
    FeatureType.TARGET,
    FeatureType.KEY,
    FeatureType.CROSS,
    FeatureType.INDICATOR,
    FeatureType.WEIGHT,
  }
)
# Types that read a variable-length field as a bag of values.
BAGS = frozenset(
  {
    FeatureType.ONEHOT,
    FeatureType.EMBEDDING,
    FeatureType.HASH,
    FeatureType.BUCKETIZE,
  }
)
# Types that may not sit inside a concat (the concat would hide them).
NOT_IN_CONCAT = frozenset(
  {FeatureType.TARGET, FeatureType.KEY, FeatureType.CONCAT, FeatureType.WEIGHT}
)


def an(word):
  return f'an {word}' if word[0] in 'aeiou' else f'a {word}'
