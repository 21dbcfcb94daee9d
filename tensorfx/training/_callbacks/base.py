"""Callback: behaviour added to training without touching the loop."""

from typing import Any, Dict, Optional

from tensorfx.training._callbacks.context import RunContext


class Callback:
  """Base class of training callbacks; override the methods you need.

  The outer training loop calls every callback's methods, in this order
  over a run:

  1. `on_train_begin(logs)`: once, after the model is built and restored
     (or initialized), before the first step;
  2. then, as training goes, in the order the events happen at a step:
     `on_step_end(step, logs)` at each log interval
     (`--log-interval-steps`), at the last step, and when a step's loss is
     not finite or above `--thres-loss`; `on_checkpoint(step, path)` after
     each checkpoint is written; `on_evaluate_end(step, results)` after
     each validation;
  3. `on_train_end(logs)`: once, however the run ends (completed, stopped
     by a callback or a signal, or failed), after the final checkpoint
     and validation and before the model is exported.

  At each event the built-in callbacks run first (the loss guards,
  signals, the model summary, progress, TensorBoard, its hyperparameters,
  the profiler, best checkpoints, MLflow, hypertune, bad-record counts,
  early stopping), then those given to
  `ModelTrainer(callbacks=...)`, then those `ModelBuilder.build_callbacks()`
  returns. Every method runs eagerly, on the host, in the process that
  trains: the chief, and each worker of a multi-worker cluster (where
  `self.context.chief` is False). The `evaluator` task and `tensorfx
  evaluate` call `on_evaluate_end` (and `on_train_begin`/`on_train_end`)
  for each evaluation they make. An exception raised by a method stops
  the run.

  A callback asks the loop to stop with `self.context.stop(reason)`; the
  loop stops after the steps in flight, saves a checkpoint, validates and
  exports as at a normal end.

  Example:
    >>> class StopAtLoss(tensorfx.training.Callback):
    ...   def __init__(self, target):
    ...     super().__init__()
    ...     self.target = target
    ...   def on_step_end(self, step, logs):
    ...     if logs['loss'] < self.target:
    ...       self.context.stop(f'loss {logs["loss"]:.3g} < {self.target}')
    >>> ModelTrainer(callbacks=[StopAtLoss(0.05)]).train(builder, output)
  """

  def __init__(self) -> None:
    self._context: Optional[RunContext] = None

  @property
  def context(self) -> RunContext:
    """The `RunContext` of the run this callback is part of."""
    if self._context is None:
      raise RuntimeError(
        "A callback's context is set by the trainer before "
        'on_train_begin; this callback is not part of a run yet.'
      )
    return self._context

  def set_context(self, context: RunContext) -> None:
    """Called by the trainer before `on_train_begin`."""
    self._context = context

  def on_train_begin(self, logs: Dict[str, Any]) -> None:
    """Training is about to start.

    Args:
      logs: `step` (the global step training starts from), `max_steps`
        (None when unbounded), `batch_size` (examples per step).
    """

  def on_step_end(self, step: int, logs: Dict[str, Any]) -> None:
    """Steps up to `step` have run; at log intervals, read on the host.

    Args:
      step: the global step.
      logs: `loss` (the last step's loss, or the bad one that stopped the
        loop), `examples_per_sec` and `steps_per_sec` (since the previous
        call), `learning_rate` (None when it cannot be read),
        `gradient_norm` (the global norm of the last step's gradient,
        before clipping; None when the step does not report it).
    """

  def on_checkpoint(self, step: int, path: str) -> None:
    """A checkpoint of `step` was written to `path` (a prefix)."""

  def on_evaluate_end(self, step: int, results: Any) -> None:
    """The validation targets were evaluated at `step`.

    Args:
      step: the global step of the model evaluated.
      results: an `EvaluationResults`: a mapping from target name to its
        metrics (name to value), the default target (`eval`) first, with
        `examples`, `seconds` and `checkpoint` besides.
    """

  def on_train_end(self, logs: Dict[str, Any]) -> None:
    """The run has ended.

    Args:
      logs: `status` ('completed', 'stopped', 'interrupted' or 'failed'),
        `step`, `reason` (why it stopped early, or None), `error` (the
        failure, or None), `metrics` (the first target's last results),
        `model` (where the model is exported; None when it is not).
    """
