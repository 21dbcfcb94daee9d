"""`validation_params`: named validation targets, each computing its own.

Each target of tfutils' `validation_params` becomes a tensorfx
`ValidationTarget` of the same name, evaluated by the one evaluation
engine (in training every `save_valid_freq` steps, and by
`test_from_params`):

| validation_params[NAME] | tensorfx |
| --- | --- |
| `data` (`func`, `batch_size`, kwargs; tfutils' code said `data_params`) | the source NAME |
| `targets` (`func`, kwargs) | `compute`: `func(inputs, outputs, **kwargs)` on each batch; without it, the loss of `loss_params` |
| `num_steps` | `batches` (the data cycles, as tfutils' providers did); None: one pass |
| `online_agg_func` (`(agg, res, step) -> agg`) | `online_agg` (default, as tfutils: the list of per-batch dicts) |
| `agg_func` (`(agg) -> dict`) | `agg`, receiving what `online_agg_func` made (default: tfutils' identity, with a list of per-batch dicts as each key's list of per-batch values; `'mean'` (or `median`, `sum`, `min`, `max`, `first`, `last`) reduces each list) |
"""

import dataclasses
from typing import Any, Callable, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _data
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys
from tensorfx.training import internal as _training

KEYS = (
  'data',
  'data_params',
  'targets',
  'num_steps',
  'agg_func',
  'online_agg_func',
)


@dataclasses.dataclass(frozen=True)
class Validation:
  """One validation target of validation_params.

  Attributes:
    name: the target's name.
    data: its data function.
    batch_size: the batch size given to it.
    targets: its targets' function; None for the loss.
    num_steps: the batches read per validation; None for one pass.
    online_agg_func: how each batch's results combine, or None.
    agg_func: how the combined results become the result, or None.
  """

  name: str
  data: _functions.Function
  batch_size: int
  targets: Optional[_functions.Function] = None
  num_steps: Optional[int] = None
  online_agg_func: Optional[Callable[..., Any]] = None
  agg_func: str | Callable[..., Any] | None = None

  @property
  def source_name(self) -> str:
    """The dataset source the target reads (a target may be 'train')."""
    return f'validation.{self.name}'

  def source(self) -> _data.FunctionSource:
    """The dataset source the target reads."""
    return _data.FunctionSource(
      self.source_name,
      self.data.func,
      self.data.kwargs,
      self.data.where,
      cycle=self.num_steps is not None,
    )

  def target(self) -> _training.targets.ValidationTarget:
    """The engine's `ValidationTarget`."""
    online: Any = self.online_agg_func or append_and_return
    agg: Any = self.agg_func or identity
    if isinstance(self.agg_func, str):
      # tensorfx's reductions read each key's list of per-batch values.
      online = self.online_agg_func or 'append'
    return _training.targets.ValidationTarget(
      self.name,
      source=self.source_name,
      batches=self.num_steps,
      batch_size=self.batch_size,
      online_agg=online,
      agg=agg,
      compute=_compute(self.targets) if self.targets else None,
    )

  def describe(self) -> dict[str, Any]:
    return _keys.describe(
      {
        'data': {**self.data.describe(), 'batch_size': self.batch_size},
        'targets': self.targets.describe() if self.targets else None,
        'num_steps': self.num_steps,
        'agg_func': self.agg_func,
        'online_agg_func': self.online_agg_func,
      }
    )


def append_and_return(
  aggregate: Optional[list[Any]], results: Any, step: int
) -> list[Any]:
  """tfutils' default `online_agg_func`: each batch's results, appended.

  `agg_func` receives the list of per-batch dicts (what tfutils'
  `utils.mean_dict` reads).

  Example:
    >>> append_and_return([{'top1': 0.9}], {'top1': 0.8}, 1)
    [{'top1': 0.9}, {'top1': 0.8}]
  """
  del step
  aggregate = [] if aggregate is None else aggregate
  aggregate.append(results)
  return aggregate


def identity(aggregate: Any) -> dict[str, Any]:
  """tfutils' default `agg_func`, with per-batch dicts read by key.

  tfutils' identity kept a dict as it was and recorded anything else as
  `{'result': aggregate}`. The list of per-batch dicts that the default
  `online_agg_func` makes becomes each key's list of per-batch values
  here: what the store's and TensorBoard's means read.

  Example:
    >>> identity([{'top1': 0.9}, {'top1': 0.8}])
    {'top1': [0.9, 0.8]}
  """
  if isinstance(aggregate, dict):
    return dict(aggregate)
  if (
    isinstance(aggregate, list)
    and aggregate
    and all(isinstance(r, dict) for r in aggregate)
  ):
    return {key: [r.get(key) for r in aggregate] for key in aggregate[0]}
  return {'result': aggregate}


def _compute(
  function: _functions.Function,
) -> Callable[[Any, Any], dict[str, Any]]:
  """`ValidationTarget.compute` of a tfutils targets function."""

  def compute(inputs: Any, outputs: Any) -> dict[str, Any]:
    return _functions.call_targets(
      function, inputs, _functions.model_outputs(outputs)
    )

  # Named as the user's function, in records and errors.
  compute.__module__ = getattr(function.func, '__module__', compute.__module__)
  compute.__qualname__ = getattr(
    function.func, '__qualname__', repr(function.func)
  )
  return compute


def _agg_func(target: _keys.Params) -> str | Callable[..., Any] | None:
  """`agg_func`: a callable, or the name of a reduction of each list."""
  value = target.get('agg_func')
  if isinstance(value, str):
    if value not in _training.targets.FINAL_AGGREGATIONS:
      raise ConfigurationError(
        f'{target.where("agg_func")} must be a function (aggregate) -> '
        f'dict or one of {", ".join(_training.targets.FINAL_AGGREGATIONS)}. '
        f'Received: {target.where("agg_func")}={value!r}'
      )
    return value
  return target.function(
    'agg_func',
    'how the combined results become the result: '
    "(aggregate) -> dict, or 'mean'",
    required=False,
  )


def from_params(params: _keys.Params) -> list[Validation]:
  """The validation targets of `validation_params` (a `Params`), in order.

  Raises:
    ConfigurationError: a target without data, an unknown key, a bad
      value or name, naming its path.
  """
  validations = []
  for name in params.value:
    target = params.child(name)
    where = target.path
    if not isinstance(name, str):
      raise ConfigurationError(
        f'{where}: validation targets are named by strings. Received: {name!r}'
      )
    target.alias('data_params', 'data')
    target.check_known(KEYS)
    data = target.child(
      'data',
      required=True,
      what="the target's data: {'func': ..., 'batch_size': ...}",
    )
    function = _functions.Function.from_params(
      data,
      'the function that makes the validation data (called with '
      'batch_size= and the other keys)',
      exclude=('batch_size',),
    )
    batch_size = data.integer(
      'batch_size',
      data.required('batch_size', 'the batch size given to the data function'),
    )
    targets = None
    if target.get('targets') is not None:
      targets = _functions.Function.from_params(
        target.child('targets'),
        "the function of the target's values (inputs, outputs) -> dict",
      )
    validation = Validation(
      name=name,
      data=function,
      batch_size=batch_size,
      targets=targets,
      num_steps=target.integer('num_steps', None, allow_none=True),
      online_agg_func=target.function(
        'online_agg_func',
        'how batch results combine: (aggregate, results, step) -> aggregate',
        required=False,
      ),
      agg_func=_agg_func(target),
    )
    try:
      validation.target()
    except ConfigurationError as e:
      raise ConfigurationError(f'{where}: {e}') from None
    validations.append(validation)
  return validations
