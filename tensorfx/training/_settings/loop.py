"""Loop settings: how many steps, in what batches, how often reported."""

import argparse
import dataclasses
from typing import Any, Optional, Self, Union

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  job = _section.group(parser, 'job')
  # --training-num-epochs: Gematria's name for the step count.
  job.add_argument(
    '--max-steps',
    '--training-num-epochs',
    type=int,
    default=1000,
    metavar='N',
    help='training steps to run; 0 or less runs until the '
    'data (see --epochs) runs out or the job is stopped '
    '(default: %(default)s)',
  )
  job.add_argument(
    '--batch-size',
    type=_section.batch_size,
    default=64,
    metavar='N',
    help='training instances per step, or all: the whole '
    'training data in each step (its size from the '
    'analysis, else counted) (default: %(default)s)',
  )
  job.add_argument(
    '--epochs',
    type=int,
    metavar='N',
    help='passes over the training data (default: no limit, see --max-steps)',
  )
  job.add_argument(
    '--shuffle',
    action=argparse.BooleanOptionalAction,
    default=True,
    help='shuffle the training data (default: on)',
  )
  job.add_argument(
    '--seed',
    type=int,
    metavar='N',
    help='the random seed, for repeatable runs (default: none)',
  )
  job.add_argument(
    '--steps-per-loop',
    type=int,
    metavar='N',
    help='training steps run per tf.function call; more '
    'steps amortize the call overhead (default: up to the '
    'next log line, checkpoint or final step)',
  )
  job.add_argument(
    '--steps-per-closure',
    type=int,
    default=10,
    metavar='N',
    help='with parameter servers: training steps a worker '
    'runs per closure the chief schedules (default: '
    '%(default)s)',
  )
  logging = _section.group(parser, 'logging')
  logging.add_argument(
    '--log-interval-steps',
    type=int,
    default=100,
    metavar='N',
    help='steps between progress logs and training '
    'summaries (default: %(default)s)',
  )


def check(args: Any) -> None:
  _section.check_batch_size(args, 'batch_size')
  _section.check_positive(
    args,
    'epochs',
    optional=True,
    expected='a positive integer, or no --epochs to repeat the data '
    'until --max-steps',
  )
  _section.check_positive(args, 'log_interval_steps')
  _section.check_positive(args, 'steps_per_loop', optional=True)
  _section.check_positive(args, 'steps_per_closure')
  seed = getattr(args, 'seed', None)
  # Seeds feed NumPy and Python's random as well, which reject negatives.
  if seed is not None and seed < 0:
    raise ConfigurationError(
      f'--seed must be a non-negative integer. Received: --seed={seed}'
    )


@dataclasses.dataclass(frozen=True)
class LoopSettings:
  """How the training loop runs.

  Attributes:
    max_steps: the global step training stops at; None runs until the
      data ends or the job is stopped (`--max-steps` 0 or less).
    batch_size: training instances per step (`--batch-size`); `'all'`
      until the graphs are built, which replace it by the number of
      training instances.
    epochs: passes over the training data; None repeats it (`--epochs`).
    shuffle: whether the training data is shuffled (`--shuffle`).
    seed: the random seed (`--seed`); None for none.
    steps_per_loop: training steps per `tf.function` call
      (`--steps-per-loop`); None runs up to the next event (log,
      checkpoint, validation, end).
    log_interval_steps: steps between progress reports
      (`--log-interval-steps`).
    steps_per_closure: with parameter servers, the steps of each closure
      a worker runs (`--steps-per-closure`).
  """

  max_steps: Optional[int] = 1000
  batch_size: Union[int, str] = 64
  epochs: Optional[int] = None
  shuffle: bool = True
  seed: Optional[int] = None
  steps_per_loop: Optional[int] = None
  log_interval_steps: int = 100
  steps_per_closure: int = 10

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    max_steps = read(args, 'max_steps', 1000)
    return cls(
      max_steps=max_steps if max_steps > 0 else None,
      batch_size=_batch(read(args, 'batch_size', 64)),
      epochs=read(args, 'epochs'),
      shuffle=bool(read(args, 'shuffle', True)),
      seed=read(args, 'seed'),
      steps_per_loop=read(args, 'steps_per_loop'),
      log_interval_steps=int(read(args, 'log_interval_steps', 100)),
      steps_per_closure=int(read(args, 'steps_per_closure', 10)),
    )


def _batch(value: Any) -> int | str:
  if isinstance(value, str) and value.lower() == _section.ALL:
    return _section.ALL
  return int(value)
