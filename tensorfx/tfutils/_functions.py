"""The user's functions, called as tfutils calls them.

- the model, `model_params['func'](inputs=, train=, seed=, **kwargs)`,
  returns its outputs, or `(outputs, config)` where `config` is a dict
  recorded with the experiment;
- the loss, `loss_params['loss_func'](outputs, *[inputs[t] for t in
  pred_targets], **loss_func_kwargs)` (or with `logits=`/`labels=` for
  functions that take only those, such as
  `tf.nn.sparse_softmax_cross_entropy_with_logits`), then
  `agg_func(loss, **agg_func_kwargs)`, with `which_device=` (the replica's
  index) when `agg_func` names it (tfutils' `mean_and_reg_loss`);
- targets, `func(inputs, outputs, **kwargs)`, return a dict of tensors
  (training's extra targets, and each validation target's).
"""

import dataclasses
import inspect
from typing import Any, Callable, Iterable, Mapping, Optional, Self, Tuple

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _keys

# Keys of model_params that are not the function's arguments: tfutils'
# multi-GPU placement (tensorfx picks the strategy) and trainable scopes.
MODEL_KEYS = (
  'func',
  'seed',
  'devices',
  'num_gpus',
  'prefix',
  'trainable_scopes',
)
# Names tfutils keeps for its own train targets.
RESERVED_TARGETS = ('loss', 'learning_rate', 'optimizer', '__grads__')


@dataclasses.dataclass(frozen=True)
class Function:
  """A function and its keyword arguments, from a params dict.

  Attributes:
    func: the callable.
    kwargs: the other keys of its dict.
    where: the dict's path, for errors (`train_params['targets']`).
  """

  func: Callable[..., Any]
  kwargs: Mapping[str, Any]
  where: str

  @classmethod
  def from_params(
    cls, params: _keys.Params, what: str, exclude: Iterable[str] = ()
  ) -> Self:
    """`params['func']` and the other keys (less `exclude`)."""
    func = params.function('func', what)
    return cls(func, params.rest('func', *exclude), params.path)

  def describe(self) -> dict[str, Any]:
    """A plain record of the function and its arguments."""
    return {
      'func': _keys.describe(self.func),
      **_keys.describe(dict(self.kwargs)),
    }


@dataclasses.dataclass(frozen=True)
class Model:
  """`model_params`: the model function, its arguments and seed."""

  function: Function
  seed: int = 0
  trainable_scopes: Tuple[str, ...] = ()

  @classmethod
  def from_params(cls, params: _keys.Params) -> Self:
    function = Function.from_params(
      params,
      'the function that makes the model of the inputs',
      exclude=MODEL_KEYS[1:],
    )
    scopes = params.get('trainable_scopes') or ()
    if isinstance(scopes, str):
      scopes = (scopes,)
    return cls(
      function,
      seed=params.integer('seed', 0, minimum=0),
      trainable_scopes=tuple(s.rstrip('/') for s in scopes),
    )

  def describe(self) -> dict[str, Any]:
    """The record of model_params: the function, its arguments, the seed.

    The seed is recorded when defaulted too, as tfutils recorded it.
    """
    described = {**self.function.describe(), 'seed': self.seed}
    if self.trainable_scopes:
      described['trainable_scopes'] = list(self.trainable_scopes)
    return described

  def __call__(
    self, inputs: Any, train: bool
  ) -> Tuple[Any, Optional[dict[str, Any]]]:
    """Calls the model; returns `(outputs, config or None)`."""
    func = self.function.func
    kwargs = dict(self.function.kwargs)
    for name, value in (('train', train), ('seed', self.seed)):
      if _keys.accepts(func, name):
        kwargs[name] = value
    result = func(inputs=inputs, **kwargs)
    if (
      isinstance(result, tuple)
      and len(result) == 2
      and (result[1] is None or isinstance(result[1], dict))
    ):
      return result[0], result[1]
    return result, None


