"""Seeding: runs with the same `--seed` on one machine repeat exactly.

And resume exactly: see `_run.exactness`.
"""

import tensorflow as tf


def set_seed(seed):
  """Seeds Python, NumPy and TensorFlow; makes kernels deterministic.

  Called when a builder is made, before any hook creates a variable:
  layer initializers and dropout draw from these seeds.

  Args:
    seed: the seed, or None to leave everything as it is.
  """
  if seed is None:
    return
  import tf_keras

  tf_keras.utils.set_random_seed(seed)
  # Keras' random layers (Dropout, ...) then draw from a
  # tf.random.Generator each, whose state a checkpoint can hold
  # (`_engine.random_state`): a resumed run draws what the uninterrupted
  # one would. Layers made before this keep TensorFlow's kernel-state ops.
  tf_keras.backend.experimental.enable_tf_random_generator()
  # Deterministic kernels (reductions, tf.data ordering); slower on GPUs,
  # and process-wide: asked for by --seed only.
  tf.config.experimental.enable_op_determinism()
