"""CallbackList: the run's callbacks, called in order; what the loop talks to."""

from typing import Any, Dict, Iterable

from tensorfx.training._callbacks import base
from tensorfx.training._callbacks import keras_callbacks
from tensorfx.training._callbacks.context import RunContext


class CallbackList:
  """Calls each callback's method in order; what the loop talks to.

  Args:
    callbacks: the callbacks, in calling order.
    context: the `RunContext` each callback is given.
  """

  def __init__(self, callbacks: Iterable[Any], context: RunContext) -> None:
    # A standard Keras callback (from build_callbacks()) runs through the
    # adapter.
    self.callbacks = [
      keras_callbacks.KerasCallback(c)
      if keras_callbacks.is_keras_callback(c)
      else c
      for c in callbacks
    ]
    self.context = context
    for callback in self.callbacks:
      if not isinstance(callback, base.Callback):
        raise TypeError(
          'Callbacks must be tensorfx.training.Callback instances. '
          f'Received: {callback!r}'
        )
      callback.set_context(context)

  def find(self, kind: type) -> Any:
    """The first callback of type `kind`, or None."""
    return next((c for c in self.callbacks if isinstance(c, kind)), None)

  def on_train_begin(self, logs: Dict[str, Any]) -> None:
    for callback in self.callbacks:
      callback.on_train_begin(logs)

  def on_step_end(self, step: int, logs: Dict[str, Any]) -> None:
    for callback in self.callbacks:
      callback.on_step_end(step, logs)

  def on_checkpoint(self, step: int, path: str) -> None:
    for callback in self.callbacks:
      callback.on_checkpoint(step, path)

  def on_evaluate_end(self, step: int, results: Any) -> None:
    for callback in self.callbacks:
      callback.on_evaluate_end(step, results)

  def on_train_end(self, logs: Dict[str, Any]) -> None:
    # Every callback ends, even when one fails: files are closed, runs
    # recorded. The first failure is raised after.
    failure = None
    for callback in self.callbacks:
      try:
        callback.on_train_end(logs)
      except Exception as e:
        failure = failure or e
    if failure is not None:
      raise failure
