"""Iris models written for Keras `fit`, as a Keras user has them.

Shared by the single-node tests and the scripts that train them with
mirrored replicas and on a parameter-server cluster: the same classes,
unchanged, on every strategy.
"""

import tf_keras

from tensorfx.models import KerasModelBuilder


def functional_model(features, classes=3):
  """A functional Keras classifier over iris' `X` (softmax scores)."""
  hidden = tf_keras.layers.Dense(16, activation='relu')(features['X'])
  scores = tf_keras.layers.Dense(classes, activation='softmax')(hidden)
  model = tf_keras.Model(features, scores)
  model.compile(
    optimizer=tf_keras.optimizers.Adam(0.02),
    loss='sparse_categorical_crossentropy',
    metrics=['accuracy'],
  )
  return model


class FunctionalIris(KerasModelBuilder):
  """The functional model, probabilities out."""

  evaluation_metric = ('accuracy', 'max')

  def build_model(self, inputs):
    return functional_model(inputs)


class Classifier(tf_keras.Model):
  """A subclassed Keras model: logits out, an L2 penalty on its kernel."""

  def __init__(self, classes):
    super().__init__()
    self.hidden = tf_keras.layers.Dense(
      16, activation='relu', kernel_regularizer=tf_keras.regularizers.L2(1e-4)
    )
    self.logits = tf_keras.layers.Dense(classes)

  def call(self, inputs, training=False):
    return self.logits(self.hidden(inputs['X']))


class SubclassedIris(KerasModelBuilder):
  """The subclassed model, compiled with a from_logits loss."""

  def build_model(self, inputs):
    del inputs  # A subclassed model builds on its first call.
    model = Classifier(3)
    model.compile(
      optimizer=tf_keras.optimizers.Adam(0.02),
      loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=[tf_keras.metrics.SparseCategoricalAccuracy(name='acc')],
    )
    return model
