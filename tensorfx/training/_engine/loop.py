"""The outer training loop: a step function, a cadence, callbacks.

orbit's Controller, Keras' `fit` loop and Lightning's fit loop do the same
three things, and nothing else lives here: run training steps in calls the
cadence sizes, save and validate when the cadence says, and tell the
callbacks. Everything a run reports or decides besides (progress,
TensorBoard, MLflow, tuning, guards, best checkpoints, early stopping,
signals) is a callback.
"""

import contextlib
import dataclasses
import time
from typing import Any, Callable, Optional

from tensorfx._errors import TrainingError
from tensorfx._logging import logger
from tensorfx.training._engine import guards as _guards


@dataclasses.dataclass(frozen=True)
class StepResult:
  """What one call of the step function did.

  Attributes:
    step: the global step after the call.
    ran: the steps the call ran (fewer than asked: the data ended, or a
      loss was bad).
    loss: the loss it stopped on (the last step's, or the bad one); None
      when no step ran.
    bad_loss: whether the call stopped on a non-finite loss or one above
      `--thres-loss`.
  """

  step: int
  ran: int
  loss: Optional[float]
  bad_loss: bool = False


@dataclasses.dataclass(frozen=True)
class Outcome:
  """How the loop ended: 'completed' or 'stopped', at `step`."""

  status: str
  step: int
  reason: Optional[str] = None


