"""The training step: one batch's gradients, applied (or accumulated).

Traced inside the training loop's `tf.function`, once, and run on each
replica (`strategy.run`). It calls the hooks `build_inference` and
`build_training` under a gradient tape.
"""

import inspect

import tensorflow as tf

from tensorfx import _autograph
from tensorfx._errors import ConfigurationError
from tensorfx.training import _optimizers
from tensorfx.training._engine import precision
from tensorfx.training._engine import strategies
from tensorfx.training._engine import xla


def make_train_step(
  builder, engine, dense, groups, accumulator, loss_scale=None, compiled=None
):
  """The per-replica step: `train_step(inputs) -> loss`.

  Each step also writes the global norm of the gradient it applies to
  the engine state's `run.gradient_norm` (a variable made here, kept out of
  checkpoints and exports), which the trainer reads at log intervals
  only: no host synchronisation per step. Under parameter servers a
  variable would live on a server, and writing it would add remote
  operations to every step's path: there the step leaves its norm to its
  closure (`last_norm`), which returns its last step's to the chief, and
  `run.gradient_norm` holds what the chief fetched last (each worker's
  step applies its own gradient). Under mirrored replicas the replicas'
  gradients are summed first (the sum the optimizer applies, before
  clipping), so the norm is that of the global batch's gradient. Two
  cases report the norm of a replica's own minibatch gradient instead:
  `--accumulation-steps` (the step does not apply), and mirrored replicas
  with an optimizer that cannot take summed gradients (`apply_gradients`
  without `skip_gradients_aggregation`).

  Args:
    builder: the `ModelBuilder`.
    engine: its `EngineState`.
    dense: the variables the step's own optimizer updates.
    groups: `[(table_optimizer, variables), ...]` of embedding tables.
    accumulator: the `GradientAccumulator`, or None to apply each step.
    loss_scale: the `LossScaleOptimizer` of `--precision mixed_float16`
      (it applies the dense gradients), or None.
    compiled: `compiled(fn) -> xla.Step`: how the gradients' computation
      (and on one device the dense update) is compiled (`--jit-compile`);
      None for never.

  Returns:
    `(train_step, variables, gradients_step, last_norm)`: the step; the
    variables it trains; the `xla.Step` computing `(loss, gradients)` (the
    dense ones None once applied); under parameter servers, `last_norm()`,
    which makes the norm of the step traced last (for the closure tracing
    it to make and return on its last step only), else None. Only the
    hooks the step calls are converted by autograph (Python `if`/`for`
    over tensors work in them, as in a `tf.function`); the step itself and
    the loops around it are plain TensorFlow, traced without autograph:
    converting library code would only cost start-up time (about half a
    second of every job's).
  """
  strategy = engine.strategy
  replicas = strategy.num_replicas_in_sync
  replicated = strategies.replicated(strategy)
  # Tables' gradients summed as slices, one replica a process; replicas
  # of one process keep the dense sum (see `tensorfx.embeddings._replicas`).
  from tensorfx.embeddings import internal as _tables

  dense_table_gradients = not _tables.replicas.sparse_sums(strategy)
  global_step = engine.global_step
  # Dense variables first, then each table optimizer's, in that order.
  variables = tuple(dense) + tuple(v for _, vs in groups for v in vs)
  traced_norms = {}
  if strategies.parameter_servers(strategy):
    gradient_norm = None
    engine.run.gradient_norm = FetchedNorm()
  else:
    # Made under the strategy's scope (the caller's): replicas hold the
    # same value, the first one's is kept.
    gradient_norm = tf.Variable(
      0.0,
      trainable=False,
      name='gradient_norm',
      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )
    engine.run.gradient_norm = gradient_norm

  def record_norm(norm):
    """Records `norm()`, the step's gradient norm (a function making it).

    Under parameter servers it is kept unmade: the closure makes it for
    its last step only (`last_norm`), off the other steps' path.
    """
    if gradient_norm is None:
      traced_norms['last'] = norm
    else:
      gradient_norm.assign(norm())

  def recorded_norm():
    return traced_norms['last']() if gradient_norm is None else gradient_norm

  # Python-only control flow, calling optimizers (which autograph leaves
  # alone, as Keras' own training step does): converting it would only
  # cost start-up time.
  @tf.autograph.experimental.do_not_convert
  def apply_gradients(step_optimizer, gradients):
    # None: the dense update ran in the compiled step (`fused`).
    parts = [] if step_optimizer is None else [(step_optimizer, 0, len(dense))]
    start = len(dense)
    for table_optimizer, table_variables in groups:
      parts.append((table_optimizer, start, start + len(table_variables)))
      start += len(table_variables)
    gradients = list(gradients)
    # Each optimizer sums the replicas' gradients itself; summed here
    # instead (by the same optimizer method, so no more communication),
    # the norm is the global batch's. Tables' gradients (rows looked up,
    # `tf.IndexedSlices`) are summed as slices (`reduce_slices`).
    presummed = []
    for optimizer, begin, end in parts:
      presum = replicated and _sums_apart(optimizer)
      presummed.append(presum)
      if replicated:
        # Only tables' slices travel as slices: the loop runs one step a
        # call for them; a Keras Embedding's slices (the dense part) are
        # summed densely, their size changing within a multi-step call.
        gradients[begin:end] = _reduce_replicas(
          optimizer,
          gradients[begin:end],
          variables[begin:end],
          presum,
          sparse=not dense_table_gradients and begin >= len(dense),
        )
    dense_norm = None if step_optimizer is not None else recorded_norm

    def norm():
      # A replica's own gradient is of its loss / replicas.
      norms = [
        _global_norm(gradients[begin:end])
        * (replicas if replicated and not presum else 1)
        for (_, begin, end), presum in zip(parts, presummed)
      ]
      total = (
        tf.sqrt(tf.add_n([tf.square(n) for n in norms]))
        if norms
        else tf.constant(0.0)
      )
      if dense_norm is not None:
        # The dense update's step recorded the dense gradients' norm.
        total = tf.sqrt(tf.square(total) + tf.square(dense_norm()))
      return total

    if dense_norm is not None and gradient_norm is None:
      dense_norm = traced_norms['last']  # The function, not its value.
    record_norm(norm)
    for (optimizer, begin, end), presum in zip(parts, presummed):
      kwargs = {'skip_gradients_aggregation': True} if presum else {}
      optimizer.apply_gradients(
        zip(gradients[begin:end], variables[begin:end]), **kwargs
      )

  # The optimizer build_training returns, seen when it is traced (the
  # gradients' computation may be compiled: only tensors come out).
  traced = {}

  build_inference = _autograph.hook(builder.build_inference)
  build_training = _autograph.hook(builder.build_training)

  def gradients_of(inputs):
    with tf.GradientTape() as tape:
      inferences = precision.to_float32(build_inference(inputs, training=True))
      loss, traced['optimizer'] = build_training(
        global_step, inputs, inferences
      )
      loss = tf.cast(loss, tf.float32)
      # Each replica's mean loss counts 1/replicas of the global mean:
      # the optimizer sums the replicas' gradients.
      scaled = loss / replicas
      if loss_scale is not None:
        scaled = loss_scale.get_scaled_loss(scaled)
    gradients = tape.gradient(scaled, variables)
    if loss_scale is not None:
      gradients = loss_scale.get_unscaled_gradients(gradients)
    return loss, gradients

  def optimizer_of_step():
    # The loss scale optimizer skips the dense update of a step that
    # overflowed (and lowers the scale).
    return loss_scale if loss_scale is not None else traced['optimizer']

  # Compiled with XLA on one device, the dense update joins the forward
  # and backward pass in one cluster (XLA fuses the optimizer's many small
  # per-variable ops: most of what it saves on a CPU). Replicas' updates
  # sum gradients across devices, and tables' are sparse: those run
  # after the cluster.
  fused = compiled is not None and not replicated and accumulator is None

  @tf.autograph.experimental.do_not_convert
  def apply_dense(gradients):
    optimizer_of_step().apply_gradients(zip(gradients[: len(dense)], dense))
    return [None] * len(dense) + list(gradients[len(dense) :])

  def update_of(inputs):
    loss, gradients = gradients_of(inputs)
    record_norm(lambda: _global_norm(gradients[: len(dense)]))
    return loss, apply_dense(gradients)

  gradients_step = (compiled or _plain)(update_of if fused else gradients_of)

  def train_step(inputs):
    loss, gradients = gradients_step(inputs)
    if loss_scale is not None:
      # The tables' optimizers must skip the steps the loss scale skips.
      gradients = list(gradients[: len(dense)]) + precision.zero_if_not_finite(
        gradients[len(dense) :]
      )
    if accumulator is None:
      # The optimizer sums the replicas' gradients, then clips
      # (--clip-norm, --clip-value) and applies them; embedding tables'
      # optimizers update only the rows the step looked up.
      apply_gradients(None if fused else optimizer_of_step(), gradients)
    else:
      # Applied every --accumulation-steps steps by the step runner.
      accumulator.add(gradients)
      record_norm(lambda: _global_norm(gradients) * replicas)
    global_step.assign_add(1)
    return loss

  last_norm = recorded_norm if gradient_norm is None else None
  return train_step, variables, gradients_step, last_norm


