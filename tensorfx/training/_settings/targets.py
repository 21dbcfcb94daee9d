"""Validation targets: named evaluation sources and how their results combine.

A trainer validates on one or more targets (tfutils'
`validation_params`).
Each target names a source of the dataset (the `eval` source by default, or
files given with the target), how many batches of it to read, how each
batch's results combine as they come (`online_agg`) and how the combined
value becomes the final result (`agg`):

- `online_agg: mean` (the default): the metrics stream over every batch, so
  each result is the metric over all the examples read (the example-weighted
  mean for mean metrics). It runs in one `tf.function` call.
- `online_agg: sum | min | max`: each batch is evaluated on its own (the
  metrics reset before it) and the results combine element-wise.
- `online_agg: append`: the per-batch results are kept in a list that `agg`
  (`mean`, `median`, `sum`, `min`, `max`, `first`, `last`; default `mean`)
  reduces to one value per metric.

From Python, `online_agg` may also be a callable `(aggregate, results,
batch_index) -> aggregate` (the aggregate is None before the first batch)
and `agg` a callable `(aggregate) -> results`: the functions of
`train_from_params`. A target may also bring its own computation,
`compute(inputs, outputs) -> {name: tensor}`, evaluated on each batch in
place of the builder's metrics (tfutils' per-target `targets`): each
target of a run may then compute different things.

This module must not import TensorFlow at import time: the arguments check
target specifications while parsing.
"""

import dataclasses
import re
from typing import Any, Callable, Optional, Tuple, Union

from tensorfx._errors import ConfigurationError

ONLINE_AGGREGATIONS = ('mean', 'sum', 'min', 'max', 'append')
FINAL_AGGREGATIONS = ('mean', 'median', 'sum', 'min', 'max', 'first', 'last')

# The keys of a target specification (YAML mapping or --eval-target items).
SPEC_KEYS = ('data', 'source', 'batches', 'batch_size', 'online_agg', 'agg')

# The default target: --data-eval with the --eval-* flags.
DEFAULT = 'eval'

_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')


@dataclasses.dataclass(frozen=True)
class ValidationTarget:
  """One named validation source and how its results are aggregated.

  Example:
    >>> ValidationTarget('holdout', data=('data/holdout.csv',), batches=5,
    ...                  online_agg='append', agg='median')

  Attributes:
    name: the target's name: the key of its results, its summaries
      directory (`summaries/eval` for `eval`, `summaries/eval_NAME` for the
      others) and the prefix of its tracked metrics (`NAME/loss`).
    data: files or patterns of the target's data, read in the dataset's
      format; empty to read the dataset's source `source`.
    source: the dataset source to read (default: the target's name).
    batches: how many batches to read; None reads the whole source once.
    batch_size: instances per batch; None takes `--eval-batch-size`.
    online_agg: one of `ONLINE_AGGREGATIONS`, or a callable
      `(aggregate, results, batch_index) -> aggregate`.
    agg: with `append` (or a callable `online_agg`), one of
      `FINAL_AGGREGATIONS` or a callable `(aggregate) -> results`; None
      means `mean` after `append`.
    compute: a function `(inputs, outputs) -> {name: tensor}` (the batch's
      inputs, and the model's outputs from `build_output`), traced once
      and run on each batch in place of the builder's metrics; None for
      the metrics. Its values aggregate batch by batch: `online_agg` mean
      (the default) is then the mean of the batches' values.
  """

  name: str
  data: Tuple[str, ...] = ()
  source: Optional[str] = None
  batches: Optional[int] = None
  batch_size: Optional[int] = None
  online_agg: Union[str, Callable[..., Any]] = 'mean'
  agg: Union[str, Callable[..., Any], None] = None
  compute: Optional[Callable[..., Any]] = None

  def __post_init__(self) -> None:
    where = f'validation target {self.name!r}'
    if self.compute is not None:
      if not callable(self.compute):
        raise ConfigurationError(
          f'{where}: compute must be a function (inputs, outputs) -> dict '
          f'of tensors, or None. Received: compute={self.compute!r}'
        )
      if self.online_agg == 'mean':
        # Values computed per batch do not stream: their mean is the
        # mean of the batches' values.
        object.__setattr__(self, 'online_agg', 'append')
        object.__setattr__(self, 'agg', self.agg or 'mean')
    if not isinstance(self.name, str) or not _NAME.match(self.name):
      raise ConfigurationError(
        'A validation target name must start with a letter or digit and '
        'hold only letters, digits, "_", "." and "-". Received: '
        f'name={self.name!r}'
      )
    if isinstance(self.data, str):
      object.__setattr__(self, 'data', (self.data,))
    object.__setattr__(self, 'data', tuple(str(p) for p in self.data))
    for key in ('batches', 'batch_size'):
      value = getattr(self, key)
      if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value <= 0
      ):
        raise ConfigurationError(
          f'{where}: {key} must be a positive integer, or none for '
          f'{"the whole source" if key == "batches" else "the default"}. '
          f'Received: {key}={value!r}'
        )
    online = self.online_agg
    if not callable(online) and online not in ONLINE_AGGREGATIONS:
      raise ConfigurationError(
        f'{where}: online_agg must be one of '
        f'{", ".join(ONLINE_AGGREGATIONS)} (or a callable). Received: '
        f'online_agg={online!r}'
      )
    agg = self.agg
    listing = online == 'append' or callable(online)
    if agg is not None:
      if not listing:
        raise ConfigurationError(
          f'{where}: agg reduces the per-batch results that online_agg '
          f'append keeps; with online_agg {online} each metric already '
          f'has one value. Received: online_agg={online!r} agg={agg!r}'
        )
      if not callable(agg) and agg not in FINAL_AGGREGATIONS:
        raise ConfigurationError(
          f'{where}: agg must be one of {", ".join(FINAL_AGGREGATIONS)} '
          f'(or a callable). Received: agg={agg!r}'
        )
    elif online == 'append':
      object.__setattr__(self, 'agg', 'mean')

  @property
  def source_name(self) -> str:
    """The dataset source the target reads."""
    return self.source or self.name

  @property
  def summaries(self) -> str:
    """The target's directory under `summaries/`."""
    return summaries_dir(self.name)

  @property
  def streaming(self) -> bool:
    """Whether the metrics stream over all batches in one call."""
    return self.online_agg == 'mean' and self.compute is None


