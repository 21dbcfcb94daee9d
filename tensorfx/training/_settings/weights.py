"""Weight settings: how much each class counts in the training loss.

`--class-weight balanced` weighs each class by the inverse of its share of
the training data (the class counts of the analysis); `--class-weight
'{setosa: 2, virginica: 0.5}'` names the weight of some classes (by label,
or by index in the target's vocabulary), the others weighing 1. Keras
`fit`'s `class_weight`, as a flag. Per-example weights come from a
`weight` feature of the feature set, not from a flag.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import dataclasses
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

BALANCED = 'balanced'

# A parsed --class-weight: 'balanced', or ((class, weight), ...).
ClassWeight = str | tuple[tuple[str | int, float], ...]


def parse_class_weight(value: object) -> ClassWeight | None:
  """Parses `--class-weight`: `balanced`, or a mapping of class to weight.

  Example:
    >>> parse_class_weight('{setosa: 2, 1: 0.5}')
    (('setosa', 2.0), (1, 0.5))
    >>> parse_class_weight('Balanced')
    'balanced'

  Args:
    value: the flag's text (a YAML or JSON mapping, or `balanced`), or a
      mapping already parsed (a run.yaml value); None for no weights.

  Raises:
    ConfigurationError: naming the flag and the value received.
  """
  if value is None:
    return None
  if isinstance(value, str) and value.strip().lower() == BALANCED:
    return BALANCED
  mapping = value
  if isinstance(value, str):
    import yaml

    try:
      mapping = yaml.safe_load(value)
    except yaml.YAMLError:
      mapping = None
  if not isinstance(mapping, dict) or not mapping:
    raise ConfigurationError(
      "--class-weight must be 'balanced' or a mapping of class (label or "
      "index) to weight, e.g. --class-weight '{setosa: 2, virginica: 1}'. "
      f'Received: --class-weight={value!r}'
    )
  pairs = []
  for key, weight in mapping.items():
    if (
      isinstance(weight, bool)
      or not isinstance(weight, (int, float))
      or not weight >= 0
    ):
      raise ConfigurationError(
        f'--class-weight: the weight of class {key!r} must be a number '
        f'>= 0. Received: {key}={weight!r}'
      )
    if not isinstance(key, (str, int)) or isinstance(key, bool):
      key = str(key)
    pairs.append((key, float(weight)))
  return tuple(pairs)


def _class_weight(name: str, value: Any) -> None:
  parse_class_weight(value)


@dataclasses.dataclass(frozen=True)
class WeightSettings(_section.Section):
  """How examples and classes are weighed in the training loss.

  Attributes:
    class_weight: `balanced`, `((class, weight), ...)` (a class is a
      label or an index of the target's vocabulary), or None
      (`--class-weight`).
  """

  class_weight: ClassWeight | None = _section.setting(
    '--class-weight',
    group='loss',
    metavar='balanced|{CLASS: W, ...}',
    check=_class_weight,
    convert=parse_class_weight,
    help='weigh each class in the training loss of a '
    'classifier: balanced (the inverse of its share of the '
    'training data) or a mapping of label (or index) to '
    'weight, the classes not named weighing 1 (the '
    'ready-made models and KerasModelBuilder)',
  )
