"""Speed settings: XLA, the in-memory cache of the training data, precision."""

import argparse
import dataclasses
from typing import Any, Optional, Sequence

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

CACHE_MODES = ('auto', 'memory', 'none')
PRECISIONS = ('float32', 'mixed_float16', 'mixed_bfloat16')


def _one_of(choices: Sequence[str]) -> _section.Check:
  """A check: the value is one of `choices` (None: the default)."""

  def check(name: str, value: Any) -> None:
    if value is not None and value not in choices:
      raise ConfigurationError(
        f'{name} must be one of {", ".join(choices)}. Received: {name}={value}'
      )

  return check


@dataclasses.dataclass(frozen=True)
class SpeedSettings(_section.Section):
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

  jit_compile: bool = _section.setting(
    '--jit-compile',
    group='speed',
    action=argparse.BooleanOptionalAction,
    default=False,
    convert=bool,
    help='compile the training and evaluation steps with '
    'XLA (not the input pipeline); a step XLA cannot '
    'compile (string or sparse inputs it uses, embedding '
    'tables) runs without it, with a warning (default: '
    'off)',
  )
  cache: str = _section.setting(
    '--cache',
    group='speed',
    type=str.lower,
    choices=CACHE_MODES,
    default='auto',
    check=_one_of(CACHE_MODES),
    help='keep the transformed training data in memory '
    'after the first epoch: auto (when training reads it '
    'more than once and its estimated size fits '
    '--cache-budget-mb), memory (always), none (default: '
    '%(default)s)',
  )
  cache_budget_mb: Optional[int] = _section.setting(
    '--cache-budget-mb',
    group='speed',
    type=int,
    metavar='MB',
    check=_section.positive('a positive number of MiB'),
    help='the most memory the cache of the training data '
    'may take in each process that reads it (default: a '
    "quarter of the machine's memory; with parameter "
    'servers --cache auto caches only when this is given)',
  )
  precision: str = _section.setting(
    '--precision',
    group='speed',
    type=str.lower,
    choices=PRECISIONS,
    default='float32',
    check=_one_of(PRECISIONS),
    help='mixed precision: layers compute in float16 or '
    'bfloat16 and keep float32 variables; float16 adds '
    "loss scaling; the exported model's outputs stay "
    'float32 (default: %(default)s)',
  )
