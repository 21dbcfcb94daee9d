"""The evaluation graph: metrics over a pass of any source.

Traced inside `tf.function`s and run on each replica: the hooks
`build_inference`, `build_output`, `build_training` (for the loss) and
`build_evaluation` (to update the metrics) are called for every batch; a
validation target with its own computation calls `build_inference` and
`build_output`, then its function.
"""

import warnings

import tensorflow as tf

from tensorfx import _autograph
from tensorfx._errors import ConfigurationError
from tensorfx.training import _interfaces
from tensorfx.training._engine import precision
from tensorfx.training._engine import strategies
from tensorfx.training._engine import xla


def build(builder, engine):
  """Builds the `EvaluationInterface` (None without anything to evaluate)."""
  import tf_keras

  _autograph.skip_library()
  # The hooks are users' code: converted (this module is not).
  build_inference = _autograph.hook(builder.build_inference)
  build_output = _autograph.hook(builder.build_output)
  build_training = _autograph.hook(builder.build_training)
  build_evaluation = _autograph.hook(builder.build_evaluation)

  settings = builder.settings
  # Resolved with the settings: --eval-batch-size, else --batch-size.
  default_batch = settings.validation.batch_size
  # The default target reads `eval`; --eval-target adds others.
  if 'eval' not in builder.dataset and not settings.validation.targets:
    return None

  loss_metric = tf_keras.metrics.Mean(name='loss')
  # Not checkpointed: a job trained without evaluation data has no such
  # values, and `tensorfx evaluate [--follow]` restores its checkpoints.
  engine.run.eval_loss = loss_metric
  metrics = {'loss': loss_metric}
  metrics.update(engine.evaluation_metrics)
  global_step = engine.global_step
  strategy = engine.strategy
  replicated = strategies.replicated(strategy)

  # XLA compiles the forward pass; outputs (often strings: class names),
  # the loss and the metrics' updates are cheap, and stay outside.
  inference = xla.Step(
    lambda inputs: precision.to_float32(
      build_inference(inputs, training=False)
    ),
    'evaluation step',
    settings.speed.jit_compile,
    reason=_no_xla(strategy),
  )

  def eval_step(inputs):
    inferences = inference(inputs)
    outputs = build_output(inferences)
    loss, _ = build_training(global_step, inputs, inferences)
    size = tf.shape(tf.nest.flatten(inputs)[0], out_type=tf.int64)[0]
    loss_metric.update_state(
      tf.cast(loss, tf.float32), sample_weight=tf.cast(size, tf.float32)
    )
    build_evaluation(inputs, outputs)
    return size

  def run_step(inputs):
    if replicated:
      return strategy.reduce(
        tf.distribute.ReduceOp.SUM,
        strategy.run(eval_step, (inputs,)),
        axis=None,
      )
    return eval_step(inputs)

  @tf.function
  def loop(data):
    count = tf.constant(0, tf.int64)
    with warnings.catch_warnings():
      # A distributed dataset read in a function asks for its options in
      # graph mode, and TensorFlow warns that they may be stale (they are
      # the options tensorfx set, unchanged).
      warnings.filterwarnings(
        'ignore', 'To make it possible to preserve tf.data options', UserWarning
      )
      for inputs in data:
        count += run_step(inputs)
    return count

  step = tf.function(run_step)
  computations = {}

  def compute(fn):
    # A validation target's own computation (ValidationTarget.compute),
    # traced once per function.
    if fn not in computations:

      def target_step(inputs):
        outputs = build_output(
          precision.to_float32(build_inference(inputs, training=False))
        )
        values = _autograph.hook(fn)(inputs, outputs)
        if not isinstance(values, dict):
          raise ConfigurationError(
            "A validation target's computation "
            f'({getattr(fn, "__qualname__", fn)}) must return a dict of '
            f'tensors by name. Received: {values!r}'
          )
        size = tf.shape(tf.nest.flatten(inputs)[0], out_type=tf.int64)[0]
        return dict(values), size

      def run_target_step(inputs):
        if not replicated:
          return target_step(inputs)
        values, size = strategy.run(target_step, (inputs,))
        # One value per batch: the replicas' mean.
        return (
          {
            k: strategy.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None)
            for k, v in values.items()
          },
          strategy.reduce(tf.distribute.ReduceOp.SUM, size, axis=None),
        )

      computations[fn] = tf.function(run_target_step)
    return computations[fn]

  def dataset(source='eval', batch_size=None, batches=None):
    data = engine.call(
      builder, 'build_input', source, batch_size or default_batch, 1, False
    )
    # Before the first pass is traced: compiled with XLA, or not.
    inference.check(data.element_spec, strategy)
    if batches:
      data = data.take(batches)
    if replicated:
      return strategy.experimental_distribute_dataset(
        strategies.shard_by_data(data)
      )
    return data

  return _interfaces.EvaluationInterface(
    dataset=dataset, loop=loop, metrics=metrics, step=step, compute=compute
  )


def _no_xla(strategy):
  """Why an evaluation step is never compiled here, or None."""
  if strategies.parameter_servers(strategy):
    return 'not with parameter servers'
  return None
