"""The cadence: how far one call of the training loop runs, what is due after.

The outer loop runs steps in calls of several (one `tf.function` call
each); each call stops at the next event: a log line, a checkpoint by
steps, a validation, the last step, a step a callback asked for (or
after `--steps-per-loop`). A checkpoint by time is due at the first call
that ends after its interval.
"""

import time


class Cadence:
  """When to log, save and validate.

  Example:
    >>> cadence = Cadence(max_steps=1000, log_every=100, checkpoint_secs=60)
    >>> cadence.bound(0), cadence.bound(250)
    (100, 50)

  Args:
    max_steps: the step training stops at; None for no limit.
    log_every: steps between log events (`on_step_end`).
    per_call: the most steps of one call (`--steps-per-loop`); None for
      up to the next event.
    checkpoint_steps: steps between checkpoints; None for time only.
    checkpoint_secs: seconds between checkpoints.
    eval_steps: steps between validations; None to validate after each
      checkpoint.
    validate: whether this run validates (not when an evaluator task
      does: then checkpoints are also written every `eval_steps`, for it).
    validate_first: whether to validate before the first step (with an
      evaluator task: to write a checkpoint of the first step for it).
    clock: the clock of the time interval (seconds).
  """

  def __init__(self, *, max_steps=None, log_every=100, per_call=None,
               checkpoint_steps=None, checkpoint_secs=60.0, eval_steps=None,
               validate=True, validate_first=False, clock=time.monotonic):
    self.max_steps = max_steps
    self.log_every = max(1, int(log_every))
    self.per_call = max(1, int(per_call or self.log_every))
    self.checkpoint_steps = checkpoint_steps
    self.checkpoint_secs = float(checkpoint_secs)
    self.eval_steps = eval_steps
    self.validate = validate
    self.validate_first = validate_first
    self._clock = clock
    self._last_save = clock()
    self._boundaries = set()

  def finished(self, step):
    """Whether `step` is the last (`--max-steps` reached)."""
    return self.max_steps is not None and step >= self.max_steps

  def split_at(self, step):
    """Makes a call end at global step `step` (e.g. to start a profile)."""
    self._boundaries.add(int(step))

  def bound(self, step):
    """How many steps the call starting at `step` may run."""
    bounds = [self.per_call, self.log_every - step % self.log_every]
    if self.max_steps is not None:
      bounds.append(self.max_steps - step)
    bounds += [b - step for b in self._boundaries if b > step]
    for every in (self.checkpoint_steps, self.eval_steps):
      if every:
        bounds.append(every - step % every)
    return max(1, min(bounds))

  def log_due(self, step):
    return step % self.log_every == 0

  def checkpoint_due(self, step):
    """Whether a checkpoint is due at `step` (by steps or time)."""
    if self._clock() - self._last_save >= self.checkpoint_secs:
      return True
    if self.checkpoint_steps and step % self.checkpoint_steps == 0:
      return True
    # An evaluator task evaluates checkpoints: it needs one at each
    # validation step.
    return bool(not self.validate and self.eval_steps and
                step % self.eval_steps == 0)

  def saved(self):
    """Starts the time interval to the next checkpoint afresh."""
    self._last_save = self._clock()

  def validation_due(self, step, saved):
    """Whether to validate at `step`; `saved`: a checkpoint was just made."""
    if not self.validate:
      return False
    if self.eval_steps:
      return step % self.eval_steps == 0
    return saved
