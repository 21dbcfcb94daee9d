"""Percentiles of a regression's errors, streamed (Gematria's percentile ranks)."""

import numpy as np
import pytest

from tensorfx.training import ErrorPercentile
from tensorfx.training import ModelArguments
from tensorfx.training import error_percentiles


def test_percentiles_are_within_a_bin_of_numpy_over_batches():
  rng = np.random.default_rng(0)
  target = rng.uniform(1, 10, 5000)
  prediction = target * rng.uniform(0.5, 1.5, 5000)
  metrics = error_percentiles([50, 90])
  for start in range(0, 5000, 700):
    for metric in metrics:
      metric.update_state(
        target[start : start + 700], prediction[start : start + 700]
      )
  absolute = np.abs(prediction - target)
  expected = [
    np.percentile(absolute, 50),
    np.percentile(absolute, 90),
    np.percentile(absolute / target, 50),
    np.percentile(absolute / target, 90),
  ]
  assert [m.name for m in metrics] == [
    'abs_error_p50',
    'abs_error_p90',
    'rel_error_p50',
    'rel_error_p90',
  ]
  for metric, value in zip(metrics, expected):
    assert float(metric.result()) == pytest.approx(value, rel=0.025)
  metrics[0].reset_state()
  assert float(metrics[0].result()) == 0.0


def test_a_bad_rank_is_an_error():
  with pytest.raises(ValueError, match='rank must be a number in'):
    ErrorPercentile(0)


def test_the_gematria_flag_sets_the_ranks():
  args = ModelArguments.parse(['--gematria_collected_percentile_ranks=50,99'])
  assert args.percentile_ranks == [50, 99]
