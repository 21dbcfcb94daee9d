"""Checkpoint settings: how often, how many recent and best ones are kept."""

import argparse
import dataclasses
from typing import Any, Optional, Self, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  job = _section.group(parser, 'job')
  job.add_argument(
    '--checkpoint-interval-secs',
    type=int,
    default=60,
    metavar='SECS',
    help='seconds between checkpoints (default: %(default)s)',
  )
  job.add_argument(
    '--checkpoint-interval-steps',
    type=int,
    metavar='N',
    help='steps between checkpoints, in addition to '
    '--checkpoint-interval-secs (default: none)',
  )
  save = _section.group(parser, 'checkpoints')
  save.add_argument(
    '--keep-checkpoints',
    type=int,
    default=5,
    metavar='N',
    help='recent checkpoints to keep (default: %(default)s)',
  )
  save.add_argument(
    '--keep-best-checkpoints',
    type=int,
    default=0,
    metavar='K',
    help='also keep the K best checkpoints by '
    '--best-metric, in checkpoints/best/ (default: '
    '%(default)s)',
  )
  save.add_argument(
    '--best-metric',
    metavar='[TARGET/]NAME[:min|max]',
    help='the validation result that ranks checkpoints '
    "(default: the model's evaluation_metric, loss:min, "
    'on the first target)',
  )


def check(args: Any) -> None:
  _section.check_positive(args, 'checkpoint_interval_secs')
  _section.check_positive(args, 'checkpoint_interval_steps', optional=True)
  _section.check_positive(args, 'keep_checkpoints')
  _section.check_not_negative(args, 'keep_best_checkpoints')
  best = _section.read(args, 'best_metric')
  if best:
    parse_best_metric(best)


def parse_best_metric(
  spec: str | None,
  default: Tuple[str, str] = ('loss', 'min'),
) -> Tuple[str | None, str, str]:
  """Parses `--best-metric [TARGET/]NAME[:min|max]`.

  Example:
    >>> parse_best_metric('holdout/accuracy:max')
    ('holdout', 'accuracy', 'max')

  Without a mode, `default`'s mode goes with `default`'s name, `min` with
  names ending in `loss` or `error`, and `max` with the others (accuracy,
  AUC).

  Args:
    spec: the flag's value, or None for `default` on the first target.
    default: the model's `evaluation_metric`, `(name, mode)`.

  Returns:
    `(target, name, mode)`; target is None for the first target.

  Raises:
    ConfigurationError: a malformed spec or mode.
  """
  if not spec:
    return (None, *default)
  target, _, rest = spec.rpartition('/')
  name, _, mode = rest.partition(':')
  if not mode:
    mode = (
      default[1]
      if name == default[0]
      else ('min' if name.endswith('loss') or name.endswith('error') else 'max')
    )
  if not name or mode not in ('min', 'max'):
    raise ConfigurationError(
      '--best-metric expects [TARGET/]NAME[:min|max], e.g. '
      f'holdout/accuracy:max. Received: --best-metric={spec}'
    )
  return (target or None, name, mode)


@dataclasses.dataclass(frozen=True)
class CheckpointSettings:
  """When checkpoints are written and which are kept.

  Attributes:
    interval_secs: seconds between checkpoints
      (`--checkpoint-interval-secs`).
    interval_steps: steps between checkpoints
      (`--checkpoint-interval-steps`); None for time only.
    keep: recent checkpoints kept (`--keep-checkpoints`).
    keep_best: best checkpoints kept in `checkpoints/best/`
      (`--keep-best-checkpoints`).
    best_metric: the `--best-metric` spec as given; None for the model's
      `evaluation_metric` on the first target. See `best(default)`.
  """

  interval_secs: float = 60.0
  interval_steps: Optional[int] = None
  keep: int = 5
  keep_best: int = 0
  best_metric: Optional[str] = None

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      interval_secs=float(read(args, 'checkpoint_interval_secs', 60)),
      interval_steps=read(args, 'checkpoint_interval_steps'),
      keep=int(read(args, 'keep_checkpoints', 5)),
      keep_best=int(read(args, 'keep_best_checkpoints', 0)),
      best_metric=read(args, 'best_metric'),
    )

  def best(self, default: Tuple[str, str]) -> Tuple[str | None, str, str]:
    """`(target, name, mode)` ranking checkpoints; `default` is the model's."""
    name, mode = default  # Also a list, as YAML gives it.
    return parse_best_metric(self.best_metric, (name, mode))
