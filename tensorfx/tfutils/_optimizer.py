"""`learning_rate_params` and `optimizer_params`: the optimizer of the step.

`learning_rate_params['func']` (default, as in tfutils:
`tf.compat.v1.train.exponential_decay`) receives the global step and is
called whenever the optimizer reads its rate, so a schedule made of
TensorFlow operations on the step decays as training goes. `optimizer_params['optimizer']` is a class (or
function) taking `learning_rate=` and the remaining keys: a tf_keras
optimizer class, or one of TensorFlow 1's `tf.compat.v1.train` optimizer
classes that tfutils users wrote, which is made as its tf_keras
equivalent; any other class with TensorFlow 1's `compute_gradients` and
`apply_gradients` is made as written and adapted (`_tf1_optimizer`).
tfutils' `ClipOptimizer` keys (`optimizer_class`, `clip`,
`optimizer_kwargs`, `trainable_names`) are read too; without `optimizer_params`, tfutils'
default: momentum 0.9, gradients clipped to [-1, 1].
"""

import dataclasses
import re
from typing import Any, Callable, Mapping, Optional, Self, cast

import tensorflow as tf
import tf_keras

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _tf1_optimizer

# TensorFlow 1 optimizer class name -> (tf_keras class name, renamed keys).
_TF1 = {
  'GradientDescentOptimizer': ('SGD', {}),
  'MomentumOptimizer': ('SGD', {'use_nesterov': 'nesterov'}),
  'AdamOptimizer': ('Adam', {'beta1': 'beta_1', 'beta2': 'beta_2'}),
  'AdagradOptimizer': ('Adagrad', {}),
  'AdadeltaOptimizer': ('Adadelta', {}),
  'RMSPropOptimizer': ('RMSprop', {'decay': 'rho'}),
  'FtrlOptimizer': ('Ftrl', {}),
}
# Keys of TensorFlow 1's constructors that mean nothing here.
_TF1_IGNORED = ('use_locking', 'name')
# tfutils' learning rate function when learning_rate_params has no 'func'
# (helper.get_learning_rate), and the keys it takes: three required.
DEFAULT_RATE = tf.compat.v1.train.exponential_decay
_DECAY_KEYS = (
  'learning_rate',
  'decay_steps',
  'decay_rate',
  'staircase',
  'name',
)


class GlobalStepSchedule(tf_keras.optimizers.schedules.LearningRateSchedule):
  """The learning rate of `learning_rate_params['func'](global_step=...)`.

  Called by the optimizer at each step (in the training step's graph) and
  when the rate is logged; the function receives the job's global step
  variable, whatever step the optimizer counts. A function that returns a
  callable (TensorFlow 1's decay functions do, eagerly) is called.

  Args:
    func: the learning rate function.
    kwargs: its other keyword arguments.
    global_step: the global step variable.
  """

  def __init__(
    self, func: Callable[..., Any], kwargs: Mapping[str, Any], global_step: Any
  ) -> None:
    super().__init__()
    self.func = func
    self.kwargs = dict(kwargs)
    self.global_step = global_step

  def __call__(self, step: Any) -> Any:
    del step  # tfutils' functions take the global step, not the optimizer's.
    rate = self.func(global_step=self.global_step, **self.kwargs)
    if callable(rate) and not tf.is_tensor(rate):
      rate = rate()
    return tf.cast(rate, tf.float32)

  def get_config(self) -> dict[str, Any]:
    return {'func': _keys.describe(self.func), **_keys.describe(self.kwargs)}


@dataclasses.dataclass(frozen=True)
class LearningRate:
  """`learning_rate_params`: a function of the global step, or a constant.

  As tfutils' `helper.get_learning_rate`: `func` (default
  `tf.compat.v1.train.exponential_decay`) receives `global_step=` and the
  other keys. `{'learning_rate': RATE}` alone is a constant rate (tfutils'
  default function would have failed without its decay keys).

  Example:
    >>> rate = LearningRate.from_params(Params(
    ...     {'learning_rate': 0.01, 'decay_steps': 100, 'decay_rate': 0.9},
    ...     'learning_rate_params'))
    >>> rate.func is tf.compat.v1.train.exponential_decay
    True

  Attributes:
    func: the function of the global step; None for a constant.
    kwargs: its other keyword arguments.
    constant: the constant rate, when there is no function.
  """

  func: Optional[Callable[..., Any]]
  kwargs: Mapping[str, Any]
  constant: Optional[float] = None

  @classmethod
  def from_params(cls, params: _keys.Params) -> Self:
    """Reads `learning_rate_params` (a `Params`).

    Raises:
      ConfigurationError: without `func`, a key the default function does
        not take or one it needs, naming it.
    """
    if params.get('func') is not None:
      func = params.function('func', 'the function of the learning rate')
      return cls(func, params.rest('func'))
    given = {k for k, v in params.value.items() if v is not None}
    if given == {'learning_rate'}:
      return cls(None, {}, constant=float(params.get('learning_rate')))
    what = (
      "without 'func', the rate is tfutils' default, "
      'tf.compat.v1.train.exponential_decay(global_step, learning_rate, '
      'decay_steps, decay_rate, staircase=False); give its keys, a func, '
      "or {'learning_rate': RATE} alone for a constant rate"
    )
    params.check_known(('func',) + _DECAY_KEYS, hint=f' ({what})')
    for key in _DECAY_KEYS[:3]:
      params.required(key, what)
    return cls(DEFAULT_RATE, params.rest('func'))

  def schedule(self, global_step: Any) -> GlobalStepSchedule | float:
    """The optimizer's learning rate, reading `global_step` (a variable)."""
    if self.func is not None:
      return GlobalStepSchedule(self.func, self.kwargs, global_step)
    return cast(float, self.constant)

  def describe(self) -> dict[str, Any]:
    """The parameters as used, the default function named (as tfutils)."""
    if self.func is None:
      return {'learning_rate': self.constant}
    return _keys.describe({'func': self.func, **self.kwargs})


