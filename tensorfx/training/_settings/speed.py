"""Speed settings: XLA, the in-memory cache of the training data, precision."""

import argparse
import dataclasses
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

CACHE_MODES = ('auto', 'memory', 'none')
PRECISIONS = ('float32', 'mixed_float16', 'mixed_bfloat16')


def add_arguments(parser: argparse.ArgumentParser) -> None:
  speed = _section.group(parser, 'speed')
  speed.add_argument(
    '--jit-compile',
    action=argparse.BooleanOptionalAction,
    default=False,
    help='compile the training and evaluation steps with '
    'XLA (not the input pipeline); a step XLA cannot '
    'compile (string or sparse inputs it uses, embedding '
    'tables) runs without it, with a warning (default: '
    'off)',
  )
  speed.add_argument(
    '--cache',
    type=str.lower,
    choices=CACHE_MODES,
    default='auto',
    help='keep the transformed training data in memory '
    'after the first epoch: auto (when training reads it '
    'more than once and its estimated size fits '
    '--cache-budget-mb), memory (always), none (default: '
    '%(default)s)',
  )
  speed.add_argument(
    '--cache-budget-mb',
    type=int,
    metavar='MB',
    help='the most memory the cache of the training data '
    'may take in each process that reads it (default: a '
    "quarter of the machine's memory; with parameter "
    'servers --cache auto caches only when this is given)',
  )
  speed.add_argument(
    '--precision',
    type=str.lower,
    choices=PRECISIONS,
    default='float32',
    help='mixed precision: layers compute in float16 or '
    'bfloat16 and keep float32 variables; float16 adds '
    "loss scaling; the exported model's outputs stay "
    'float32 (default: %(default)s)',
  )


def check(args: Any) -> None:
  _section.check_positive(
    args, 'cache_budget_mb', optional=True, expected='a positive number of MiB'
  )
  for dest, choices in (('cache', CACHE_MODES), ('precision', PRECISIONS)):
    value = getattr(args, dest, None)
    if value is not None and value not in choices:
      raise ConfigurationError(
        f'{_section.flag(dest)} must be one of {", ".join(choices)}. '
        f'Received: {_section.flag(dest)}={value}'
      )


@dataclasses.dataclass(frozen=True)
class SpeedSettings:
  """How fast the steps and the input run.

  Attributes:
    jit_compile: compile the training and evaluation steps with XLA
      (`--jit-compile`).
    cache: 'auto', 'memory' or 'none': whether the transformed training
      data is kept in memory after its first pass (`--cache`).
    cache_budget_mb: the most MiB the cache may take per process
      (`--cache-budget-mb`); None for a quarter of the machine's memory.
    precision: 'float32', 'mixed_float16' or 'mixed_bfloat16'
      (`--precision`).
  """

  jit_compile: bool = False
  cache: str = 'auto'
  cache_budget_mb: Optional[int] = None
  precision: str = 'float32'

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      jit_compile=bool(read(args, 'jit_compile', False)),
      cache=read(args, 'cache', 'auto'),
      cache_budget_mb=read(args, 'cache_budget_mb'),
      precision=read(args, 'precision', 'float32'),
    )
