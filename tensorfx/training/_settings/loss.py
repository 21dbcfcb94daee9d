"""Loss settings: the regression loss and how its errors are normalized.

Gematria's `--gematria_loss_type` and `--gematria_loss_normalization`, for
every builder: `--loss` (alias `--loss-type`) and `--loss-normalization`
take Gematria's names in any case (`MEAN_ABSOLUTE_ERROR`,
`percentage_error`) and the short ones tensorfx has always taken (`mae`,
`percentage`). `tensorfx.training.regression_loss` computes the loss they
describe.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import dataclasses
from typing import Any, Optional

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


# A trainer may define a --loss of its own (it replaces this one): a value
# that is not ours is its business, and reads as the field's default. (The
# converters read the class only for such values, never while it is made.)


def _loss_type(value: Any) -> Optional[str]:
  loss = canonical(value)
  return loss if loss in LOSS_TYPES else LossSettings.type


def _normalization(value: Any) -> str:
  normalization = canonical(value)
  return (
    normalization
    if normalization in NORMALIZATIONS
    else LossSettings.normalization
  )


def _huber_delta(value: Any) -> float:
  return (
    float(value)
    if isinstance(value, (int, float))
    else LossSettings.huber_delta
  )


@dataclasses.dataclass(frozen=True)
class LossSettings(_section.Section):
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

  # --loss-type: Gematria's name (--gematria_loss_type).
  type: Optional[str] = _section.setting(
    '--loss',
    '--loss-type',
    group='loss',
    type=canonical,
    choices=LOSS_TYPES,
    metavar='TYPE',
    convert=_loss_type,
    help='the regression loss: mean_squared_error (mse), '
    'mean_absolute_error (mae) or huber, in any case '
    "(default: the model's own, mean_squared_error for "
    'regression)',
  )
  normalization: str = _section.setting(
    '--loss-normalization',
    group='loss',
    type=canonical,
    choices=NORMALIZATIONS,
    default='none',
    metavar='NORMALIZATION',
    convert=_normalization,
    help='how each error is normalized before the loss: '
    'none, percentage_error (divided by |target|) or '
    'expected_value_greater_than_one (divided by the '
    'target where it is above 1), in any case (default: '
    '%(default)s)',
  )
  huber_delta: float = _section.setting(
    '--huber-delta',
    group='loss',
    type=float,
    default=1.0,
    metavar='DELTA',
    convert=_huber_delta,
    check=_section.positive(expected='a positive number'),
    help='where the huber loss turns from squared to linear '
    '(default: %(default)s, as Gematria)',
  )

  @property
  def given(self) -> bool:
    """Whether any loss flag differs from its default."""
    return self != LossSettings()
