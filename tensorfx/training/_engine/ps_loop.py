"""The training loop of a parameter-server cluster's chief.

The chief schedules closures of several steps on the workers through a
`ClusterCoordinator`; a closure lost with its worker runs again on another
(so steps run at least once). Each closure stops, on its worker, at the
first step whose loss is not finite or above `--thres-loss`, and returns
that loss: the guards see every step's loss, not only the last of each
closure.

The workers read the training data where the job is: each worker's input
skips its share of the batches the job has read (a variable on the
servers, restored from the checkpoint), when its iterator is made. So a
resumed job does not read its epochs again from the start, nor does a
worker restarted mid-run.
"""

import math

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.training._engine import strategies as _strategies


def make_loop(
  builder,
  engine,
  train_step,
  last_norm,
  epochs,
  shuffle,
  loss_limit,
  steps_per_closure,
):
  """The chief's loop over per-worker datasets.

  Args:
    builder: the `ModelBuilder` (its `build_input` makes each worker's
      dataset).
    engine: its `EngineState`.
    train_step: the per-replica training step.
    last_norm: `last_norm()` makes the gradient norm of the step traced
      last (see `train_step.make_train_step`): each closure makes and
      returns its last step's, kept in the engine state's
      `run.gradient_norm`.
    epochs: passes over the training data per worker (None: forever).
    shuffle: whether the workers shuffle.
    loss_limit: the largest loss a step may have (inf for none).
    steps_per_closure: the steps of each closure.

  Returns:
    `(loop, per_worker_dataset, read)`: `loop(iterator, num_steps) ->
    (loss, steps_run)`, a Python function; the per-worker dataset to make
    its iterator from; and `read`, the int64 variable of the batches the
    job's steps have read, which each worker's dataset skips its share of
    when its iterator is made. The loss is the first bad loss of any
    closure, else the mean of the closures' last losses. Steps that ran
    twice (a closure lost with its worker after some of its steps, then
    run again) are counted in `engine.run.steps_again` and logged.
  """
  strategy = engine.strategy
  coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
  engine.run.coordinator = coordinator
  global_step = engine.global_step
  batch_size = builder.settings.loop.batch_size
  # Tables made under the strategy's scope get a copy on each worker.
  worker_layer = (
    builder.dataset.transform_output.transform_features_layer()
    if builder.dataset.features is not None
    else None
  )

  workers = _strategies.worker_count(strategy)
  with strategy.scope():
    read = tf.Variable(
      0, dtype=tf.int64, trainable=False, name='input_batches_read'
    )

  def dataset_fn(context=None):
    del context
    engine.run.worker_layer = worker_layer
    try:
      data = engine.call(
        builder, 'build_input', 'train', batch_size, epochs, shuffle
      )
    finally:
      engine.run.worker_layer = None
    # Every worker reads the same input (seeded, in the same order), and
    # the job's steps took turns on them: each has read about its share.
    return data.skip(read.read_value() // workers)

  per_worker = coordinator.create_per_worker_dataset(dataset_fn)

  @tf.function(autograph=False)
  def worker_loop(iterator, num_steps):
    def body(steps, _, __, ___):
      loss = strategy.run(train_step, (next(iterator),))
      return (
        steps + 1,
        loss,
        tf.logical_and(tf.math.is_finite(loss), loss <= loss_limit),
        # Only the last step's norm is returned: only it is computed.
        tf.cond(
          tf.equal(steps + 1, num_steps),
          last_norm,
          lambda: tf.constant(0.0),
        ),
      )

    steps, loss, _, norm = tf.while_loop(
      lambda steps, _, ok, __: tf.logical_and(ok, steps < num_steps),
      body,
      (
        tf.constant(0, tf.int64),
        tf.constant(0.0),
        tf.constant(True),
        tf.constant(0.0),
      ),
    )
    return loss, steps, norm

  def loop(iterator, num_steps):
    start = int(global_step.numpy())
    scheduled = [
      coordinator.schedule(
        worker_loop, args=(iterator, tf.constant(count, tf.int64))
      )
      for count in closure_steps(int(num_steps), steps_per_closure, workers)
    ]
    coordinator.join()
    results = [result.fetch() for result in scheduled]
    ran = int(global_step.numpy()) - start
    _count_steps_again(engine, ran - sum(int(s) for _, s, _ in results))
    losses = [float(loss) for loss, _, _ in results]
    if results:
      engine.run.gradient_norm.value = float(results[-1][2])
    bad = [
      loss for loss in losses if not math.isfinite(loss) or loss > loss_limit
    ]
    if bad:
      loss = bad[0]
    else:
      loss = sum(losses) / len(losses) if losses else 0.0
    return loss, ran

  return loop, per_worker, read


def _count_steps_again(engine, steps):
  """Counts and logs the steps that ran twice in one call of the loop.

  The global step counts every step applied; the closures' results count
  those of the runs that finished. The difference ran in a closure whose
  worker was lost before it returned, and ran again in its new run.
  """
  if steps <= 0:
    return
  engine.run.steps_again += steps
  logger.warning(
    'A worker was lost with a closure in flight: %d of its steps ran again '
    'on another worker (%d in this run)',
    steps,
    engine.run.steps_again,
  )


def closure_steps(num_steps, steps_per_closure, workers):
  """The steps of each closure of a call: even, in rounds of the workers.

  A call ends by joining the workers, so every worker should finish at
  about the same time: the steps are split into a multiple of `workers`
  closures of at most `steps_per_closure` steps, as even as they can be
  (50 steps, 10 a closure, 2 workers: six closures of 9, 9, 8, 8, 8, 8,
  not five of 10, of which one worker runs three while the other waits).

  Example:
    >>> closure_steps(50, 10, workers=2)
    [9, 9, 8, 8, 8, 8]
    >>> closure_steps(3, 10, workers=2)
    [2, 1]

  Args:
    num_steps: the steps of the call (>= 0).
    steps_per_closure: the most steps of one closure (`--steps-per-closure`).
    workers: the cluster's workers (>= 1).

  Returns:
    The closures' step counts (each >= 1), summing to `num_steps`.
  """
  if num_steps <= 0:
    return []
  closures = -(-num_steps // steps_per_closure)
  closures = min(num_steps, -(-closures // workers) * workers)
  size, extra = divmod(num_steps, closures)
  return [size + 1] * extra + [size] * (closures - extra)
