"""Checkpoint settings: how often, how many recent and best ones are kept."""

import dataclasses
from typing import Any, Optional, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section


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


def _best_metric(name: str, value: Any) -> None:
  parse_best_metric(value)


@dataclasses.dataclass(frozen=True)
class CheckpointSettings(_section.Section):
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

  interval_secs: float = _section.setting(
    '--checkpoint-interval-secs',
    group='job',
    type=int,
    default=60,
    convert=float,
    metavar='SECS',
    check=_section.positive(),
    help='seconds between checkpoints (default: %(default)s)',
  )
  interval_steps: Optional[int] = _section.setting(
    '--checkpoint-interval-steps',
    group='job',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='steps between checkpoints, in addition to '
    '--checkpoint-interval-secs (default: none)',
  )
  keep: int = _section.setting(
    '--keep-checkpoints',
    group='checkpoints',
    type=int,
    default=5,
    metavar='N',
    check=_section.positive(),
    help='recent checkpoints to keep (default: %(default)s)',
  )
  keep_best: int = _section.setting(
    '--keep-best-checkpoints',
    group='checkpoints',
    type=int,
    default=0,
    metavar='K',
    check=_section.optional(_section.not_negative),
    help='also keep the K best checkpoints by '
    '--best-metric, in checkpoints/best/ (default: '
    '%(default)s)',
  )
  best_metric: Optional[str] = _section.setting(
    '--best-metric',
    group='checkpoints',
    metavar='[TARGET/]NAME[:min|max]',
    check=_best_metric,
    help='the validation result that ranks checkpoints '
    "(default: the model's evaluation_metric, loss:min, "
    'on the first target)',
  )

  def best(self, default: Tuple[str, str]) -> Tuple[str | None, str, str]:
    """`(target, name, mode)` ranking checkpoints; `default` is the model's."""
    name, mode = default  # Also a list, as YAML gives it.
    return parse_best_metric(self.best_metric, (name, mode))
