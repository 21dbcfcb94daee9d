"""The three graph interfaces, built under the strategy the job calls for."""

import tensorflow as tf

from tensorfx.training import _interfaces
from tensorfx.training._arguments import batch_size as _batch_size


def build_graph_interfaces(builder, engine, config):
  """Builds the training, evaluation and (deferred) prediction interfaces.

  Creates the strategy, then every variable under its scope, then the
  interfaces.

  What `ModelBuilder.build_graph_interfaces(config)` does by default; it
  builds the three interfaces, each with the builder's own
  `build_training_graph`, `build_evaluation_graph` or
  `build_prediction_graph` where it has one.
  """
  if engine.settings is None:
    # Called outside a run (which resolves them when its data is ready):
    # --batch-size all counts the data, analyzed by now.
    engine.settings = _batch_size.resolve(builder.settings, builder.dataset)
  engine.strategy = config.create_device_setter(builder.args)
  if builder.dataset.features is not None:
    # Made after connecting to the cluster (which renames this task's
    # devices) but outside the strategy's scope: evaluation and serving
    # run it here, never on a parameter-server worker.
    _ = builder.transform_layer
  strategy = engine.strategy
  with strategy.scope():
    engine.global_step = tf.Variable(
      0,
      dtype=tf.int64,
      trainable=False,
      name='global_step',
      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )
    training = engine.call(builder, 'build_training_graph')
    evaluation = engine.call(builder, 'build_evaluation_graph')

  def build_prediction():
    with strategy.scope():
      return engine.call(builder, 'build_prediction_graph')

  return training, evaluation, _interfaces.DeferredPrediction(build_prediction)
