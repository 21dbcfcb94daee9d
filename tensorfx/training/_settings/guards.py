"""Guard settings: when a diverging or broken run stops."""

import argparse
import dataclasses
from typing import Any, Optional, Self

from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  guards = _section.group(parser, 'guards')
  guards.add_argument(
    '--thres-loss',
    type=float,
    metavar='LOSS',
    help='stop with HighLossError when the training loss '
    'exceeds LOSS (default: no limit)',
  )
  guards.add_argument(
    '--nan-restore',
    type=int,
    default=0,
    metavar='N',
    help='on a non-finite loss, restore the last '
    'checkpoint and train on, up to N times, before '
    'stopping (default: %(default)s)',
  )


def check(args: Any) -> None:
  _section.check_positive(
    args, 'thres_loss', optional=True, expected='a positive number'
  )
  _section.check_not_negative(args, 'nan_restore')


@dataclasses.dataclass(frozen=True)
class GuardSettings:
  """The loss guards.

  Attributes:
    thres_loss: the largest training loss allowed (`--thres-loss`); None
      for no limit.
    nan_restore: how many times a non-finite loss restores the last
      checkpoint before the job stops (`--nan-restore`).
  """

  thres_loss: Optional[float] = None
  nan_restore: int = 0

  @classmethod
  def from_args(cls, args: Any) -> Self:
    return cls(
      thres_loss=_section.read(args, 'thres_loss'),
      nan_restore=int(_section.read(args, 'nan_restore', 0)),
    )
