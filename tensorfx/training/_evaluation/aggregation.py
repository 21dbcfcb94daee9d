"""Running a validation target: its batches evaluated, their results combined.

`evaluate(evaluation, target)` reads a target's source through the
`EvaluationInterface` and combines the per-batch results as the target's
`online_agg` and `agg` say (see `_targets` for what each means);
`aggregate` is that combination alone, in plain Python.
"""

import statistics
from typing import Any, Callable

from tensorfx._errors import ConfigurationError


def _combine(op):
  def combine(aggregate, results, index):
    del index
    if aggregate is None:
      return dict(results)
    return {
      k: op(aggregate[k], v) if k in aggregate else v
      for k, v in results.items()
    }

  return combine


def _append(aggregate, results, index):
  del index
  aggregate = aggregate or {}
  for key, value in results.items():
    aggregate.setdefault(key, []).append(value)
  return aggregate


_ONLINE = {
  'sum': _combine(lambda a, b: a + b),
  'min': _combine(min),
  'max': _combine(max),
  'append': _append,
}

_FINAL: dict[str, Callable[[Any], Any]] = {
  'mean': statistics.fmean,
  'median': statistics.median,
  'sum': sum,
  'min': min,
  'max': max,
  'first': lambda values: values[0],
  'last': lambda values: values[-1],
}


def aggregate(target, batch_results):
  """Aggregates per-batch results as `target` says (no TensorFlow needed).

  Example:
    >>> target = ValidationTarget('t', online_agg='append', agg='max')
    >>> aggregate(target, [{'loss': 1.0}, {'loss': 3.0}])
    {'loss': 3.0}

  Args:
    target: the `ValidationTarget` (not a streaming one).
    batch_results: an iterable of dicts of metric values, one per batch.

  Returns:
    A dict of final values by metric name ({} when there were no batches).
  """
  online = target.online_agg
  online = online if callable(online) else _ONLINE[online]
  current: Any = None
  for index, results in enumerate(batch_results):
    current = online(current, results, index)
  if current is None:
    return {}
  agg = target.agg
  result = agg(current) if callable(agg) else current
  if agg is None or callable(agg):
    if not isinstance(result, dict):
      raise ConfigurationError(
        f'validation target {target.name!r}: the aggregation must end in a '
        'dict of metric values (give agg= a callable that makes one). '
        f'Received: {type(result).__name__}'
      )
    # A callable's NumPy values (np.mean's) as the records can hold them.
    return {k: _plain(v) for k, v in result.items()}
  return {
    key: _reduce(agg, values) if isinstance(values, list) else values
    for key, values in current.items()
  }


def _reduce(agg, values):
  """Reduces per-batch values: numbers, or arrays element-wise."""
  if all(isinstance(v, (int, float)) for v in values):
    return float(_FINAL[agg](values))
  if agg in ('first', 'last'):
    return _FINAL[agg](values)
  # Arrays a target's own computation made (one per batch, same shape).
  import numpy as np

  reduce: Any = {
    'mean': np.mean,
    'median': np.median,
    'sum': np.sum,
    'min': np.min,
    'max': np.max,
  }[agg]
  return reduce(np.stack([np.asarray(v) for v in values]), axis=0)


def evaluate(evaluation, target):
  """Runs one validation target on an `EvaluationInterface`.

  Args:
    evaluation: the `EvaluationInterface` (its metrics are reset first,
      and after).
    target: the `ValidationTarget`.

  Returns:
    `(results, count)`: a dict of metric values by name, and the number of
    examples read.
  """
  data = evaluation.dataset(
    target.source_name, batch_size=target.batch_size, batches=target.batches
  )
  if target.compute is not None:
    return _evaluate_compute(evaluation, target, data)
  metrics = evaluation.metrics
  for metric in metrics.values():
    metric.reset_state()
  try:
    return _evaluate_metrics(evaluation, target, data, metrics)
  finally:
    # Cleared after as before: checkpoints hold no evaluation's counts, so
    # a resumed run's equal an uninterrupted one's whatever ran when.
    for metric in metrics.values():
      metric.reset_state()


def _evaluate_metrics(evaluation, target, data, metrics):
  """`evaluate` of a target of the evaluation's metrics."""
  if not target.streaming and evaluation.step is None:
    raise ConfigurationError(
      f'validation target {target.name!r}: online_agg '
      f'{target.online_agg!r} evaluates batch by batch, which needs the '
      "EvaluationInterface's step function; this builder's has none."
    )
  if target.streaming:
    count = int(evaluation.loop(data))
    return {k: float(m.result()) for k, m in metrics.items()}, count
  total = 0

  def batches():
    nonlocal total
    for inputs in data:
      for metric in metrics.values():
        metric.reset_state()
      total += int(evaluation.step(inputs))
      yield {k: float(m.result()) for k, m in metrics.items()}

  results = aggregate(target, batches())
  return results, total


def _evaluate_compute(evaluation, target, data):
  """Runs a target's own computation on each batch, then aggregates."""
  if getattr(evaluation, 'compute', None) is None:
    raise ConfigurationError(
      f'validation target {target.name!r} computes its own values, which '
      "needs the EvaluationInterface's compute function; this builder's "
      'has none.'
    )
  step = evaluation.compute(target.compute)
  total = 0

  def batches():
    nonlocal total
    for inputs in data:
      values, count = step(inputs)
      total += int(count)
      yield {k: _host(v) for k, v in values.items()}

  results = aggregate(target, batches())
  return {k: _plain(v) for k, v in results.items()}, total


def _host(value):
  """A computed tensor on the host: a Python number, or a NumPy array."""
  value = value.numpy() if hasattr(value, 'numpy') else value
  if getattr(value, 'ndim', None) == 0:
    return value.item()
  return value


def _plain(value):
  """An aggregated value as plain Python (JSON and YAML can hold it)."""
  if hasattr(value, 'tolist'):
    return value.tolist()
  if isinstance(value, dict):
    return {k: _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  return value
