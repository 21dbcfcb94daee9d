"""Training: arguments, configuration, model builders and the trainer.

Names are imported on first use: a trainer's `--help` and argument errors
answer without importing TensorFlow.
"""

import importlib

_EXPORTS = {
    'Callback': 'tensorfx.training._callbacks',
    'Configuration': 'tensorfx.training._config',
    'EarlyStopping': 'tensorfx.training._callbacks',
    'EvaluationResults': 'tensorfx.training._evaluation',
    'EvaluationInterface': 'tensorfx.training._interfaces',
    'ModelArguments': 'tensorfx.training._args',
    'ModelBuilder': 'tensorfx.training._builder',
    'ModelTrainer': 'tensorfx.training._trainer',
    'PredictionInterface': 'tensorfx.training._interfaces',
    'RunContext': 'tensorfx.training._callbacks',
    'TaskSpec': 'tensorfx.training._config',
    'TrainingInterface': 'tensorfx.training._interfaces',
    'ValidationTarget': 'tensorfx.training._targets',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
  module = _EXPORTS.get(name)
  if module is None:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = getattr(importlib.import_module(module), name)
  globals()[name] = value
  return value


def __dir__():
  return list(__all__)
