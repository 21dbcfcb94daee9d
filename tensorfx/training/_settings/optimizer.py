"""Optimizer settings: the default optimizer, its schedule and clipping."""

import argparse
import dataclasses
import re
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

# The same as tensorfx.training._engine.optimizers', which imports TensorFlow.
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
  optimizer = _section.group(parser, 'optimizer')
  optimizer.add_argument(
    '--optimizer',
    type=str.lower,
    choices=OPTIMIZERS,
    default='adam',
    help='the optimizer of the default '
    'build_optimizer() (default: %(default)s)',
  )
  optimizer.add_argument(
    '--learning-rate',
    type=float,
    default=0.001,
    metavar='RATE',
    help='the (initial) learning rate (default: %(default)s)',
  )
  optimizer.add_argument(
    '--momentum',
    type=float,
    default=0.0,
    metavar='M',
    help='momentum of sgd and rmsprop (default: %(default)s)',
  )
  optimizer.add_argument(
    '--nesterov',
    action=argparse.BooleanOptionalAction,
    default=False,
    help='Nesterov momentum, with --optimizer sgd (default: off)',
  )
  optimizer.add_argument(
    '--learning-rate-schedule',
    type=str.lower,
    choices=SCHEDULES,
    default='constant',
    help='how the learning rate changes with the '
    'optimizer updates (default: %(default)s)',
  )
  optimizer.add_argument(
    '--decay-steps',
    type=int,
    metavar='N',
    help='updates over which the schedule decays (the '
    'first period of cosine-restarts) (default: '
    '--max-steps / --accumulation-steps, less '
    '--warmup-steps)',
  )
  optimizer.add_argument(
    '--decay-rate',
    type=float,
    metavar='R',
    help='the decay rate of exponential, inverse-time '
    'and natural-exp schedules',
  )
  optimizer.add_argument(
    '--end-learning-rate',
    type=float,
    metavar='RATE',
    help='the final learning rate of polynomial and '
    'cosine schedules (default: 0)',
  )
  optimizer.add_argument(
    '--warmup-steps',
    type=int,
    default=0,
    metavar='N',
    help='updates over which the learning rate rises '
    "linearly to the schedule's start (default: "
    '%(default)s)',
  )
  optimizer.add_argument(
    '--clip-norm',
    type=float,
    metavar='NORM',
    help='clip the gradients to this global norm, '
    "after summing the replicas' gradients",
  )
  optimizer.add_argument(
    '--clip-value',
    type=float,
    metavar='VALUE',
    help='clip each gradient element to '
    "[-VALUE, VALUE], after summing the replicas' "
    'gradients',
  )
  optimizer.add_argument(
    '--accumulation-steps',
    type=int,
    default=1,
    metavar='N',
    help='sum the gradients of N steps (minibatches) '
    'and apply their mean once; the step count still '
    'counts minibatches (default: %(default)s)',
  )
  optimizer.add_argument(
    '--trainable-pattern',
    metavar='REGEX',
    help='train only the variables whose names match '
    'this regular expression (re.search); the others '
    'keep their values',
  )


def check(args: Any) -> None:
  for dest in ('learning_rate', 'clip_norm', 'clip_value', 'decay_rate'):
    _section.check_positive(
      args, dest, optional=dest != 'learning_rate', expected='a positive number'
    )
  _section.check_positive(args, 'decay_steps', optional=True)
  _section.check_positive(args, 'accumulation_steps')
  _section.check_not_negative(args, 'warmup_steps', 'end_learning_rate')
  optimizer = _section.read(args, 'optimizer', 'adam')
  momentum = _section.read(args, 'momentum', 0.0)
  if not 0.0 <= momentum < 1.0:
    raise ConfigurationError(
      f'--momentum must be in [0, 1). Received: --momentum={momentum}'
    )
  if momentum and optimizer not in ('sgd', 'rmsprop'):
    raise ConfigurationError(
      '--momentum applies to --optimizer sgd or rmsprop. Received: '
      f'--optimizer={optimizer} --momentum={momentum}'
    )
  if _section.read(args, 'nesterov', False) and optimizer != 'sgd':
    raise ConfigurationError(
      '--nesterov applies to --optimizer sgd. Received: '
      f'--optimizer={optimizer} --nesterov'
    )
  clip_norm = _section.read(args, 'clip_norm')
  clip_value = _section.read(args, 'clip_value')
  if clip_norm is not None and clip_value is not None:
    raise ConfigurationError(
      'Use one of --clip-norm and --clip-value. Received: '
      f'--clip-norm={clip_norm} --clip-value={clip_value}'
    )
  schedule = _section.read(args, 'learning_rate_schedule', 'constant')
  if schedule in RATE_SCHEDULES and _section.read(args, 'decay_rate') is None:
    raise ConfigurationError(
      f'--learning-rate-schedule {schedule} needs --decay-rate. '
      'Received: no --decay-rate'
    )
  pattern = _section.read(args, 'trainable_pattern')
  if pattern:
    try:
      re.compile(pattern)
    except re.error as e:
      raise ConfigurationError(
        f'--trainable-pattern must be a regular expression ({e}). '
        f'Received: --trainable-pattern={pattern}'
      ) from None


@dataclasses.dataclass(frozen=True)
class OptimizerSettings:
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

  optimizer: str = 'adam'
  learning_rate: float = DEFAULT_LEARNING_RATE
  momentum: float = 0.0
  nesterov: bool = False
  schedule: str = 'constant'
  decay_steps: Optional[int] = None
  decay_rate: Optional[float] = None
  end_learning_rate: Optional[float] = None
  warmup_steps: int = 0
  clip_norm: Optional[float] = None
  clip_value: Optional[float] = None
  accumulation_steps: int = 1
  trainable_pattern: Optional[str] = None
  max_steps: Optional[int] = None

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    max_steps = read(args, 'max_steps')
    return cls(
      optimizer=read(args, 'optimizer', 'adam'),
      learning_rate=float(read(args, 'learning_rate', DEFAULT_LEARNING_RATE)),
      momentum=float(read(args, 'momentum', 0.0)),
      nesterov=bool(read(args, 'nesterov', False)),
      schedule=read(args, 'learning_rate_schedule', 'constant'),
      decay_steps=read(args, 'decay_steps'),
      decay_rate=read(args, 'decay_rate'),
      end_learning_rate=read(args, 'end_learning_rate'),
      warmup_steps=int(read(args, 'warmup_steps', 0)),
      clip_norm=read(args, 'clip_norm'),
      clip_value=read(args, 'clip_value'),
      accumulation_steps=int(read(args, 'accumulation_steps', 1)),
      trainable_pattern=read(args, 'trainable_pattern') or None,
      max_steps=max_steps if max_steps and max_steps > 0 else None,
    )