class TrainingLoop:
  """Runs training steps until the cadence or a callback says stop.

  Args:
    steps: `steps(num_steps) -> StepResult`: runs up to `num_steps`
      training steps.
    read_step: returns the global step now.
    cadence: the `Cadence`.
    callbacks: the `CallbackList` (its context receives stop requests).
    save: `save() -> (step, path)`: writes a checkpoint (or returns the
      one already written at this step).
    evaluate: `evaluate(step) -> EvaluationResults or None`.
    agree: `agree(flag) -> bool`: true when any replica says so (the
      multi-worker vote); the identity elsewhere.
    batch_size: examples per step, for examples/s.
    learning_rate: returns the learning rate now (or None).
    gradient_norm: returns the last step's global gradient norm (or None).
    why_empty: says why the training data yielded no batch, when something
      can (the records filter matched none); None otherwise.
  """

  def __init__(
    self,
    steps,
    read_step,
    cadence,
    callbacks,
    *,
    save,
    evaluate,
    agree=bool,
    batch_size=1,
    learning_rate: Callable[[], Optional[float]] = lambda: None,
    gradient_norm: Callable[[], Optional[float]] = lambda: None,
    why_empty: Callable[[], Optional[str]] = lambda: None,
  ):
    self._steps = steps
    self._read_step = read_step
    self.cadence = cadence
    self.callbacks = callbacks
    self.context = callbacks.context
    self._save = save
    self._evaluate = evaluate
    self._agree = agree
    self._batch_size = batch_size
    self._learning_rate = learning_rate
    self._gradient_norm = gradient_norm
    self._why_empty = why_empty
    self._last_checkpoint = None
    self._last_evaluation = None
    self._hooks: dict[str, list[Any]] = {'before': [], 'after': []}

  def at_step(self, step, fn, when='after'):
    """Calls `fn(step)` between two calls of the steps, at global step `step`.

    A call of the step function ends at `step`; `fn` runs right after it
    (`when='after'`: before the log, checkpoint and validation due at
    `step`) or right before the next call (`when='before'`: after them,
    so only training steps follow). A hook whose step is already behind
    when training starts runs at the first call (before or after it); one
    whose step is never reached (the data ended, the run stopped) does not
    run.
    """
    if when not in self._hooks:
      raise ValueError(
        f"when must be 'before' or 'after'. Received: when={when!r}"
      )
    self.cadence.split_at(step)
    self._hooks[when].append((int(step), fn))

  def _run_hooks(self, when, step):
    due = [(s, fn) for s, fn in self._hooks[when] if s <= step]
    self._hooks[when] = [(s, fn) for s, fn in self._hooks[when] if s > step]
    for hook_step, fn in due:
      fn(hook_step)

  def run(self):
    """Trains; ends with a checkpoint and a validation of the last step.

    Returns:
      The `Outcome`.
    """
    step = self._read_step()
    cadence = self.cadence
    self.callbacks.on_train_begin(
      {
        'step': step,
        'max_steps': cadence.max_steps,
        'batch_size': self._batch_size,
      }
    )
    if cadence.finished(step):
      logger.info(
        'Already trained to step %d (--max-steps %d)', step, cadence.max_steps
      )
    else:
      if cadence.validate_first and cadence.validate:
        self.evaluate(step)
      elif cadence.validate_first:
        # For the evaluator task, which evaluates checkpoints.
        self.save_checkpoint()
      self._train(step)
    step = self._read_step()
    self.save_checkpoint()
    stopped = self.context.stop_reason
    if self.context.exit_code is None and cadence.validate:
      # Not on preemption: the grace period is for the checkpoint.
      self.evaluate(step)
    return Outcome('stopped' if stopped else 'completed', step, stopped)

  def save_checkpoint(self):
    """Saves a checkpoint; callbacks hear of a new one. Returns its path."""
    step, path = self._save()
    self.cadence.saved()
    if path and step != self._last_checkpoint:
      self._last_checkpoint = step
      self.callbacks.on_checkpoint(step, path)
    return path

  def evaluate(self, step):
    """Validates at `step` (once per step); callbacks hear the results."""
    if step == self._last_evaluation:
      return
    self._last_evaluation = step
    results = self._evaluate(step)
    if results is not None:
      self.callbacks.on_evaluate_end(step, results)

  def _train(self, step):
    cadence, context = self.cadence, self.context
    window = _Window(self._batch_size)
    trained = False
    while True:
      # Replicas of a multi-worker cluster must take the same decisions.
      if self._agree(context.stop_requested):
        if not context.stop_requested:
          context.stop('another worker of the cluster stopped', exit_code=143)
        logger.info('Stopping at step %d: %s', step, context.stop_reason)
        return
      self._run_hooks('before', step)
      bound = cadence.bound(step)
      previous = step
      with window.timing():
        result = self._steps(bound)
      cadence.observe(result.ran, window.last_call_seconds)
      step = result.step
      self._run_hooks('after', step)
      _guards.check_steps(previous, step, result.ran)
      window.count(step - previous)
      if result.bad_loss:
        # The guards raise, or restore the last checkpoint and go on.
        self.callbacks.on_step_end(step, window.logs(result.loss))
        step = self._read_step()
        if step == result.step:
          raise TrainingError(
            f'The training loss is {result.loss} at step {step}; no guard '
            'handled it.'
          )
        window = _Window(self._batch_size)
        continue
      exhausted = result.ran < bound
      if exhausted and not trained and not result.ran:
        # A model that never trained must not be exported as trained.
        why = self._why_empty()
        raise TrainingError(
          f'The training data ended before the first training step (at '
          f'step {step}): it yielded no batch. '
          + (
            why
            or 'Are the --data-train files empty, shorter than one batch, '
            'or were all their records skipped as bad?'
          )
        )
      trained = trained or result.ran > 0
      done = exhausted or cadence.finished(step)
      if result.ran and (cadence.log_due(step) or done):
        logs = window.logs(result.loss)
        logs['learning_rate'] = self._learning_rate()
        logs['gradient_norm'] = self._gradient_norm()
        self.callbacks.on_step_end(step, logs)
      if done:
        if exhausted:
          logger.info('The training data ended at step %d', step)
        return
      saved = False
      if self._agree(cadence.checkpoint_due(step)):
        self.save_checkpoint()
        saved = True
      if cadence.validation_due(step, saved):
        self.evaluate(step)


class _Window:
  """Steps run, and seconds spent running them, since the last report.

  Only the step calls are timed: examples/s measure training, not the
  callbacks, checkpoints and validations between calls.
  """

  def __init__(self, batch_size):
    self._batch_size = batch_size
    self._seconds = 0.0
    self._steps = 0
    self.last_call_seconds = 0.0

  @contextlib.contextmanager
  def timing(self):
    start = time.monotonic()
    yield
    self.last_call_seconds = time.monotonic() - start
    self._seconds += self.last_call_seconds

  def count(self, steps):
    self._steps += steps

  def logs(self, loss):
    """The logs of a report; the window starts afresh."""
    seconds = max(self._seconds, 1e-9)
    logs = {
      'loss': loss,
      'examples_per_sec': self._steps * self._batch_size / seconds,
      'steps_per_sec': self._steps / seconds,
    }
    self._seconds, self._steps = 0.0, 0
    return logs
