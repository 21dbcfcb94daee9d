"""Steps per call without --steps-per-loop: sized by the measured step time.

A fast step runs many steps a call (up to the next event), a slow one
few, so each call lasts about `TARGET_CALL_SECONDS` (with parameter
servers `PS_TARGET_CALL_SECONDS`); `--steps-per-loop` and multi-worker
replicas keep fixed sizes.
"""

import time

from tensorfx.training import _callbacks
from tensorfx.training._engine import cadence as _cadence
from tensorfx.training._engine import loop as _loop


def _sizes(step_seconds, calls, **cadence_args):
  """The steps asked of each call when a step takes `step_seconds`."""
  cadence = _cadence.Cadence(
    max_steps=None,
    log_every=1000,
    checkpoint_secs=1e9,
    validate=False,
    **cadence_args,
  )
  sizes, step = [], 0
  for _ in range(calls):
    size = cadence.bound(step)
    sizes.append(size)
    # The first call also traces: it takes seconds whatever its steps.
    seconds = 5.0 if step == 0 else size * step_seconds
    cadence.observe(size, seconds)
    step += size
  return sizes


def test_fast_steps_run_more_steps_per_call_than_slow_ones():
  fast = _sizes(0.002, 5)  # 2 ms a step
  slow = _sizes(0.25, 5)  # 250 ms a step
  # A traced call, a measured one, then calls of about 0.5 s.
  assert fast[:2] == slow[:2] == [1, 1]
  assert fast[2:] == [250] * 3
  assert slow[2:] == [2] * 3
  assert _sizes(3.0, 4) == [1, 1, 1, 1]


def test_parameter_server_calls_last_ten_times_as_long():
  # Each call ends by joining the workers: with calls of 0.5 s, they idled
  # about as long as they trained.
  ps = _sizes(0.05, 4, call_seconds=_cadence.PS_TARGET_CALL_SECONDS)
  assert _sizes(0.05, 4) == [1, 1, 10, 10]
  assert ps == [1, 1, 100, 100]


def test_calls_stop_at_the_next_event():
  cadence = _cadence.Cadence(
    max_steps=1000, log_every=100, checkpoint_secs=1e9, eval_steps=30
  )
  cadence.observe(1, 5.0)
  cadence.observe(1, 1e-5)  # a very fast step: thousands a call
  assert cadence.bound(0) == 30  # the validation at step 30
  assert cadence.bound(90) == 10  # the log line at step 100
  assert cadence.bound(995) == 5  # the last step


def test_steps_per_loop_and_multi_worker_keep_fixed_sizes():
  assert _sizes(0.25, 4, per_call=7) == [7] * 4
  # Replicas in lockstep: up to the next event, measured or not.
  assert _sizes(0.25, 3, measured=False) == [1000] * 3


def test_the_loop_sizes_calls_from_their_real_time():
  """TrainingLoop times each call; slow steps get smaller calls."""

  def run(step_seconds):
    state = {'step': 0}
    asked = []

    def steps(count):
      asked.append(count)
      time.sleep(count * step_seconds)
      state['step'] += count
      return _loop.StepResult(step=state['step'], ran=count, loss=1.0)

    cadence = _cadence.Cadence(
      max_steps=40, log_every=40, checkpoint_secs=1e9, validate=False
    )
    cadence.steps_per_call.target_seconds = 0.2
    callbacks = _callbacks.CallbackList(
      [], _callbacks.RunContext(builder=None, output=None)
    )
    _loop.TrainingLoop(
      steps,
      lambda: state['step'],
      cadence,
      callbacks,
      save=lambda: (state['step'], None),
      evaluate=lambda step: None,
    ).run()
    return asked

  fast = run(0.0)
  slow = run(0.05)  # 4 steps fill a 0.2 s call
  assert fast[:2] == [1, 1] and fast[2] == 38
  assert slow[:2] == [1, 1]
  assert max(slow[2:]) <= 5 and sum(slow) == 40
