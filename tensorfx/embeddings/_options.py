"""The options of an `EmbeddingTable`: their checks, and features.yaml's names.

Each check returns the value the table keeps, or raises a
`ConfigurationError` that names the argument and the value received.
"""

import collections.abc

import tensorflow as tf

from tensorfx._errors import ConfigurationError

HASHINGS = ('mod', 'fingerprint', 'exact')
KEY_DTYPES = ('int64', 'string')

# The parameters of an `embedding` feature (features.yaml) that configure
# its table: the table's own argument names.
TABLE_PARAMS = (
  'dim',
  'capacity',
  'combiner',
  'initializer',
  'hashing',
  'admit_after',
  'evict_after_steps',
  'evict_every_steps',
  'evict_after_secs',
  'evict_every_secs',
  'dynamic_expansion',
)


def table_kwargs(params):
  """The `EmbeddingTable` arguments among a feature's parameters.

  Example:
    >>> table_kwargs({'dim': 8, 'capacity': 100, 'top_k': 3})
    {'dim': 8, 'capacity': 100}
  """
  return {k: params[k] for k in TABLE_PARAMS if k in params}


def positive(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ConfigurationError(
      f'{name} must be a positive integer. Received: {name}={value!r}'
    )
  return value


def one_of(name, value, choices):
  if value not in choices:
    raise ConfigurationError(
      f'{name} must be one of {", ".join(choices)}. Received: {name}={value!r}'
    )
  return value


def dimension(value):
  """An int, or mxRec's `tf.TensorShape([d])`: one known dimension."""
  if isinstance(value, (tf.TensorShape, list, tuple)):
    try:
      shape = tf.TensorShape(value)
    except (TypeError, ValueError):
      shape = None
    if shape is None or shape.rank != 1 or shape[0] is None or shape[0] < 1:
      raise ConfigurationError(
        'dim must be a positive integer or a TensorShape of one known '
        'dimension, e.g. tf.TensorShape([16]) (the embedding is a '
        f'vector). Received: dim={value!r}'
      )
    return int(shape[0])
  return positive('dim', value)


def eviction(after, every, after_secs=None, every_secs=None):
  """The eviction clock and schedule: `(clock, after, every)`.

  `clock` is 'steps' (`evict_after_steps`), 'seconds' (`evict_after_secs`,
  wall-clock stamps) or None (no eviction); `after` and `every` are in its
  unit. One of the two thresholds per table.

  Example:
    >>> eviction(None, None, after_secs=3600)
    ('seconds', 3600, 360)
  """
  if after is not None and after_secs is not None:
    raise ConfigurationError(
      'A table evicts by steps or by seconds: give evict_after_steps or '
      f'evict_after_secs, not both. Received: evict_after_steps={after}, '
      f'evict_after_secs={after_secs}'
    )
  clock, unit = (
    ('seconds', 'secs') if after_secs is not None else ('steps', 'steps')
  )
  if after_secs is not None:
    after, every = after_secs, every_secs
  elif every_secs is not None:
    positive('evict_every_secs', every_secs)
    raise ConfigurationError(
      'evict_every_secs needs evict_after_secs. Received: '
      f'evict_every_secs={every_secs}, evict_after_secs=None'
    )
  after = None if after is None else positive(f'evict_after_{unit}', after)
  if every is not None:
    positive(f'evict_every_{unit}', every)
    if after is None:
      raise ConfigurationError(
        f'evict_every_{unit} needs evict_after_{unit}. Received: '
        f'evict_every_{unit}={every}, evict_after_{unit}=None'
      )
  if after is None:
    return None, None, None
  # A sweep reads every stamp: by default a tenth of the threshold apart.
  return clock, after, every or max(1, after // 10)


def initializer(value):
  """None, a callable, or what `tf_keras.initializers.get` takes."""
  if value is None or callable(value):
    return value
  import tf_keras

  try:
    return tf_keras.initializers.get(_plain(value))
  except (ValueError, TypeError):
    raise ConfigurationError(
      'initializer must be a tf_keras initializer, its name or config, '
      f'or a callable (shape, dtype). Received: initializer={value!r}'
    ) from None


def key_dtype(value):
  try:
    dtype = tf.as_dtype(value)
  except TypeError:
    dtype = None
  if dtype in (tf.int64, tf.int32):
    return tf.int64
  if dtype == tf.string:
    return tf.string
  raise ConfigurationError(
    f'key_dtype must be one of {", ".join(KEY_DTYPES)}.'
    f' Received: key_dtype={value!r}'
  )


def _plain(value):
  """Dicts and lists from read-only mappings and tuples (features.yaml's)."""
  if isinstance(value, collections.abc.Mapping):
    return {k: _plain(v) for k, v in value.items()}
  if isinstance(value, tuple):
    return [_plain(v) for v in value]
  return value
