"""Mixed precision (`--precision`): float16 or bfloat16 compute, float32 state.

The builder's layers take the tf_keras dtype policy while the engine first
calls the hooks (when they create their layers), and only then: the
tf.Transform layers, the metrics and everything else made before or after
keep float32. A policy layer computes in float16/bfloat16 and keeps float32
variables. The engine casts the inference values back to float32 before
`build_training` and `build_output` see them, so losses, metrics and the
exported model's outputs are float32. With float16 the loss is scaled
(`tf_keras.mixed_precision.LossScaleOptimizer`, dynamic): the gradients
are unscaled before any optimizer sees them, and a step whose gradients
overflow is skipped (and the scale lowered) rather than applied.
"""

import contextlib

import tensorflow as tf

_LOW = (tf.float16, tf.bfloat16)


@contextlib.contextmanager
def policy(precision):
  """Sets the global tf_keras policy `precision` for the block, then restores it.

  Args:
    precision: 'float32', 'mixed_float16' or 'mixed_bfloat16'.
  """
  import tf_keras

  mixed = tf_keras.mixed_precision
  previous = mixed.global_policy()
  if precision == 'float32':
    yield
    return
  mixed.set_global_policy(precision)
  try:
    yield
  finally:
    mixed.set_global_policy(previous)


def to_float32(values):
  """`values` (a structure of tensors) with float16/bfloat16 ones as float32."""

  def cast(value):
    if isinstance(value, (tf.Tensor, tf.Variable)) and value.dtype in _LOW:
      return tf.cast(value, tf.float32)
    return value

  return tf.nest.map_structure(cast, values)


def loss_scale_optimizer(engine, optimizer, precision):
  """The `LossScaleOptimizer` of `optimizer` under float16; else None.

  Made once, under the strategy's scope, and kept in the engine's state
  (checkpointed: a resumed job keeps its scale); `optimizer` stays the
  training optimizer, so checkpoints keep its slots where they were.
  """
  if precision != 'mixed_float16':
    return None
  if engine.loss_scale_optimizer is None:
    import tf_keras

    engine.loss_scale_optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
      optimizer
    )
  return engine.loss_scale_optimizer


def zero_if_not_finite(gradients):
  """Gradients, all zero when any is not finite (an overflowed float16 step).

  For the embedding tables' optimizers, which the loss scale optimizer
  does not guard: they must skip the steps it skips.
  """
  present = [g for g in gradients if g is not None]
  if not present:
    return gradients
  finite = tf.reduce_all(
    [
      tf.reduce_all(
        tf.math.is_finite(g.values if isinstance(g, tf.IndexedSlices) else g)
      )
      for g in present
    ]
  )

  def zero(gradient):
    if gradient is None:
      return None
    if isinstance(gradient, tf.IndexedSlices):
      return tf.IndexedSlices(
        tf.where(finite, gradient.values, tf.zeros_like(gradient.values)),
        gradient.indices,
        gradient.dense_shape,
      )
    return tf.where(finite, gradient, tf.zeros_like(gradient))

  return [zero(g) for g in gradients]
