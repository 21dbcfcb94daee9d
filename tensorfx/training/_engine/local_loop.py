"""The training loop of one device or of synchronous (mirrored) replicas.

One `tf.function` call runs up to `num_steps` training steps and stops
early, on the device, at the first step whose loss is not finite or above
`--thres-loss`, or when the data ends: the outer loop reads back one loss
per call, not one per step.
"""

import math

import tensorflow as tf


def make_loop(strategy, run_step, loss_limit, one_step_per_call=False):
  """The loop: `loop(iterator, num_steps) -> (loss, steps_run)`.

  Args:
    strategy: the distribution strategy (the default one on one device).
    run_step: `run_step(batch) -> per-replica loss`, in cross-replica
      context.
    loss_limit: the largest loss a step may have before the loop stops
      (inf for none).
    one_step_per_call: run each step in a call of its own (a Python loop
      around the `tf.function`): replicas whose steps exchange parts of
      varying size (embedding tables' keys and gradient slices; a
      collective keeps its first shape within a call).

  Returns:
    The loop `tf.function`. Its loss is the last step's (the bad one, when
    it stopped on one); it runs fewer steps than asked when the data ends
    or a loss is bad.
  """

  @tf.function(autograph=False)
  def loop(iterator, num_steps):
    # A tf.while_loop whose body is the step: nothing for autograph to
    # convert, and the step is not a branch of a `tf.cond` (as "fetch;
    # if none: break; step" makes it) -- that halves the tracing and
    # the first call's graph optimization, seconds of every job's
    # start. The next batch is fetched only when another step is to
    # run, so no batch is lost between calls.
    def body(steps, loss, batch, _):
      per_replica = run_step(batch.get_value())
      loss = strategy.reduce(
        tf.distribute.ReduceOp.MEAN, per_replica, axis=None
      )
      steps += 1
      go = tf.logical_and(
        tf.logical_and(tf.math.is_finite(loss), loss <= loss_limit),
        steps < num_steps,
      )
      batch = tf.cond(go, iterator.get_next_as_optional, lambda: batch)
      return steps, loss, batch, tf.logical_and(go, batch.has_value())

    batch = iterator.get_next_as_optional()
    steps, loss, _, _ = tf.while_loop(
      lambda *state: state[-1],
      body,
      (tf.constant(0, tf.int64), tf.constant(0.0), batch, batch.has_value()),
    )
    return loss, steps

  if not one_step_per_call:
    return loop

  def stepwise(iterator, num_steps):
    loss, steps = tf.constant(0.0), 0
    one = tf.constant(1, tf.int64)
    for _ in range(int(num_steps)):
      loss, ran = loop(iterator, one)
      if not int(ran):
        break
      steps += 1
      value = float(loss)
      if not (math.isfinite(value) and value <= loss_limit):
        break
    return loss, tf.constant(steps, tf.int64)

  return stepwise
