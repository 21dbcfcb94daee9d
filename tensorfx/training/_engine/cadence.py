"""The cadence: how far one call of the training loop runs, what is due after.

The outer loop runs steps in calls of several (one `tf.function` call
each); each call stops at the next event: a log line, a checkpoint by
steps, a validation, the last step, a step a callback asked for, and
after `--steps-per-loop` steps. A checkpoint by time is due at the first
call that ends after its interval.

Without `--steps-per-loop` the steps of a call follow the measured step
time (`StepsPerCall`): the first call runs one step (it traces the loop,
so its time says nothing), the second one step (a first measurement),
and every later call as many as fill `TARGET_CALL_SECONDS`, from the
step time measured over the calls so far, never past the next event. A
call's fixed cost (the `tf.function` call, reading back its loss and step
count, the loop's own Python) is a fraction of a millisecond here, under
0.2% of a 0.5 s call; what a longer call would save is lost in noise,
what it costs is seen: signals (a preemption's SIGTERM), stop requests
and time-based checkpoints are acted on between calls, and a call of
100 slow steps could outlast a preemption's grace period. So a fast step
(1 ms) runs calls of up to the next log line, a 50 ms step calls of 10
steps, a step slower than 0.5 s one step per call.

Parameter servers are different: each call ends by joining the workers,
which idles every worker but the slowest while its last closure runs, and
then again while the next call's closures are dispatched. With calls of
0.5 s, a profile of the benchmark's embedding model on two workers showed
each worker idle about as long as it computed. Their calls fill
`PS_TARGET_CALL_SECONDS` instead, still bounded by the next event.
"""

import time

# How long one call of the training loop should run, in seconds.
TARGET_CALL_SECONDS = 0.5
# The same with parameter servers: ten times as long, so that the join at
# the end of a call costs a few percent of it (still well inside a
# preemption's grace period, and time-based checkpoints are still acted
# on at the first call that ends after their interval).
PS_TARGET_CALL_SECONDS = 5.0


class StepsPerCall:
  """Sizes calls of the training loop from the measured step time.

  Example:
    >>> sizes = StepsPerCall(target_seconds=0.5)
    >>> sizes.next(), sizes.observe(1, 3.0)     # traces: not measured
    (1, None)
    >>> sizes.next(), sizes.observe(1, 0.01)    # 10 ms a step
    (1, None)
    >>> sizes.next()
    50

  Args:
    target_seconds: how long a call should run.
  """

  def __init__(self, target_seconds=TARGET_CALL_SECONDS):
    self.target_seconds = float(target_seconds)
    self._calls = 0
    self._step_seconds = None

  @property
  def step_seconds(self):
    """The step time measured so far (None before the second call)."""
    return self._step_seconds

  def next(self):
    """How many steps the next call should run (before the events' bound)."""
    if self._step_seconds is None:
      return 1
    return max(1, int(self.target_seconds / max(self._step_seconds, 1e-6)))

  def observe(self, steps, seconds):
    """Records that a call ran `steps` steps in `seconds`."""
    self._calls += 1
    if self._calls == 1 or steps <= 0:
      return  # The first call traces and optimizes the loop.
    measured = seconds / steps
    # Smoothed: a shared machine's one slow call does not halve the next.
    self._step_seconds = (
      measured
      if self._step_seconds is None
      else 0.5 * self._step_seconds + 0.5 * measured
    )


class Cadence:
  """When to log, save and validate.

  Example:
    >>> cadence = Cadence(max_steps=1000, log_every=100, checkpoint_secs=60,
    ...                   measured=False)
    >>> cadence.bound(0), cadence.bound(250)
    (100, 50)

  Args:
    max_steps: the step training stops at; None for no limit.
    log_every: steps between log events (`on_step_end`).
    per_call: the most steps of one call (`--steps-per-loop`); None for
      as many as fill `call_seconds` (see `StepsPerCall`), up to
      the next event.
    checkpoint_steps: steps between checkpoints; None for time only.
    checkpoint_secs: seconds between checkpoints.
    eval_steps: steps between validations; None to validate after each
      checkpoint.
    validate: whether this run validates (not when an evaluator task
      does: then checkpoints are also written every `eval_steps`, for it).
    validate_first: whether to validate before the first step (with an
      evaluator task: to write a checkpoint of the first step for it).
    clock: the clock of the time interval (seconds).
    call_seconds: how long a measured call should run (`TARGET_CALL_SECONDS`
      by default; `PS_TARGET_CALL_SECONDS` with parameter servers).
    measured: whether calls without `per_call` are sized by the measured
      step time; if not, they run up to the next event. Replicas of a
      multi-worker cluster must run the same steps per call, and their
      clocks differ: they do not measure.
  """

  def __init__(
    self,
    *,
    max_steps=None,
    log_every=100,
    per_call=None,
    checkpoint_steps=None,
    checkpoint_secs=60.0,
    eval_steps=None,
    validate=True,
    validate_first=False,
    clock=time.monotonic,
    call_seconds=TARGET_CALL_SECONDS,
    measured=True,
  ):
    self.max_steps = max_steps
    self.log_every = max(1, int(log_every))
    self.per_call = max(1, int(per_call or self.log_every))
    self.steps_per_call = (
      StepsPerCall(call_seconds) if per_call is None and measured else None
    )
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
    if self.steps_per_call is not None:
      bounds.append(self.steps_per_call.next())
    if self.max_steps is not None:
      bounds.append(self.max_steps - step)
    bounds += [b - step for b in self._boundaries if b > step]
    for every in (self.checkpoint_steps, self.eval_steps):
      if every:
        bounds.append(every - step % every)
    return max(1, min(bounds))

  def observe(self, steps, seconds):
    """Records that a call ran `steps` steps in `seconds` (sizes the next)."""
    if self.steps_per_call is not None:
      self.steps_per_call.observe(steps, seconds)

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
    return bool(
      not self.validate and self.eval_steps and step % self.eval_steps == 0
    )

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
