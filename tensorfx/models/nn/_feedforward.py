"""Feed-forward neural networks for classification and regression."""

import tensorflow as tf
import tf_keras

from tensorfx._errors import ConfigurationError
from tensorfx.data import _transforms
from tensorfx.data._features import FeatureType
from tensorfx.training._args import ModelArguments
from tensorfx.training._builder import ModelBuilder


class FeedForwardArguments(ModelArguments):
  """Arguments of the feed-forward models: `--hidden-layers:N units`, ..."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    cls.add_list_argument(
        parser, '--hidden-layers', type=int, default=[],
        help='units of each hidden layer, e.g. --hidden-layers:1 20 '
        '--hidden-layers:2 10 (or --hidden-layers 20 10)')
    parser.add_argument('--learning-rate', type=float, default=0.01,
                        help='the Adam learning rate (default 0.01)')
    return parser

  def process(self):
    super().process()
    for index, units in enumerate(self.hidden_layers or [], start=1):
      if units <= 0:
        raise ConfigurationError(
            'Hidden layers need a positive number of units. Received: '
            f'--hidden-layers:{index}={units}')
    if self.learning_rate <= 0:
      raise ConfigurationError('--learning-rate must be positive. Received: '
                               f'--learning-rate={self.learning_rate}')


class FeedForwardClassificationArguments(FeedForwardArguments):
  """Arguments of `FeedForwardClassification`."""


class FeedForwardRegressionArguments(FeedForwardArguments):
  """Arguments of `FeedForwardRegression`."""


class _FeedForward(ModelBuilder):
  """Shared body: model inputs from the features, then dense layers."""

  _outputs = 1

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    self._described = None
    self._layers = None
    self._embeddings = None

  @property
  def target(self):
    """The `TransformedFeature` of the single target feature."""
    features = self.dataset.features
    target = features.target if features is not None else None
    if target is None:
      raise ConfigurationError(
          f'{type(self).__name__} needs one feature of type target in the '
          'feature set.')
    return self.described[target.name]

  @property
  def described(self):
    if self._described is None:
      self._described = self.dataset.transformed_features
    return self._described

  def _model_inputs(self, inputs):
    parts = []
    for name, info in sorted(self.described.items()):
      if info.type in (FeatureType.TARGET, FeatureType.KEY):
        continue
      value = inputs[name]
      if info.type == FeatureType.EMBEDDING:
        value = self._embeddings[name](value)
      elif info.categorical:
        value = tf.one_hot(value, info.cardinality)
      elif value.dtype == tf.string:
        raise ConfigurationError(
            f'Feature {name!r} is a string; feed-forward models need numbers '
            '(use onehot, embedding or hash in the feature set).')
      parts.append(_transforms.as_matrix(tf.cast(value, tf.float32)))
    if not parts:
      raise ConfigurationError('The feature set has no input features besides '
                               'the target and keys.')
    return tf.concat(parts, axis=1)

  def _build_layers(self):
    self._embeddings = {
        name: tf_keras.layers.Embedding(info.cardinality, info.embedding_dim,
                                        name=f'embedding_{name}')
        for name, info in self.described.items()
        if info.type == FeatureType.EMBEDDING}
    self._layers = [
        tf_keras.layers.Dense(units, activation='relu', name=f'hidden{i}')
        for i, units in enumerate(self.args.hidden_layers or [], start=1)]
    self._layers.append(tf_keras.layers.Dense(self._output_units(),
                                              name='output'))

  def build_inference(self, inputs, training):
    if self._layers is None:
      self._build_layers()
    x = self._model_inputs(inputs)
    for layer in self._layers:
      x = layer(x)
    return x


class FeedForwardClassification(_FeedForward):
  """A feed-forward classifier over the features of a dataset.

  Inputs are every non-target feature (categorical ones one-hot encoded or
  embedded); the target is a discrete field. Outputs `label` (the predicted
  class) and `scores` (a probability per class, in `labels` order).

  Example:
    >>> args = FeedForwardClassificationArguments.parse(
    ...     ['--hidden-layers:1', '20', '--batch-size', '32'])
    >>> FeedForwardClassification(args, dataset)
  """

  evaluation_metric = ('accuracy', 'max')

  def _output_units(self):
    classes = self.target.cardinality
    if classes < 2:
      raise ConfigurationError(
          'Classification needs a discrete target with at least 2 classes. '
          f'Received: {classes} class(es) in {self.target.name!r}.')
    return classes

  @property
  def labels(self):
    """The class labels, in score order."""
    return list(self.target.vocabulary)

  def build_training(self, global_steps, inputs, inferences):
    del global_steps
    labels = inputs[self.target.name]
    # Labels unseen in analysis are -1: they carry no weight.
    weights = tf.cast(labels >= 0, tf.float32)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.maximum(labels, 0), logits=inferences)
    loss = tf.reduce_sum(losses * weights) / tf.maximum(
        tf.reduce_sum(weights), 1.0)
    return loss, self.optimizer

  def build_output(self, inferences):
    scores = tf.nn.softmax(inferences)
    labels = tf.constant(self.labels)
    return {'label': tf.gather(labels, tf.argmax(scores, axis=1)),
            'scores': scores}

  def build_evaluation(self, inputs, outputs):
    if not hasattr(self, '_accuracy'):
      self._accuracy = tf_keras.metrics.Accuracy(name='accuracy')
    labels = inputs[self.target.name]
    self._accuracy.update_state(
        labels, tf.argmax(outputs['scores'], axis=1),
        sample_weight=tf.cast(labels >= 0, tf.float32))
    return {'accuracy': self._accuracy}


class FeedForwardRegression(_FeedForward):
  """A feed-forward regressor over the features of a dataset.

  The target is a numeric field; outputs `value`.
  """

  evaluation_metric = ('rmse', 'min')

  def _output_units(self):
    return 1

  def build_training(self, global_steps, inputs, inferences):
    del global_steps
    target = tf.cast(inputs[self.target.name], tf.float32)
    loss = tf.reduce_mean(tf.square(inferences[:, 0] - target))
    return loss, self.optimizer

  def build_output(self, inferences):
    return {'value': inferences[:, 0]}

  def build_evaluation(self, inputs, outputs):
    if not hasattr(self, '_rmse'):
      self._rmse = tf_keras.metrics.RootMeanSquaredError(name='rmse')
      self._mae = tf_keras.metrics.MeanAbsoluteError(name='mae')
    target = tf.cast(inputs[self.target.name], tf.float32)
    self._rmse.update_state(target, outputs['value'])
    self._mae.update_state(target, outputs['value'])
    return {'rmse': self._rmse, 'mae': self._mae}
