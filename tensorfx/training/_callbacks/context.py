"""RunContext: what a callback may read of a run, and ask of it."""

import dataclasses
from typing import Any, Callable, Mapping, Optional


@dataclasses.dataclass
class RunContext:
  """The run a callback is part of (`Callback.context`).

  Attributes:
    builder: the `ModelBuilder` (its variables hold the model now).
    output: the job's output directory.
    role: 'train' (a training process), 'evaluator' (the evaluator task,
      following the chief's checkpoints) or 'evaluate' (`tensorfx
      evaluate`, one checkpoint).
    chief: whether this process writes the job's outputs; False on the
      other workers of a multi-worker cluster, which step with the chief
      and write to scratch directories.
    paths: the job's directories and files: `checkpoints`, `model`,
      `summaries`, `analysis`, `job` (job.yaml).
    checkpoints: the `Checkpoints` of the run (None where none are
      written).
    summaries: the TensorBoard `Summaries` writer of the run.
    training: the `TrainingInterface` (None outside training).
    prediction: the prediction interface, built on first use.
    training_graph: a callable returning the traced training loop's
      `tf.Graph` (None outside training).
    engine: the engine's state of the run (its strategy, optimizer and
      settings), for tensorfx's own callbacks; None outside a run.
  """

  builder: Any
  output: str
  role: str = 'train'
  chief: bool = True
  paths: Mapping[str, str] = dataclasses.field(default_factory=dict)
  checkpoints: Any = None
  summaries: Any = None
  training: Any = None
  prediction: Any = None
  training_graph: Optional[Callable[[], Any]] = None
  engine: Any = None
  # How the run saves a checkpoint and tells the callbacks (set by it).
  save: Optional[Callable[[], Optional[str]]] = None
  # How the run calls back between calls of its steps (set by it).
  step_hook: Optional[Callable[..., None]] = None
  stop_reason: Optional[str] = None
  exit_code: Optional[int] = None

  @property
  def settings(self) -> Any:
    """The job's typed settings (`builder.settings`)."""
    return self.builder.settings

  @property
  def global_step(self) -> int:
    """The global step now, read from its variable."""
    return int(self.builder.global_step.numpy())

  @property
  def stop_requested(self) -> bool:
    """Whether a callback asked the run to stop."""
    return self.stop_reason is not None

  def stop(self, reason: Any, exit_code: Optional[int] = None) -> None:
    """Asks the loop to stop after the steps in flight.

    The first request wins. The run then saves a checkpoint, validates and
    exports as at a normal end (its status is 'stopped'), unless
    `exit_code` is given: then it saves and leaves the process with that
    code (what a preemption signal does: 143).

    Args:
      reason: why, for the log and `on_train_end`'s logs.
      exit_code: the process exit code, or None to end normally.
    """
    if self.stop_reason is None:
      self.stop_reason = str(reason)
      self.exit_code = exit_code

  def at_step(
    self, step: int, fn: Callable[[int], Any], when: str = 'after'
  ) -> bool:
    """Asks the loop to call `fn(step)` when the global step is `step`.

    The training loop runs steps in calls of several (one `tf.function`
    call each); it ends a call at `step` and calls `fn` right after it
    (`when='after'`, before the log line, checkpoint and validation due at
    that step) or right before the next call (`when='before'`, so that
    only training steps follow, e.g. to start a profile). A 'before' hook
    whose step is already behind when training starts runs before the
    first call. Every process that trains must ask for the same steps
    (replicas of a multi-worker cluster split their calls alike). Call it
    in `on_train_begin`.

    Example:
      >>> def on_train_begin(self, logs):
      ...   self.context.at_step(100, lambda step: print('at', step))

    Returns:
      Whether the hook was set: False where nothing trains (the
      evaluator, `tensorfx evaluate`).
    """
    if self.step_hook is None:
      return False
    self.step_hook(step, fn, when)
    return True

  def save_checkpoint(self) -> Optional[str]:
    """Saves a checkpoint now (callbacks hear of it); returns its path."""
    if self.save is None:
      return None
    return self.save()

  def restore_latest(self) -> Any:
    """Restores the latest checkpoint into the model; returns its path."""
    if self.checkpoints is None:
      return None
    return self.checkpoints.restore_latest()
