"""A study's parameters as Optuna suggestions, and as the trainer's flags.

Vertex AI passes each trial its parameters as `--NAME=VALUE` flags; the
search space is the `StudySpec`'s, scale types included. Optuna has no
reverse-log scale, so a `UNIT_REVERSE_LOG_SCALE` parameter is drawn on a log
scale and mirrored (`min + max - x`): values near the top of the range are
then as finely explored as a log scale explores the bottom.
"""

from __future__ import annotations

import math
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import ParameterSpec
from tensorfx.cloud import StudySpec

# Where a mirrored (reverse log) parameter's draw is kept in Optuna.
_MIRRORED = '{}~reverse-log'


def suggest(
  trial: Any, parameters: tuple[ParameterSpec, ...]
) -> dict[str, Any]:
  """Draws every parameter for an Optuna `trial`; returns name -> value."""
  chosen: dict[str, Any] = {}
  for p in parameters:
    if p.type in ('DOUBLE', 'INTEGER'):
      low: Any = p.min_value  # Numbers: ParameterSpec checks them.
      high: Any = p.max_value
      reverse = p.scale_type == 'UNIT_REVERSE_LOG_SCALE'
      log = p.scale_type in ('UNIT_LOG_SCALE', 'UNIT_REVERSE_LOG_SCALE')
      name = _MIRRORED.format(p.name) if reverse else p.name
      if p.type == 'INTEGER':
        value: Any = trial.suggest_int(name, int(low), int(high), log=log)
        chosen[p.name] = int(low) + int(high) - value if reverse else value
      else:
        value = trial.suggest_float(name, float(low), float(high), log=log)
        chosen[p.name] = float(low) + float(high) - value if reverse else value
    else:
      chosen[p.name] = trial.suggest_categorical(p.name, list(p.values))
  return chosen


def grid(study: StudySpec) -> dict[str, list[Any]]:
  """The search grid of a GRID_SEARCH study (Optuna's `GridSampler`).

  Raises:
    ConfigurationError: a DOUBLE parameter (a grid needs listed values, as
      Vertex AI's grid search does).
  """
  space: dict[str, list[Any]] = {}
  for p in study.parameters:
    if p.type == 'DOUBLE':
      raise ConfigurationError(
        f'GRID_SEARCH cannot search the DOUBLE hyperparameter {p.name!r}: '
        'give it as DISCRETE (discreteValues) or INTEGER, or use '
        'RANDOM_SEARCH. Received: type=DOUBLE'
      )
    if p.type == 'INTEGER':
      name = p.name
      low: Any = p.min_value
      high: Any = p.max_value
      values: list[Any] = list(range(int(low), int(high) + 1))
      if p.scale_type == 'UNIT_REVERSE_LOG_SCALE':
        name = _MIRRORED.format(p.name)
      space[name] = values
    else:
      space[p.name] = list(p.values)
  return space


def grid_size(space: dict[str, list[Any]]) -> int:
  return math.prod(len(v) for v in space.values())


def flag_value(value: Any) -> str:
  """A parameter's value as the trainer flag gets it (`17`, `0.042`, `relu`).

  Example:
    >>> [flag_value(v) for v in (17, 32.0, 0.042, 'relu')]
    ['17', '32', '0.042', 'relu']
  """
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


def flags(parameters: dict[str, Any]) -> list[str]:
  """The trainer flags of a trial's parameters, as Vertex AI passes them.

  Example:
    >>> flags({'learning-rate': 0.042, 'hidden-layers:1': 17})
    ['--learning-rate=0.042', '--hidden-layers:1=17']
  """
  return [f'--{name}={flag_value(value)}' for name, value in parameters.items()]
