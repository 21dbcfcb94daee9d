"""What tensorfx's own packages use of the trainer's internals; not public API.

Used by `tensorfx.tfutils` (tfutils' `train_from_params` over this
trainer): `builder` (a builder's engine state, `engine_of`),
`checkpoints` (resolving, reading and warm-starting from checkpoints),
`loop` (the training loop's step results, which tfutils' `train_loop`
drives), `tracking` and `tracking_settings` (the MLflow store and its
limits), `targets` (validation targets). Users' code uses
`tensorfx.training`.

Each name is imported on first use: some of these import TensorFlow.
"""

import importlib
import typing
from typing import Any

if typing.TYPE_CHECKING:
  from tensorfx.training import _builder as builder
  from tensorfx.training._checkpoints import restore as checkpoints
  from tensorfx.training._engine import loop
  from tensorfx.training._run import tracking
  from tensorfx.training._settings import targets
  from tensorfx.training._settings import tracking as tracking_settings

_MODULES = {
  'builder': 'tensorfx.training._builder',
  'checkpoints': 'tensorfx.training._checkpoints.restore',
  'loop': 'tensorfx.training._engine.loop',
  'targets': 'tensorfx.training._settings.targets',
  'tracking': 'tensorfx.training._run.tracking',
  'tracking_settings': 'tensorfx.training._settings.tracking',
}

__all__ = [
  'builder',
  'checkpoints',
  'loop',
  'targets',
  'tracking',
  'tracking_settings',
]


def _import(name: str) -> Any:
  module = _MODULES.get(name)
  if module is None:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = globals()[name] = importlib.import_module(module)
  return value


# Hidden from type checkers, so a misspelt name is an error there.
if not typing.TYPE_CHECKING:
  __getattr__ = _import
