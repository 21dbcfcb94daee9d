"""The random state a training step draws from, kept in checkpoints.

Under `--seed`, Keras' random layers (`Dropout`, `GaussianNoise`, ...)
draw from a `tf.random.Generator` each (`_seed.set_seed` turns that on):
its state is a variable, advanced by every step. Keras keeps those
generators out of checkpoints (for compatibility with its own); the
engine checkpoints them beside the model (`random_state`), so a resumed
run draws the masks the uninterrupted one would have drawn.
"""

import tensorflow as tf


class RandomState(tf.Module):
  """The generators of the builder's random layers, as one checkpointed object.

  Args:
    generators: the `tf.random.Generator`s, in the builder's layer order.
  """

  def __init__(self, generators):
    super().__init__(name='random_state')
    self.generators = list(generators)


def collect(builder):
  """The `RandomState` of the builder's random layers; None with none.

  Called after the variables are made: a random layer's generator is made
  when the layer is built, under the strategy's scope.
  """
  generators = generators_of(builder)
  return RandomState(generators) if generators else None


def generators_of(builder):
  """The `tf.random.Generator`s the builder's Keras layers draw from."""
  found: list[tf.random.Generator] = []
  for module in builder.submodules:
    # tf_keras' BaseRandomLayer keeps its backend.RandomGenerator here;
    # the tf.random.Generator inside exists under
    # enable_tf_random_generator() once the layer is built.
    generator = getattr(
      getattr(module, '_random_generator', None), '_generator', None
    )
    if isinstance(generator, tf.random.Generator) and not any(
      generator is g for g in found
    ):
      found.append(generator)
  return found
