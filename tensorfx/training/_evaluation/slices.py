"""Sliced evaluation: every evaluation metric per value of a raw field.

What TFX's model analysis calls slicing: `--eval-slices species,size*color`
evaluates each validation target once more per slice, beside its overall
numbers. A slice is one value of a raw field: each value of a discrete
field's vocabulary (the `MAX_VALUES` most frequent; the rest, and missing
values, are `FIELD=<other>`), or one bucket of a numeric field (the
boundaries of a `bucketize` feature reading it; otherwise equal-width
buckets over the analyzed range). `A*B` crosses two fields: one slice per
pair of their slices. Every record of a source falls in exactly one slice
of each spec, so the slices' example counts add up to the target's.

Each slice is a pass over the target's raw records keeping those of the
slice (after `--data-filter`, in the default `ModelBuilder.build_input`),
so it costs one evaluation per slice; slices without examples are left
out, and those with fewer than `--eval-slice-min-examples` are flagged.
"""

from collections.abc import Sequence
import dataclasses
import difflib
import functools
import itertools
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.training._evaluation import aggregation as _aggregation
from tensorfx.training._settings import validation as _validation

# The most frequent values of a discrete field sliced one by one.
MAX_VALUES = 20
# Buckets of a numeric field without bucketize boundaries.
DEFAULT_BUCKETS = 4
OTHER = '<other>'

# (kind, argument): ('eq', value), ('range', (low, high)) or
# ('other', the field's other conditions).
Condition = tuple[str, Any]


@dataclasses.dataclass(frozen=True)
class Slice:
  """One slice: its label and what a record must match, field by field.

  Attributes:
    label: `FIELD=VALUE`, crosses joined by `*`
      (`species=setosa*petal_length=[1,2.5)`).
    conditions: `(field, condition)` pairs, all of which must hold.
  """

  label: str
  conditions: tuple[tuple[str, Condition], ...]


def _field_slices(dataset, name: str) -> list[tuple[str, Condition]]:
  """`(value label, condition)` of each slice of one raw field."""
  schema = dataset.schema
  names = [f.name for f in schema]
  if name not in names:
    close = difflib.get_close_matches(name, names, n=1)
    hint = f' Did you mean {close[0]!r}?' if close else ''
    raise ConfigurationError(
      f'--eval-slices names the field {name!r}, which the schema does not '
      f'have.{hint} The fields are {", ".join(names)}.'
    )
  field = schema[name]
  if field.multivalent:
    raise ConfigurationError(
      f'--eval-slices {name}: the field holds a list of values; only '
      'single-valued fields can be sliced (a record must fall in one '
      'slice).'
    )
  metadata = dataset.metadata
  stats = metadata.fields.get(name) if metadata is not None else None
  if stats is None:
    raise ConfigurationError(
      f'--eval-slices {name}: the analysis has no statistics for the '
      'field, so its values are unknown; analyze the data again.'
    )
  if not field.numeric:
    values = metadata.vocabulary(name)[:MAX_VALUES]
    slices: list[tuple[str, Condition]] = [
      (str(v), ('eq', str(v))) for v in values
    ]
  else:
    bounds = boundaries(dataset, name, stats)
    edges = [None, *bounds, None]
    slices = [
      (_bucket_label(low, high), ('range', (low, high)))
      for low, high in itertools.pairwise(edges)
    ]
  slices.append((OTHER, ('other', tuple(c for _, c in slices))))
  return slices


def boundaries(dataset, name: str, stats) -> list[float]:
  """The bucket boundaries of numeric field `name`.

  Those of a `bucketize` feature reading the field; otherwise (quantile
  buckets, or no such feature) its buckets' count (or `DEFAULT_BUCKETS`)
  of equal width between the analyzed minimum and maximum.
  """
  count = DEFAULT_BUCKETS
  for feature in _features(dataset):
    if feature.type.value == 'bucketize' and tuple(feature.fields) == (name,):
      if feature.params.get('boundaries') is not None:
        return [float(b) for b in feature.params['boundaries']]
      count = int(feature.params.get('buckets') or count)
  low, high = stats.get('min'), stats.get('max')
  if low is None or high is None or not float(high) > float(low):
    return [] if low is None else [float(low)]
  low, high = float(low), float(high)
  return [low + (high - low) * i / count for i in range(1, count)]


def _features(dataset):
  features = getattr(dataset, 'features', None)
  for feature in features or ():
    yield from feature.walk()


def _bucket_label(low: float | None, high: float | None) -> str:
  if low is None and high is None:
    return 'all'
  if low is None:
    return f'<{high:.4g}'
  if high is None:
    return f'>={low:.4g}'
  return f'[{low:.4g},{high:.4g})'


def make_slices(dataset, specs: Sequence[tuple[str, ...]]) -> list[Slice]:
  """Every slice of the parsed `specs`, spec by spec, in order.

  Raises:
    ConfigurationError: a field the schema does not have (with the closest
      name), a multivalent field, or one without analysis statistics.
  """
  slices = []
  for fields in specs:
    per_field = [
      [
        (f'{name}={label}', (name, condition))
        for label, condition in _field_slices(dataset, name)
      ]
      for name in fields
    ]
    for combination in itertools.product(*per_field):
      slices.append(
        Slice(
          '*'.join(label for label, _ in combination),
          tuple(c for _, c in combination),
        )
      )
  return slices


