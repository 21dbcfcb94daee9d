"""What tensorfx's own packages use of the trainer's internals; not public API.

Used by `tensorfx.tfutils` (tfutils' `train_from_params` over this
trainer): `builder` (a builder's engine state, `engine_of`),
`checkpoints` (resolving, reading and warm-starting from checkpoints),
`loop` (the training loop's step results, which tfutils' `train_loop`
drives), `tracking` and `tracking_settings` (the MLflow store and its
limits), `targets` (validation targets). Users' code uses
`tensorfx.training`. Importing it imports TensorFlow, as tfutils does.
"""

from tensorfx.training import _builder as builder
from tensorfx.training._checkpoints import restore as checkpoints
from tensorfx.training._engine import loop
from tensorfx.training._run import tracking
from tensorfx.training._settings import targets
from tensorfx.training._settings import tracking as tracking_settings

__all__ = [
  'builder',
  'checkpoints',
  'loop',
  'targets',
  'tracking',
  'tracking_settings',
]
