"""Training: arguments, configuration, model builders and the trainer.

Names are imported on first use: a trainer's `--help` and argument errors
answer without importing TensorFlow.
"""

import typing

from tensorfx import _lazy

# Type checkers and IDEs see the names here; at run time they are imported
# on first use by __getattr__ below.
if typing.TYPE_CHECKING:
  from tensorfx.tfutils import test_from_params
  from tensorfx.tfutils import train_from_params
  from tensorfx.training._arguments.args import ModelArguments
  from tensorfx.training._builder import ModelBuilder
  from tensorfx.training._callbacks import Callback
  from tensorfx.training._callbacks import EarlyStopping
  from tensorfx.training._callbacks import KerasCallback
  from tensorfx.training._callbacks import RunContext
  from tensorfx.training._cluster.config import Configuration
  from tensorfx.training._cluster.config import TaskSpec
  from tensorfx.training._evaluation.evaluation import EvaluationResults
  from tensorfx.training._evaluation.percentiles import ErrorPercentile
  from tensorfx.training._evaluation.percentiles import error_percentiles
  from tensorfx.training._interfaces import EvaluationInterface
  from tensorfx.training._interfaces import PredictionInterface
  from tensorfx.training._interfaces import TrainingInterface
  from tensorfx.training._objectives.losses import regression_loss
  from tensorfx.training._objectives.tasks import TaskMetrics
  from tensorfx.training._objectives.tasks import task_loss
  from tensorfx.training._objectives.weights import class_weights
  from tensorfx.training._objectives.weights import example_weights
  from tensorfx.training._settings.targets import ValidationTarget
  from tensorfx.training._trainer import ModelTrainer

_EXPORTS = {
  'Callback': 'tensorfx.training._callbacks',
  'Configuration': 'tensorfx.training._cluster.config',
  'EarlyStopping': 'tensorfx.training._callbacks',
  'ErrorPercentile': 'tensorfx.training._evaluation.percentiles',
  'EvaluationResults': 'tensorfx.training._evaluation.evaluation',
  'EvaluationInterface': 'tensorfx.training._interfaces',
  'KerasCallback': 'tensorfx.training._callbacks',
  'ModelArguments': 'tensorfx.training._arguments.args',
  'ModelBuilder': 'tensorfx.training._builder',
  'ModelTrainer': 'tensorfx.training._trainer',
  'PredictionInterface': 'tensorfx.training._interfaces',
  'RunContext': 'tensorfx.training._callbacks',
  'TaskMetrics': 'tensorfx.training._objectives.tasks',
  'TaskSpec': 'tensorfx.training._cluster.config',
  'TrainingInterface': 'tensorfx.training._interfaces',
  'ValidationTarget': 'tensorfx.training._settings.targets',
  'class_weights': 'tensorfx.training._objectives.weights',
  'example_weights': 'tensorfx.training._objectives.weights',
  'error_percentiles': 'tensorfx.training._evaluation.percentiles',
  'regression_loss': 'tensorfx.training._objectives.losses',
  'task_loss': 'tensorfx.training._objectives.tasks',
  # tfutils' interface lives in its own package above this one; its two
  # functions keep the names they were published under here.
  'test_from_params': 'tensorfx.tfutils',
  'train_from_params': 'tensorfx.tfutils',
}

__all__ = [
  'Callback',
  'Configuration',
  'EarlyStopping',
  'ErrorPercentile',
  'EvaluationInterface',
  'EvaluationResults',
  'KerasCallback',
  'ModelArguments',
  'ModelBuilder',
  'ModelTrainer',
  'PredictionInterface',
  'RunContext',
  'TaskMetrics',
  'TaskSpec',
  'TrainingInterface',
  'ValidationTarget',
  'class_weights',
  'example_weights',
  'error_percentiles',
  'regression_loss',
  'task_loss',
  'test_from_params',
  'train_from_params',
]


# Hidden from type checkers, so a misspelt name is an error there.
if not typing.TYPE_CHECKING:
  __getattr__, __dir__ = _lazy.exports(globals(), _EXPORTS)
