"""Combiners: one vector per instance from the vectors of its keys."""

import tensorflow as tf

COMBINERS = ('sum', 'mean', 'sqrtn')


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
    raise ValueError(f'combiner must be one of {", ".join(COMBINERS)}. '
                     f'Received: combiner={combiner!r}')
  total = tf.math.unsorted_segment_sum(vectors, segments, num_segments)
  if combiner == 'sum':
    return total
  counts = tf.math.unsorted_segment_sum(
      tf.ones(tf.shape(segments)[:1], vectors.dtype), segments, num_segments)
  counts = tf.maximum(counts, 1.0)
  if combiner == 'sqrtn':
    counts = tf.sqrt(counts)
  return total / counts[:, tf.newaxis]
