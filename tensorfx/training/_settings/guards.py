"""Guard settings: when a diverging or broken run stops."""

import dataclasses
import math
from typing import Optional

from tensorfx.training._settings import _section


@dataclasses.dataclass(frozen=True)
class GuardSettings(_section.Section):
  """The loss guards.

  Attributes:
    thres_loss: the largest training loss allowed (`--thres-loss`); None
      for no limit.
    nan_restore: how many times a non-finite loss restores the last
      checkpoint before the job stops (`--nan-restore`).
  """

  thres_loss: Optional[float] = _section.setting(
    '--thres-loss',
    group='guards',
    type=float,
    metavar='LOSS',
    check=_section.positive(expected='a positive number'),
    help='stop with HighLossError when the training loss '
    'exceeds LOSS (default: no limit)',
  )
  nan_restore: int = _section.setting(
    '--nan-restore',
    group='guards',
    type=int,
    default=0,
    convert=int,
    metavar='N',
    check=_section.optional(_section.not_negative),
    help='on a non-finite loss, restore the last '
    'checkpoint and train on, up to N times, before '
    'stopping (default: %(default)s)',
  )

  @property
  def loss_limit(self) -> float:
    """The largest training loss allowed: `thres_loss`, or inf for none."""
    return math.inf if self.thres_loss is None else float(self.thres_loss)
