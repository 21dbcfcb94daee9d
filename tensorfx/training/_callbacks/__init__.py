"""Training callbacks: the public `Callback` API and the built-in ones.

Each built-in callback is a file of its own: what a run reports
(progress, TensorBoard, MLflow, tuning, bad records), keeps (best
checkpoints, the evaluator's best model) and decides (loss guards,
signals, early stopping, the evaluator's request to stop).
"""

from tensorfx.training._callbacks.bad_records import BadRecordsCallback
from tensorfx.training._callbacks.base import Callback
from tensorfx.training._callbacks.best_model import BestModelExport
from tensorfx.training._callbacks.builtin import builtin
from tensorfx.training._callbacks.callback_list import CallbackList
from tensorfx.training._callbacks.context import RunContext
from tensorfx.training._callbacks.early_stopping import EarlyStopping
from tensorfx.training._callbacks.evaluator_stop import request_stop
from tensorfx.training._callbacks.keras_callbacks import KerasCallback
from tensorfx.training._callbacks.keras_callbacks import is_keras_callback
from tensorfx.training._callbacks.loss_guard import LossGuardCallback

__all__ = [
  'BadRecordsCallback',
  'BestModelExport',
  'Callback',
  'CallbackList',
  'EarlyStopping',
  'KerasCallback',
  'LossGuardCallback',
  'RunContext',
  'builtin',
  'is_keras_callback',
  'request_stop',
]
