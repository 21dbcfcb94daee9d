"""What tensorfx's own packages use of the trainer's internals; not public API.

Used by `tensorfx.tfutils` (tfutils' `train_from_params` over this
trainer): `builder` (a builder's engine state, `engine_of`),
`checkpoints` (resolving, reading and warm-starting from checkpoints),
`loop` (the training loop's step results, which tfutils' `train_loop`
drives), `tracking` and `tracking_settings` (the MLflow store and its
limits), `targets` (validation targets); and the public classes it
builds on, from here rather than from `tensorfx.training`, whose face
exports tfutils' functions. Users' code uses `tensorfx.training`.
Importing it imports TensorFlow, as tfutils does.
"""

from tensorfx.training import _builderbase as builder
from tensorfx.training._arguments.args import ModelArguments
from tensorfx.training._builder import ModelBuilder
from tensorfx.training._callbacks.base import Callback
from tensorfx.training._checkpoints import restore as checkpoints
from tensorfx.training._engine import loop
from tensorfx.training._interfaces import PredictionInterface
from tensorfx.training._interfaces import TrainingInterface
from tensorfx.training._run import tracking
from tensorfx.training._settings import targets
from tensorfx.training._settings import tracking as tracking_settings
from tensorfx.training._trainer import ModelTrainer

__all__ = [
  'Callback',
  'ModelArguments',
  'ModelBuilder',
  'ModelTrainer',
  'PredictionInterface',
  'TrainingInterface',
  'builder',
  'checkpoints',
  'loop',
  'targets',
  'tracking',
  'tracking_settings',
]