class FetchedNorm:
  """Under parameter servers: the gradient norm the chief last fetched.

  The closures return their last step's norm; the chief's loop keeps the
  last scheduled closure's here, read like the variable it stands for.
  """

  def __init__(self):
    self.value = 0.0

  def numpy(self):
    return self.value


def _plain(fn):
  return xla.Step(fn, 'training step', enabled=False)


def _reduce_replicas(optimizer, gradients, variables, presum, sparse=True):
  """One optimizer's gradients, made ready for it under mirrored replicas.

  `presum`: the optimizer applies them without summing them again
  (`skip_gradients_aggregation`): they are summed across replicas here,
  tables' `tf.IndexedSlices` as slices (only the rows some replica looked
  up travel). Otherwise the optimizer sums them itself, and slices are
  made dense first: TensorFlow's all-reduce of slices fails inside the
  training loop on a multi-worker cluster; the tensorfx sparse optimizers
  still update only the rows whose gradient is not zero. `sparse=False`
  sums slices densely in both cases (replicas of one process, and the
  benchmarks' baseline).
  """
  if not presum or not sparse:
    gradients = [
      tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
      for g in gradients
    ]
  if not presum:
    return gradients
  from tensorfx.embeddings import internal as _tables

  context = tf.distribute.get_replica_context()
  slices = [
    i for i, g in enumerate(gradients) if isinstance(g, tf.IndexedSlices)
  ]
  others = [
    i for i, g in enumerate(gradients) if g is not None and i not in slices
  ]
  summed = list(gradients)
  for i in slices:
    summed[i] = _tables.replicas.reduce_slices(context, gradients[i])
  if others:
    pairs = optimizer.aggregate_gradients(
      [(gradients[i], variables[i]) for i in others]
    )
    for i, (g, _) in zip(others, pairs):
      summed[i] = g
  return summed


