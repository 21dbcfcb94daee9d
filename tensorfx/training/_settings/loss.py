"""Loss settings: the regression loss and how its errors are normalized.

Gematria's `--gematria_loss_type` and `--gematria_loss_normalization`, for
every builder: `--loss` (alias `--loss-type`) and `--loss-normalization`
take Gematria's names in any case (`MEAN_ABSOLUTE_ERROR`,
`percentage_error`) and the short ones tensorfx has always taken (`mae`,
`percentage`). `tensorfx.training.regression_loss` computes the loss they
describe.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import argparse
import dataclasses
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

LOSS_TYPES = ('mean_squared_error', 'mean_absolute_error', 'huber')
NORMALIZATIONS = ('none', 'percentage_error', 'expected_value_greater_than_one')
_ALIASES = {
  'mse': 'mean_squared_error',
  'mae': 'mean_absolute_error',
  'percentage': 'percentage_error',
}


def canonical(value: Any) -> Any:
  """The canonical (lower-case, Gematria) name of a loss or normalization.

  Example:
    >>> canonical('MEAN_ABSOLUTE_ERROR'), canonical('mse')
    ('mean_absolute_error', 'mean_squared_error')
  """
  name = str(value).strip().lower().replace('-', '_')
  return _ALIASES.get(name, name)


def check_loss_type(value: Any, name: str = 'loss') -> str:
  """The canonical loss type, or ConfigurationError naming `name`."""
  loss = canonical(value)
  if loss not in LOSS_TYPES:
    raise ConfigurationError(
      f'{name} must be one of {", ".join(LOSS_TYPES)} (or mse, mae; any '
      f'case). Received: {name}={value!r}'
    )
  return loss


def check_normalization(value: Any, name: str = 'normalization') -> str:
  """The canonical normalization, or ConfigurationError naming `name`."""
  normalization = canonical(value)
  if normalization not in NORMALIZATIONS:
    raise ConfigurationError(
      f'{name} must be one of {", ".join(NORMALIZATIONS)} (or percentage; '
      f'any case). Received: {name}={value!r}'
    )
  return normalization


def add_arguments(parser: argparse.ArgumentParser) -> None:
  loss = _section.group(parser, 'loss')
  # --loss-type: Gematria's name (--gematria_loss_type).
  loss.add_argument(
    '--loss',
    '--loss-type',
    dest='loss',
    type=canonical,
    choices=LOSS_TYPES,
    metavar='TYPE',
    help='the regression loss: mean_squared_error (mse), '
    'mean_absolute_error (mae) or huber, in any case '
    "(default: the model's own, mean_squared_error for "
    'regression)',
  )
  loss.add_argument(
    '--loss-normalization',
    type=canonical,
    choices=NORMALIZATIONS,
    default='none',
    metavar='NORMALIZATION',
    help='how each error is normalized before the loss: '
    'none, percentage_error (divided by |target|) or '
    'expected_value_greater_than_one (divided by the '
    'target where it is above 1), in any case (default: '
    '%(default)s)',
  )
  loss.add_argument(
    '--huber-delta',
    type=float,
    default=1.0,
    metavar='DELTA',
    help='where the huber loss turns from squared to linear '
    '(default: %(default)s, as Gematria)',
  )


def check(args: Any) -> None:
  _section.check_positive(args, 'huber_delta', expected='a positive number')


@dataclasses.dataclass(frozen=True)
class LossSettings:
  """The regression loss of the job.

  Pass it to `tensorfx.training.regression_loss` from a builder's
  `build_training` (`regression_loss(predictions, targets,
  self.settings.loss)`).

  Attributes:
    type: `mean_squared_error`, `mean_absolute_error` or `huber`
      (`--loss`, `--loss-type`); None when not given: the model's own loss
      (regression: mean squared error).
    normalization: `none`, `percentage_error` or
      `expected_value_greater_than_one` (`--loss-normalization`).
    huber_delta: where the huber loss turns linear (`--huber-delta`).
  """

  type: Optional[str] = None
  normalization: str = 'none'
  huber_delta: float = 1.0

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    # A trainer may define a --loss of its own (it replaces this one): a
    # value that is not a regression loss is its business, not ours.
    loss = canonical(read(args, 'loss', ''))
    normalization = canonical(read(args, 'loss_normalization', 'none'))
    huber_delta = read(args, 'huber_delta', 1.0)
    return cls(
      type=loss if loss in LOSS_TYPES else None,
      normalization=(
        normalization if normalization in NORMALIZATIONS else 'none'
      ),
      huber_delta=float(huber_delta)
      if isinstance(huber_delta, (int, float))
      else 1.0,
    )

  @property
  def given(self) -> bool:
    """Whether any loss flag differs from its default."""
    return self != LossSettings()