def _matches(tf, values, condition: Condition):
  kind, argument = condition
  if kind == 'eq':
    return tf.reduce_any(
      tf.equal(
        tf.strings.as_string(values) if values.dtype != tf.string else values,
        argument,
      )
    )
  if kind == 'range':
    low, high = argument
    x = tf.cast(values, tf.float64)
    inside = tf.ones_like(x, tf.bool)
    if low is not None:
      inside = tf.logical_and(inside, x >= low)
    if high is not None:
      inside = tf.logical_and(inside, x < high)
    return tf.reduce_any(inside)
  matched = tf.constant(False)
  for other in argument:
    matched = tf.logical_or(matched, _matches(tf, values, other))
  return tf.logical_not(matched)


def filter_records(the_slice: Slice, batches: int | None, raw, batch: int):
  """Keeps the raw records of `the_slice` (of the first `batches` batches).

  What `ModelBuilder.build_input` applies while a slice is evaluated.
  """
  import tensorflow as tf

  def keep(record):
    matched = tf.constant(True)
    for name, condition in the_slice.conditions:
      value = record[name]
      values = (
        value.values
        if isinstance(value, tf.SparseTensor)
        else tf.reshape(value, [-1])
      )
      matched = tf.logical_and(matched, _matches(tf, values, condition))
    return matched

  records = raw.unbatch()
  if batches:
    # The records the overall pass reads (its first `batches` batches).
    records = records.take(batches * batch)
  return records.filter(keep).batch(batch).prefetch(tf.data.AUTOTUNE)


class Slicer:
  """Evaluates a validation target on each slice (`--eval-slices`).

  Example:
    >>> slicer = Slicer(builder, engine, [('species',)], min_examples=10)
    >>> slicer.evaluate(interface, target)['species=setosa']['examples']
    16

  Args:
    builder: the `ModelBuilder` (its dataset analyzed).
    engine: its `EngineState`, whose slice filter the default
      `build_input` applies.
    specs: the parsed `--eval-slices` (`parse`).
    min_examples: slices with fewer examples are flagged.

  Raises:
    ConfigurationError: a bad field (see `make_slices`), or a builder
      whose `build_input` is its own (it would not filter the slices).
  """

  def __init__(
    self,
    builder,
    engine,
    specs: Sequence[tuple[str, ...]],
    min_examples: int = 10,
  ):
    if engine.calls_builder('build_input'):
      raise ConfigurationError(
        f'--eval-slices: {type(builder).__name__} overrides build_input, '
        "which would not keep each slice's records; slice with the "
        'default build_input.'
      )
    self._filters = engine.run
    self.min_examples = int(min_examples)
    self.slices = make_slices(builder.dataset, specs)

  def evaluate(self, interface, target) -> dict[str, dict[str, Any]]:
    """Evaluates `target` on each slice.

    Returns:
      Slice label -> `{'examples': N, 'flagged': N < min_examples,
      'metrics': {name: value}}`, for the slices with examples.
    """
    results = {}
    for the_slice in self.slices:
      self._filters.slice_filter = functools.partial(
        filter_records, the_slice, target.batches
      )
      try:
        metrics, count = _aggregation.evaluate(interface, target)
      finally:
        self._filters.slice_filter = None
      if not count:
        continue
      flagged = count < self.min_examples
      results[the_slice.label] = {
        'examples': int(count),
        'flagged': flagged,
        'metrics': dict(metrics),
      }
      logger.info(
        'Slice %s of %s: %d examples%s: %s',
        the_slice.label,
        target.name,
        count,
        f' (fewer than {self.min_examples}: flagged)' if flagged else '',
        '  '.join(
          f'{k} {v:.4g}'
          for k, v in metrics.items()
          if isinstance(v, (int, float))
        ),
      )
    return results


def create(builder, engine) -> Slicer | None:
  """The `Slicer` of the builder's `--eval-slices`, or None without any."""
  settings = builder.settings.validation
  specs = _validation.parse_slices(settings.slices)
  if not specs:
    return None
  return Slicer(builder, engine, specs, settings.slice_min_examples)


def scalars(prefix: str, label: str, entry: dict[str, Any]) -> dict[str, float]:
  """A slice's numbers by name `PREFIX/slice/LABEL/METRIC` (and examples)."""
  values: dict[str, float] = {
    f'{prefix}/slice/{label}/{k}': v
    for k, v in entry['metrics'].items()
    if isinstance(v, (int, float)) and not isinstance(v, bool)
  }
  values[f'{prefix}/slice/{label}/examples'] = entry['examples']
  return values


__all__ = [
  'MAX_VALUES',
  'OTHER',
  'Slice',
  'Slicer',
  'boundaries',
  'create',
  'filter_records',
  'make_slices',
  'scalars',
]