def optimizer(params: _keys.Params, rate: GlobalStepSchedule | float) -> Any:
  """The optimizer of `optimizer_params`, with learning rate `rate`.

  Args:
    params: `optimizer_params` as `Params` (empty: tfutils' default).
    rate: the learning rate (`LearningRate.schedule`).

  Returns:
    A `tf_keras.optimizers.Optimizer`.

  Raises:
    ConfigurationError: the optimizer is not a class or function, or its
      keys are not what it takes (naming them).
  """
  params.alias('func', 'optimizer')
  kwargs = params.rest(
    'optimizer',
    'optimizer_class',
    'clip',
    'optimizer_kwargs',
    'trainable_names',
  )
  kwargs.update(params.child('optimizer_kwargs').value)
  made = params.get('optimizer')
  wrapped = params.get('optimizer_class')
  if made is not None and wrapped is not None and not _is_clip_optimizer(made):
    raise ConfigurationError(
      f"{params.where('optimizer_class')} is the optimizer tfutils' "
      'ClipOptimizer wraps; give it without '
      f'{params.where("optimizer")} (or give only the latter).'
    )
  if made is None or _is_clip_optimizer(made):
    # tfutils' ClipOptimizer (its default): the class it wraps, clipped.
    made = wrapped or tf.compat.v1.train.MomentumOptimizer
    if not set(params.value) - {'trainable_names'}:
      kwargs = {'momentum': 0.9}
    if params.boolean('clip', True):
      kwargs.setdefault('clipvalue', 1.0)
  elif params.get('clip') is not None:
    raise ConfigurationError(
      f"{params.where('clip')} applies to tfutils' ClipOptimizer "
      f'({params.where("optimizer_class")}); give clipvalue= or '
      'clipnorm= to a tf_keras optimizer.'
    )
  where = params.where(
    'optimizer_class' if wrapped is not None else 'optimizer'
  )
  made, kwargs = _keras_equivalent(made, kwargs)
  if _tf1_optimizer.is_tf1_class(made):
    return _tf1(made, kwargs, rate, where)
  if isinstance(made, str):
    try:
      made = type(tf_keras.optimizers.get(made))
    except ValueError:
      raise ConfigurationError(
        f'{where} names no tf_keras optimizer. Received: {made!r}'
      ) from None
  if not callable(made):
    raise ConfigurationError(
      f'{where} must be an optimizer class (or a function taking '
      f'learning_rate=). Received: {made!r}'
    )
  try:
    result = made(learning_rate=rate, **kwargs)
  except TypeError as e:
    raise ConfigurationError(
      f'{where} ({_keys.describe(made)}) does not take the keys given: '
      f'{e}. Received: {sorted(kwargs)}'
    ) from None
  if not hasattr(result, 'apply_gradients'):
    raise ConfigurationError(
      f'{where} must make an optimizer (with apply_gradients). Received: '
      f'{result!r}'
    )
  return result


def trainable_pattern(params: _keys.Params) -> Optional[str]:
  """`--trainable-pattern` of ClipOptimizer's `trainable_names`, or None.

  tfutils' ClipOptimizer trained only the variables whose names start with
  one of `trainable_names` (a name or a list of them).

  Raises:
    ConfigurationError: not a name or a list of names.
  """
  names = params.get('trainable_names')
  if names is None:
    return None
  if isinstance(names, str):
    names = [names]
  where = params.where('trainable_names')
  if (
    not isinstance(names, (list, tuple))
    or not names
    or not all(isinstance(n, str) and n for n in names)
  ):
    raise ConfigurationError(
      f'{where} must be a variable name prefix or a list of them. '
      f'Received: {where}={params.get("trainable_names")!r}'
    )
  return '^(?:' + '|'.join(re.escape(n) for n in names) + ')'


def _tf1(
  made: Any,
  kwargs: dict[str, Any],
  rate: GlobalStepSchedule | float,
  where: str,
) -> _tf1_optimizer.TF1Optimizer:
  """A TensorFlow 1-style optimizer class made and adapted.

  The class receives the rate as a variable (every TensorFlow 1 optimizer
  reads one; not all call a function), which the adapter sets from the
  schedule before each update.
  """
  clipvalue = kwargs.pop('clipvalue', None)
  schedule = rate if callable(rate) else None
  variable = tf.Variable(
    float(rate) if schedule is None else 0.0,
    trainable=False,
    name='learning_rate',
    dtype=tf.float32,
  )
  try:
    result = made(learning_rate=variable, **kwargs)
  except TypeError as e:
    raise ConfigurationError(
      f'{where} ({_keys.describe(made)}) does not take the keys given: '
      f'{e}. Received: {sorted(kwargs)}'
    ) from None
  return _tf1_optimizer.TF1Optimizer(
    result, rate=variable, schedule=schedule, clipvalue=clipvalue
  )


def _is_clip_optimizer(value: Any) -> bool:
  return getattr(value, '__name__', value) == 'ClipOptimizer'


def _keras_equivalent(
  made: Any, kwargs: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
  """A TensorFlow 1 optimizer class as its tf_keras class and keys."""
  name = getattr(made, '__name__', None)
  if name not in _TF1 or getattr(tf.compat.v1.train, name, None) is not made:
    return made, kwargs
  keras_name, renamed = _TF1[name]
  kwargs = {
    renamed.get(k, k): v for k, v in kwargs.items() if k not in _TF1_IGNORED
  }
  return getattr(tf_keras.optimizers, keras_name), kwargs
