"""Loop settings: how many steps, in what batches, how often reported."""

import argparse
import dataclasses
from typing import Any, Optional, Union

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section


def _max_steps(value: int) -> Optional[int]:
  # 0 or less: no step limit.
  return value if value > 0 else None


def _seed(name: str, value: Any) -> None:
  # Seeds feed NumPy and Python's random as well, which reject negatives.
  if value < 0:
    raise ConfigurationError(
      f'{name} must be a non-negative integer. Received: {name}={value}'
    )


@dataclasses.dataclass(frozen=True)
class LoopSettings(_section.Section):
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
    steps_per_closure: with parameter servers, the most steps of each
      closure a worker runs (`--steps-per-closure`); each call's steps are
      split evenly over closures, in rounds of one closure per worker.
  """

  # --training-num-epochs: Gematria's name for the step count.
  max_steps: Optional[int] = _section.setting(
    '--max-steps',
    '--training-num-epochs',
    group='job',
    type=int,
    default=1000,
    convert=_max_steps,
    metavar='N',
    help='training steps to run; 0 or less runs until the '
    'data (see --epochs) runs out or the job is stopped '
    '(default: %(default)s)',
  )
  batch_size: Union[int, str] = _section.setting(
    '--batch-size',
    group='job',
    type=_section.batch_size,
    default=64,
    convert=_section.batch,
    metavar='N',
    check=_section.positive_or_all,
    help='training instances per step, or all: the whole '
    'training data in each step (its size from the '
    'analysis, else counted) (default: %(default)s)',
  )
  epochs: Optional[int] = _section.setting(
    '--epochs',
    group='job',
    type=int,
    metavar='N',
    check=_section.positive(
      expected='a positive integer, or no --epochs to repeat the data '
      'until --max-steps'
    ),
    help='passes over the training data (default: no limit, see --max-steps)',
  )
  shuffle: bool = _section.setting(
    '--shuffle',
    group='job',
    action=argparse.BooleanOptionalAction,
    default=True,
    convert=bool,
    help='shuffle the training data (default: on)',
  )
  seed: Optional[int] = _section.setting(
    '--seed',
    group='job',
    type=int,
    metavar='N',
    check=_seed,
    help='the random seed, for repeatable runs (default: none)',
  )
  steps_per_loop: Optional[int] = _section.setting(
    '--steps-per-loop',
    group='job',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='training steps run per tf.function call; more '
    'steps amortize the call overhead (default: up to the '
    'next log line, checkpoint or final step)',
  )
  log_interval_steps: int = _section.setting(
    '--log-interval-steps',
    group='logging',
    type=int,
    default=100,
    convert=int,
    metavar='N',
    check=_section.positive(),
    help='steps between progress logs and training '
    'summaries (default: %(default)s)',
  )
  steps_per_closure: int = _section.setting(
    '--steps-per-closure',
    group='job',
    type=int,
    default=10,
    convert=int,
    metavar='N',
    check=_section.positive(),
    help='with parameter servers: the most training steps a '
    'worker runs per closure the chief schedules (default: '
    '%(default)s)',
  )

  @classmethod
  def ordered_flags(cls) -> list[_section.Flag]:
    # --help (its usage line) and --print-config list --log-interval-steps,
    # the logging group's first flag, after the job group's flags; the
    # fields keep their order (the repr).
    return sorted(
      super().ordered_flags(), key=lambda flag: flag.group == 'logging'
    )
