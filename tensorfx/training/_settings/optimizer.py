"""Optimizer settings: the default optimizer, its schedule and clipping."""

import argparse
import dataclasses
import re
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

# The same as tensorfx.training._optimizers', which imports TensorFlow.
OPTIMIZERS = ('adam', 'sgd', 'rmsprop', 'adagrad', 'ftrl')
SCHEDULES = (
  'constant',
  'exponential',
  'inverse-time',
  'polynomial',
  'cosine',
  'cosine-restarts',
  'linear-cosine',
  'natural-exp',
)
# Schedules whose formula uses --decay-rate.
RATE_SCHEDULES = ('exponential', 'inverse-time', 'natural-exp')
# The learning rate when neither the arguments nor a subclass set one.
DEFAULT_LEARNING_RATE = 0.001


def _momentum(name: str, value: Any) -> None:
  if not 0.0 <= value < 1.0:
    raise ConfigurationError(
      f'{name} must be in [0, 1). Received: {name}={value}'
    )


def _regex(name: str, value: Any) -> None:
  if not value:
    return
  try:
    re.compile(value)
  except re.error as e:
    raise ConfigurationError(
      f'{name} must be a regular expression ({e}). Received: {name}={value}'
    ) from None


@dataclasses.dataclass(frozen=True)
class OptimizerSettings(_section.Section):
  """The default optimizer (`ModelBuilder.build_optimizer`) and its updates.

  Attributes:
    optimizer: adam, sgd, rmsprop, adagrad or ftrl (`--optimizer`).
    learning_rate: the (initial) rate (`--learning-rate`).
    momentum: momentum of sgd and rmsprop (`--momentum`).
    nesterov: Nesterov momentum for sgd (`--nesterov`).
    schedule: the learning-rate schedule (`--learning-rate-schedule`).
    decay_steps: updates of one decay period (`--decay-steps`); None
      spans the run.
    decay_rate: the rate of the exponential schedules (`--decay-rate`).
    end_learning_rate: the decaying schedules' final rate
      (`--end-learning-rate`); None for 0.
    warmup_steps: updates of linear warmup (`--warmup-steps`).
    clip_norm: the global gradient norm limit (`--clip-norm`).
    clip_value: the gradient element limit (`--clip-value`).
    accumulation_steps: minibatches per update (`--accumulation-steps`).
    trainable_pattern: a regex of the variables trained
      (`--trainable-pattern`); None for all.
    max_steps: the run's steps, the default span of a decay (None:
      unbounded).
  """

  optimizer: str = _section.setting(
    '--optimizer',
    group='optimizer',
    type=str.lower,
    choices=OPTIMIZERS,
    default='adam',
    help='the optimizer of the default '
    'build_optimizer() (default: %(default)s)',
  )
  learning_rate: float = _section.setting(
    '--learning-rate',
    group='optimizer',
    type=float,
    default=DEFAULT_LEARNING_RATE,
    convert=float,
    metavar='RATE',
    check=_section.positive(expected='a positive number'),
    help='the (initial) learning rate (default: %(default)s)',
  )
  # None reads as the default, 0.
  momentum: float = _section.setting(
    '--momentum',
    group='optimizer',
    type=float,
    default=0.0,
    convert=float,
    metavar='M',
    check=_section.optional(_momentum),
    help='momentum of sgd and rmsprop (default: %(default)s)',
  )
  nesterov: bool = _section.setting(
    '--nesterov',
    group='optimizer',
    action=argparse.BooleanOptionalAction,
    default=False,
    convert=bool,
    help='Nesterov momentum, with --optimizer sgd (default: off)',
  )
  schedule: str = _section.setting(
    '--learning-rate-schedule',
    group='optimizer',
    type=str.lower,
    choices=SCHEDULES,
    default='constant',
    help='how the learning rate changes with the '
    'optimizer updates (default: %(default)s)',
  )
  decay_steps: Optional[int] = _section.setting(
    '--decay-steps',
    group='optimizer',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='updates over which the schedule decays (the '
    'first period of cosine-restarts) (default: '
    '--max-steps / --accumulation-steps, less '
    '--warmup-steps)',
  )
  decay_rate: Optional[float] = _section.setting(
    '--decay-rate',
    group='optimizer',
    type=float,
    metavar='R',
    check=_section.positive(expected='a positive number'),
    help='the decay rate of exponential, inverse-time '
    'and natural-exp schedules',
  )
  end_learning_rate: Optional[float] = _section.setting(
    '--end-learning-rate',
    group='optimizer',
    type=float,
    metavar='RATE',
    check=_section.not_negative,
    help='the final learning rate of polynomial and '
    'cosine schedules (default: 0)',
  )
  warmup_steps: int = _section.setting(
    '--warmup-steps',
    group='optimizer',
    type=int,
    default=0,
    convert=int,
    metavar='N',
    check=_section.optional(_section.not_negative),
    help='updates over which the learning rate rises '
    "linearly to the schedule's start (default: "
    '%(default)s)',
  )
  clip_norm: Optional[float] = _section.setting(
    '--clip-norm',
    group='optimizer',
    type=float,
    metavar='NORM',
    check=_section.positive(expected='a positive number'),
    help='clip the gradients to this global norm, '
    "after summing the replicas' gradients",
  )
  clip_value: Optional[float] = _section.setting(
    '--clip-value',
    group='optimizer',
    type=float,
    metavar='VALUE',
    check=_section.positive(expected='a positive number'),
    help='clip each gradient element to '
    "[-VALUE, VALUE], after summing the replicas' "
    'gradients',
  )
  accumulation_steps: int = _section.setting(
    '--accumulation-steps',
    group='optimizer',
    type=int,
    default=1,
    convert=int,
    metavar='N',
    check=_section.positive(),
    help='sum the gradients of N steps (minibatches) '
    'and apply their mean once; the step count still '
    'counts minibatches (default: %(default)s)',
  )
  trainable_pattern: Optional[str] = _section.setting(
    '--trainable-pattern',
    group='optimizer',
    metavar='REGEX',
    convert=_section.or_none,
    check=_regex,
    help='train only the variables whose names match '
    'this regular expression (re.search); the others '
    'keep their values',
  )
  # No flag of its own: loop's --max-steps.
  max_steps: Optional[int] = None

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the flags, and the ones that only go with others."""
    super().check(args)
    settings = cls.from_args(args)
    optimizer, momentum = settings.optimizer, settings.momentum
    if momentum and optimizer not in ('sgd', 'rmsprop'):
      raise ConfigurationError(
        '--momentum applies to --optimizer sgd or rmsprop. Received: '
        f'--optimizer={optimizer} --momentum={momentum}'
      )
    if settings.nesterov and optimizer != 'sgd':
      raise ConfigurationError(
        '--nesterov applies to --optimizer sgd. Received: '
        f'--optimizer={optimizer} --nesterov'
      )
    if settings.clip_norm is not None and settings.clip_value is not None:
      raise ConfigurationError(
        'Use one of --clip-norm and --clip-value. Received: '
        f'--clip-norm={settings.clip_norm} --clip-value={settings.clip_value}'
      )
    if settings.schedule in RATE_SCHEDULES and settings.decay_rate is None:
      raise ConfigurationError(
        f'--learning-rate-schedule {settings.schedule} needs --decay-rate. '
        'Received: no --decay-rate'
      )

  @classmethod
  def from_args(cls, args: Any) -> Self:
    """The section's settings, with the run's steps (`--max-steps`)."""
    max_steps = _section.read(args, 'max_steps')
    return dataclasses.replace(
      super().from_args(args),
      max_steps=max_steps if max_steps and max_steps > 0 else None,
    )
