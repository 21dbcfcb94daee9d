"""TensorFlow 1-style optimizers (`compute_gradients`/`apply_gradients`).

tfutils took any class whose objects have TensorFlow 1's
`compute_gradients` and `apply_gradients`: `tf.compat.v1.train`'s
optimizers and users' own wrappers of them. Seven of
`tf.compat.v1.train`'s are made as their tf_keras equivalents (see
`_optimizer`); every other such class is made as written and driven by
`TF1Optimizer`: the engine computes the gradients, the object's
`apply_gradients` applies them (in the training step's graph, where
TensorFlow 1's optimizers work in TensorFlow 2), and the object's
TensorFlow state (its slots, or those of the optimizers it wraps) is
checkpointed with the run.
"""

from collections.abc import Callable, Iterable
import inspect
from typing import Any

import tensorflow as tf
import tf_keras


def is_tf1_class(made: Any) -> bool:
  """Whether `made` makes TensorFlow 1-style optimizers (not tf_keras')."""
  if not inspect.isclass(made):
    return False
  if issubclass(
    made, (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer)
  ):
    return False
  if issubclass(made, tf.compat.v1.train.Optimizer):
    return True
  return callable(getattr(made, 'compute_gradients', None)) and callable(
    getattr(made, 'apply_gradients', None)
  )


class TF1Optimizer(tf.Module):
  """A TensorFlow 1-style optimizer object, as the engine drives one.

  Example:
    >>> optimizer = TF1Optimizer(
    ...     tf.compat.v1.train.ProximalAdagradOptimizer(0.1), clipvalue=1.0)
    >>> optimizer.apply_gradients(zip(gradients, variables))

  Args:
    wrapped: the object (with `apply_gradients(grads_and_vars)`).
    rate: the variable the object reads its learning rate from, or None.
    schedule: `schedule(step) -> rate`, set into `rate` before each
      update; None for a constant rate.
    clipvalue: clip each gradient to [-clipvalue, clipvalue] first
      (tfutils' ClipOptimizer around a class tf_keras has no equivalent
      of), or None.
  """

  def __init__(
    self,
    wrapped: Any,
    rate: tf.Variable | None = None,
    schedule: Callable[[Any], Any] | None = None,
    clipvalue: float | None = None,
  ):
    super().__init__(name='tf1_optimizer')
    self.rate = rate
    self._schedule = schedule
    self.clipvalue = clipvalue
    if isinstance(wrapped, tf.Module) or _trackable(wrapped):
      self.wrapped = wrapped
      self._state: list[Any] = []
    else:
      # A plain wrapper object: what it holds that has TensorFlow state
      # (the optimizer it wraps) is tracked here instead.
      object.__setattr__(self, 'wrapped', wrapped)
      self._state = [v for v in vars(wrapped).values() if _trackable(v)]

  @property
  def learning_rate(self) -> Any:
    """The learning rate now (raises AttributeError when unknown)."""
    if self.rate is None:
      raise AttributeError('learning_rate')
    if self._schedule is not None:
      return self._schedule(None)
    return self.rate

  def apply_gradients(
    self, grads_and_vars: Iterable[tuple[Any, Any]], **kwargs: Any
  ) -> Any:
    """Applies the engine's gradients with the object's `apply_gradients`."""
    del kwargs  # The object sums replicas' gradients itself.
    if self._schedule is not None and self.rate is not None:
      self.rate.assign(tf.cast(self._schedule(None), tf.float32))
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if self.clipvalue is not None:
      limit = float(self.clipvalue)
      pairs = [(_clip(g, limit), v) for g, v in pairs]
    return self.wrapped.apply_gradients(pairs)


def _clip(gradient: Any, limit: float) -> Any:
  if isinstance(gradient, tf.IndexedSlices):
    return tf.IndexedSlices(
      tf.clip_by_value(gradient.values, -limit, limit),
      gradient.indices,
      gradient.dense_shape,
    )
  return tf.clip_by_value(gradient, -limit, limit)


def _trackable(value: Any) -> bool:
  from tensorflow.python.trackable import base

  return isinstance(value, base.Trackable)
