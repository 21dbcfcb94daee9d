"""Percentiles of a regression's errors, streamed over an evaluation.

Gematria reports percentile ranks of the absolute and relative errors
(`--gematria_collected_percentile_ranks`, by default the 50th, 90th, 95th
and 99th). An evaluation here is streamed batch by batch, so the errors
are counted in a fixed histogram (log-spaced bins from 1e-4 to 1e4,
about 1.9% wide each) instead of kept; a percentile is read from the bin
where the counts reach it: its upper edge, within a bin of the exact value.
"""

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
import tf_keras

# Gematria's default ranks.
DEFAULT_RANKS = (50, 90, 95, 99)
_BINS = 1000
_LOW, _HIGH = 1e-4, 1e4


class ErrorPercentile(tf_keras.metrics.Metric):
  """The `rank`-th percentile of the absolute (or relative) error.

  Example:
    >>> p90 = ErrorPercentile(90, relative=True)
    >>> p90.update_state([2.0, 4.0], [2.2, 4.0])
    >>> round(float(p90.result()), 2)
    0.1

  Args:
    rank: the percentile rank, 0 < rank <= 100.
    relative: the error divided by the target's magnitude (floored at
      1e-6), Gematria's relative error; else the absolute error.
    name: the metric's name (default `abs_error_p{rank}` or
      `rel_error_p{rank}`).
  """

  def __init__(
    self, rank: int, relative: bool = False, name: str | None = None, **kwargs
  ):
    if not isinstance(rank, (int, float)) or not 0 < rank <= 100:
      raise ValueError(
        f'rank must be a number in (0, 100]. Received: rank={rank!r}'
      )
    super().__init__(
      name=name or f'{"rel" if relative else "abs"}_error_p{rank:g}', **kwargs
    )
    self.rank = rank
    self.relative = relative
    self._edges = tf.constant(np.geomspace(_LOW, _HIGH, _BINS), tf.float64)
    self.counts = self.add_weight(
      name='counts', shape=[_BINS + 1], initializer='zeros', dtype=tf.float64
    )

  def update_state(self, y_true, y_pred, sample_weight=None):
    """Counts each error; `sample_weight` weighs it (0 leaves it out)."""
    y_true = tf.reshape(tf.cast(y_true, tf.float64), [-1])
    error = tf.abs(tf.reshape(tf.cast(y_pred, tf.float64), [-1]) - y_true)
    if self.relative:
      error /= tf.maximum(tf.abs(y_true), 1e-6)
    bins = tf.searchsorted(self._edges, error, side='left')
    weights = (
      None
      if sample_weight is None
      else tf.reshape(tf.cast(sample_weight, tf.float64), [-1])
    )
    return self.counts.assign_add(
      tf.math.bincount(
        tf.cast(bins, tf.int32),
        weights=weights,
        minlength=_BINS + 1,
        maxlength=_BINS + 1,
        dtype=tf.float64,
      )
    )

  def result(self):
    total = tf.reduce_sum(self.counts)
    reached = tf.cumsum(self.counts) >= total * (self.rank / 100.0)
    index = tf.argmax(tf.cast(reached, tf.int32))
    value = tf.gather(self._edges, tf.minimum(index, _BINS - 1))
    return tf.cast(tf.where(total > 0, value, 0.0), tf.float32)

  def reset_state(self):
    self.counts.assign(tf.zeros_like(self.counts))


def error_percentiles(
  ranks: Sequence[int] | None = DEFAULT_RANKS,
) -> list[ErrorPercentile]:
  """The absolute then relative error percentile metrics of `ranks`."""
  ranks = list(ranks or ())
  return [ErrorPercentile(rank) for rank in ranks] + [
    ErrorPercentile(rank, relative=True) for rank in ranks
  ]