def summaries_dir(name: str) -> str:
  """The directory under `summaries/` of target `name`."""
  return 'eval' if name == DEFAULT else f'eval_{name}'


def from_spec(
  name: str, spec: Any, where: Optional[str] = None
) -> 'ValidationTarget':
  """Makes a `ValidationTarget` from a mapping of its keys.

  Example:
    >>> from_spec('holdout', {'data': 'h.csv', 'batches': 5})
    ValidationTarget(name='holdout', data=('h.csv',), ..., batches=5, ...)

  Args:
    name: the target's name.
    spec: a dict of `SPEC_KEYS` (dashes or underscores), values typed or
      as text (`batches: '5'`).
    where: what to name in errors (a file and line, a flag).

  Returns:
    The `ValidationTarget`.

  Raises:
    ConfigurationError: an unknown key or a bad value, naming `where`.
  """
  where = where or f'validation target {name!r}'
  if name == DEFAULT:
    raise ConfigurationError(
      f'{where}: the target {DEFAULT!r} is --data-eval with the --eval-* '
      '(validation section) flags; give another name to a further target.'
    )
  if not isinstance(spec, dict):
    raise ConfigurationError(
      f'{where}: a validation target is a mapping of '
      f'{", ".join(SPEC_KEYS)}. Received: {name}={spec!r}'
    )
  values = {}
  for key, value in spec.items():
    normal = str(key).replace('-', '_')
    if normal not in SPEC_KEYS:
      raise ConfigurationError(
        f'{where}: unknown key {key!r} of validation target {name!r}; '
        f'the keys are {", ".join(SPEC_KEYS)}.'
      )
    if normal in ('batches', 'batch_size') and value is not None:
      try:
        if isinstance(value, bool):
          raise ValueError
        value = int(value)
      except (TypeError, ValueError):
        raise ConfigurationError(
          f'{where}: {key} of validation target {name!r} must be a '
          f'positive integer. Received: {key}={value!r}'
        ) from None
    elif normal == 'data':
      value = _paths(value)
    elif normal in ('online_agg', 'agg') and isinstance(value, str):
      value = value.lower()
    values[normal] = value
  try:
    return ValidationTarget(name, **values)
  except ConfigurationError as e:
    raise ConfigurationError(f'{where}: {e}') from None


def to_spec(target: 'ValidationTarget') -> dict[str, Any]:
  """The mapping of a target's keys that differ from the defaults.

  Example:
    >>> to_spec(from_spec('holdout', {'data': 'h.csv', 'batches': '5'}))
    {'data': ['h.csv'], 'batches': 5}
  """
  spec = {}
  for field in dataclasses.fields(target):
    if field.name == 'name':
      continue
    value = getattr(target, field.name)
    if value != field.default and not (
      field.name == 'agg' and target.online_agg == 'append' and value == 'mean'
    ):
      spec[field.name] = list(value) if isinstance(value, tuple) else value
  return spec


def parse_flag(values: Any) -> Tuple[str, dict[str, Any]]:
  """Parses one `--eval-target NAME KEY=VALUE ...` into (name, spec).

  Example:
    >>> parse_flag(['holdout', 'data=h.csv', 'batches=5'])
    ('holdout', {'data': 'h.csv', 'batches': '5'})

  Raises:
    ConfigurationError: no name, or an item that is not KEY=VALUE.
  """
  if not values or '=' in values[0]:
    raise ConfigurationError(
      '--eval-target expects a name, then KEY=VALUE items (e.g. '
      '--eval-target holdout data=h.csv batches=5). Received: '
      f'--eval-target {" ".join(values or [])}'
    )
  name, spec = values[0], {}
  for item in values[1:]:
    key, sep, value = item.partition('=')
    if not sep or not key:
      raise ConfigurationError(
        f'--eval-target {name}: items are KEY=VALUE. Received: {item!r}'
      )
    spec[key] = value
  return name, spec


def _paths(value: Any) -> Tuple[str, ...]:
  if value is None:
    return ()
  if isinstance(value, str):
    return tuple(p.strip() for p in value.split(',') if p.strip())
  if isinstance(value, (list, tuple)):
    return tuple(str(p) for p in value)
  raise ConfigurationError(
    f'data must be a path, a comma-separated list or a list of paths. '
    f'Received: data={value!r}'
  )