def _global_norm(gradients):
  """The global norm of the gradients that are not None (0 for none)."""
  present = [g for g in gradients if g is not None]
  return tf.linalg.global_norm(present) if present else tf.constant(0.0)


def _sums_apart(optimizer):
  """Whether `optimizer` can sum replicas' gradients apart from applying."""
  if not hasattr(optimizer, 'aggregate_gradients'):
    return False
  try:
    parameters = inspect.signature(optimizer.apply_gradients).parameters
  except (TypeError, ValueError):
    return False
  return 'skip_gradients_aggregation' in parameters


def build_accumulator(engine, variables, steps, tables):
  """The `GradientAccumulator` of `--accumulation-steps`, or None.

  Kept in the engine's state (checkpointed with the model, so a resumed
  job continues its partial accumulation).

  Raises:
    ConfigurationError: accumulation under parameter servers or with
      embedding tables.
  """
  if steps <= 1:
    return None
  if tables:
    # Tables' rows change every step (admission, eviction); their
    # gradients are not accumulated.
    raise ConfigurationError(
      '--accumulation-steps is not supported with embedding tables; '
      'raise --batch-size instead. Received: --accumulation-steps='
      f'{steps}'
    )
  if strategies.parameter_servers(engine.strategy):
    # Workers step asynchronously: there is no shared set of N
    # minibatches to accumulate. A larger --batch-size does the same.
    raise ConfigurationError(
      '--accumulation-steps is not supported with parameter servers '
      '(asynchronous training); raise --batch-size instead. Received: '
      f'--accumulation-steps={steps}'
    )
  if engine.accumulator is None:
    engine.accumulator = _optimizers.GradientAccumulator(variables, steps)
  return engine.accumulator


def make_step_runner(engine, train_step, accumulator, optimizer):
  """Runs `train_step` on each replica; applies accumulated gradients.

  Called in cross-replica context, inside the training loop's
  `tf.function`. The update of an accumulation runs here rather than in
  `train_step`: a synchronisation point (the optimizer's cross-replica
  sum) may not sit inside control flow in replica context.

  Returns:
    `run_step(inputs) -> per-replica loss`.
  """
  strategy = engine.strategy
  global_step = engine.global_step
  if accumulator is None:
    return lambda inputs: strategy.run(train_step, (inputs,))

  def apply():
    strategy.run(accumulator.apply, (optimizer,))
    return tf.constant(True)

  def run_step(inputs):
    per_replica = strategy.run(train_step, (inputs,))
    # The global step counts minibatches; every N-th one updates.
    due = tf.equal(global_step % accumulator.steps, 0)
    tf.cond(due, apply, lambda: tf.constant(False))
    return per_replica

  return run_step