@dataclasses.dataclass(frozen=True)
class Loss:
  """`loss_params`: the loss of the model's outputs and the targets."""

  pred_targets: Tuple[str, ...]
  loss_func: Callable[..., Any]
  loss_func_kwargs: Mapping[str, Any]
  agg_func: Optional[Callable[..., Any]]
  agg_func_kwargs: Mapping[str, Any]
  where: str

  @classmethod
  def from_params(cls, params: _keys.Params) -> Self:
    """tfutils' default without `loss_params`: softmax cross-entropy."""
    params.alias('loss_per_case_func', 'loss_func')
    params.alias('targets', 'pred_targets')
    params.check_known(
      (
        'pred_targets',
        'loss_func',
        'loss_func_kwargs',
        'agg_func',
        'agg_func_kwargs',
      )
    )
    targets = params.get('pred_targets', ['labels'])
    if isinstance(targets, str):
      targets = [targets]
    if not isinstance(targets, (list, tuple)) or not all(
      isinstance(t, str) for t in targets
    ):
      raise ConfigurationError(
        f"{params.where('pred_targets')} must be an input's name or a list "
        f'of them. Received: {params.where("pred_targets")}={targets!r}'
      )
    if params.get('loss_func') is None and params.value:
      params.required(
        'loss_func',
        'the function of the loss (of the model '
        'outputs and the inputs pred_targets names)',
      )
    loss_func = (
      params.function('loss_func', 'the function of the loss', required=False)
      or tf.nn.sparse_softmax_cross_entropy_with_logits
    )
    agg_func = params.function(
      'agg_func', 'the aggregation of the loss', required=False
    )
    if params.get('agg_func') is None and not params.value:
      agg_func = tf.reduce_mean
    return cls(
      tuple(targets),
      loss_func,
      dict(params.child('loss_func_kwargs').value),
      agg_func,
      dict(params.child('agg_func_kwargs').value),
      params.path,
    )

  def __call__(self, inputs: Mapping[str, Any], outputs: Any) -> Any:
    """The scalar loss of a batch.

    Raises:
      ConfigurationError: an input `pred_targets` names is missing.
    """
    missing = [t for t in self.pred_targets if t not in inputs]
    if missing:
      raise ConfigurationError(
        f"{self.where}['pred_targets'] names the input(s) "
        f'{", ".join(repr(t) for t in missing)}, which the data does not '
        f'have; it has {", ".join(repr(k) for k in inputs)}.'
      )
    labels = [inputs[t] for t in self.pred_targets]
    if _takes_logits_and_labels(self.loss_func):
      if len(labels) != 1:
        raise ConfigurationError(
          f"{self.where}['loss_func'] takes logits= and labels=: "
          'pred_targets must name one input. Received: '
          f'{list(self.pred_targets)}'
        )
      loss = self.loss_func(
        logits=outputs, labels=labels[0], **self.loss_func_kwargs
      )
    else:
      loss = self.loss_func(outputs, *labels, **self.loss_func_kwargs)
    if self.agg_func is not None:
      kwargs = dict(self.agg_func_kwargs)
      if _names_parameter(self.agg_func, 'which_device'):
        # tfutils' mean_and_reg_loss: the index of the device (here the
        # replica) whose loss this is.
        kwargs['which_device'] = _replica_index()
      loss = self.agg_func(loss, **kwargs)
    loss = tf.convert_to_tensor(loss)
    if loss.shape.rank:
      # The engine applies the gradient of one number per batch.
      loss = tf.reduce_mean(loss)
    return loss

  def describe(self) -> dict[str, Any]:
    return _keys.describe(
      {
        'pred_targets': list(self.pred_targets),
        'loss_func': self.loss_func,
        'loss_func_kwargs': dict(self.loss_func_kwargs),
        'agg_func': self.agg_func,
        'agg_func_kwargs': dict(self.agg_func_kwargs),
      }
    )


class Wrapped(dict):
  """The outputs dict of a model function that returned a single tensor.

  The engine's outputs are dicts (`{'outputs': tensor}` then); target
  functions get the tensor back, as tfutils gave it.
  """


def model_outputs(outputs: Any) -> Any:
  """What the model function returned, from `build_output`'s dict."""
  if isinstance(outputs, Wrapped):
    return outputs['outputs']
  return outputs


def call_targets(
  function: Function, inputs: Any, outputs: Any
) -> dict[str, Any]:
  """`function(inputs, outputs, **kwargs)`, checked to be a dict.

  Raises:
    ConfigurationError: the function returned something else.
  """
  values = function.func(inputs, outputs, **function.kwargs)
  if not isinstance(values, dict) or not values:
    raise ConfigurationError(
      f"{function.where}['func'] must return a dict of tensors by name. "
      f'Received: {values!r}'
    )
  return values


def _names_parameter(func: Callable[..., Any], name: str) -> bool:
  """Whether `func` declares the parameter `name` (not through **kwargs).

  tfutils passed `which_device` to an `agg_func` that names it.
  """
  try:
    return name in inspect.signature(func).parameters
  except (TypeError, ValueError):
    return False


def _replica_index() -> Any:
  """The index of the replica computing this loss (0 outside a strategy)."""
  context = tf.distribute.get_replica_context()
  if context is None:
    return 0
  index = context.replica_id_in_sync_group
  static = tf.get_static_value(index)
  return int(static) if static is not None else index


def _takes_logits_and_labels(func: Callable[..., Any]) -> bool:
  try:
    parameters = list(inspect.signature(func).parameters)
  except (TypeError, ValueError):
    return False
  # TensorFlow 2's cross-entropies: labels first, logits second, so the
  # positional call (outputs, labels) would swap them.
  names = [p for p in parameters if p != '_sentinel']
  return names[:2] == ['labels', 'logits']
