"""Combiners: one vector per instance from the vectors of its keys."""

import tensorflow as tf

from tensorfx._errors import ConfigurationError

COMBINERS = ('sum', 'mean', 'sqrtn')


def as_bag(keys, owner):
  """The keys of a lookup, flat, and the bag they came in (None for [B]).

  Example:
    >>> flat, bag = as_bag(tf.ragged.constant([[1, 2], [3]]), 'table')
    >>> flat.numpy().tolist(), bag.nrows().numpy()
    ([1, 2, 3], 2)

  Args:
    keys: [B] keys, or a list per instance: [B, N] keys, a [B, None]
      `tf.RaggedTensor` or a [B, None] `tf.SparseTensor`.
    owner: who looks them up, for error messages.

  Returns:
    `(flat keys, bag)`: the bag is a `tf.RaggedTensor` of one list per
    instance, or None for [B] keys (one each).

  Raises:
    ConfigurationError: keys of another shape.
  """
  bag = None
  if isinstance(keys, tf.SparseTensor):
    bag = tf.RaggedTensor.from_sparse(keys)
  elif isinstance(keys, tf.RaggedTensor):
    bag = keys
  else:
    keys = tf.convert_to_tensor(keys)
    if keys.shape.rank == 2:
      bag = tf.RaggedTensor.from_tensor(keys)
    elif keys.shape.rank != 1:
      raise ConfigurationError(
        f'{owner} looks up [B] keys or lists of keys ([B, N], ragged or '
        f'sparse). Received: keys of shape {keys.shape}'
      )
  if bag is None:
    return keys, None
  if bag.ragged_rank != 1:
    raise ConfigurationError(
      f'{owner} looks up one list of keys per instance. Received: a '
      f'ragged tensor of ragged_rank {bag.ragged_rank}'
    )
  return bag.flat_values, bag


def combine(vectors, segments, num_segments, combiner):
  """Reduces the vectors of each instance's keys to one vector.

  `sum` adds them, `mean` divides the sum by the number of keys, `sqrtn` by
  its square root (keeps the scale of bags of different sizes comparable).
  An instance without keys gets a zero vector.

  Example:
    >>> combine(tf.constant([[1.], [3.], [5.]]), tf.constant([0, 0, 2]), 3,
    ...         'mean').numpy().tolist()
    [[2.0], [0.0], [5.0]]

  Args:
    vectors: [N, dim] the vectors of all keys of the batch.
    segments: int [N], the instance (row of the batch) of each key.
    num_segments: the number of instances.
    combiner: 'sum', 'mean' or 'sqrtn'.

  Returns:
    [num_segments, dim].
  """
  if combiner not in COMBINERS:
    raise ValueError(
      f'combiner must be one of {", ".join(COMBINERS)}. '
      f'Received: combiner={combiner!r}'
    )
  total = tf.math.unsorted_segment_sum(vectors, segments, num_segments)
  if combiner == 'sum':
    return total
  counts = tf.math.unsorted_segment_sum(
    tf.ones(tf.shape(segments)[:1], vectors.dtype), segments, num_segments
  )
  counts = tf.maximum(counts, 1.0)
  if combiner == 'sqrtn':
    counts = tf.sqrt(counts)
  return total / counts[:, tf.newaxis]
