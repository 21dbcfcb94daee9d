"""Training: arguments, configuration, model builders and the trainer.

Names are imported on first use: a trainer's `--help` and argument errors
answer without importing TensorFlow.
"""

import importlib
import typing

# Type checkers and IDEs see the names here; at run time they are imported
# on first use by __getattr__ below.
if typing.TYPE_CHECKING:
  from tensorfx.training._args import ModelArguments
  from tensorfx.training._builder import ModelBuilder
  from tensorfx.training._callbacks import Callback
  from tensorfx.training._callbacks import EarlyStopping
  from tensorfx.training._callbacks import KerasCallback
  from tensorfx.training._callbacks import RunContext
  from tensorfx.training._config import Configuration
  from tensorfx.training._config import TaskSpec
  from tensorfx.training._evaluation import EvaluationResults
  from tensorfx.training._interfaces import EvaluationInterface
  from tensorfx.training._interfaces import PredictionInterface
  from tensorfx.training._interfaces import TrainingInterface
  from tensorfx.training._losses import regression_loss
  from tensorfx.training._params import test_from_params
  from tensorfx.training._params import train_from_params
  from tensorfx.training._percentiles import ErrorPercentile
  from tensorfx.training._percentiles import error_percentiles
  from tensorfx.training._targets import ValidationTarget
  from tensorfx.training._tasks import TaskMetrics
  from tensorfx.training._tasks import task_loss
  from tensorfx.training._trainer import ModelTrainer
  from tensorfx.training._weights import class_weights
  from tensorfx.training._weights import example_weights

_EXPORTS = {
  'Callback': 'tensorfx.training._callbacks',
  'Configuration': 'tensorfx.training._config',
  'EarlyStopping': 'tensorfx.training._callbacks',
  'ErrorPercentile': 'tensorfx.training._percentiles',
  'EvaluationResults': 'tensorfx.training._evaluation',
  'EvaluationInterface': 'tensorfx.training._interfaces',
  'KerasCallback': 'tensorfx.training._callbacks',
  'ModelArguments': 'tensorfx.training._args',
  'ModelBuilder': 'tensorfx.training._builder',
  'ModelTrainer': 'tensorfx.training._trainer',
  'PredictionInterface': 'tensorfx.training._interfaces',
  'RunContext': 'tensorfx.training._callbacks',
  'TaskMetrics': 'tensorfx.training._tasks',
  'TaskSpec': 'tensorfx.training._config',
  'TrainingInterface': 'tensorfx.training._interfaces',
  'ValidationTarget': 'tensorfx.training._targets',
  'class_weights': 'tensorfx.training._weights',
  'example_weights': 'tensorfx.training._weights',
  'error_percentiles': 'tensorfx.training._percentiles',
  'regression_loss': 'tensorfx.training._losses',
  'task_loss': 'tensorfx.training._tasks',
  'test_from_params': 'tensorfx.training._params',
  'train_from_params': 'tensorfx.training._params',
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

  def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
      raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
  return list(__all__)
