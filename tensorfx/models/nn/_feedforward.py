"""Feed-forward neural networks for classification and regression."""

import argparse
from typing import Any, Optional, Sequence

import tensorflow as tf
import tf_keras

from tensorfx import training as _training
from tensorfx._errors import ConfigurationError
from tensorfx.data import FeatureType
from tensorfx.data import _transforms
from tensorfx.embeddings import EmbeddingTable
from tensorfx.training import ModelArguments
from tensorfx.training import ModelBuilder


class FeedForwardArguments(ModelArguments):
  """Arguments of the feed-forward models: `--hidden-layers:N units`, ..."""

  @classmethod
  def build_parser(cls) -> argparse.ArgumentParser:
    parser = super().build_parser()
    cls.add_list_argument(
      parser,
      '--hidden-layers',
      type=int,
      default=[],
      help='units of each hidden layer, e.g. --hidden-layers:1 20 '
      '--hidden-layers:2 10 (or --hidden-layers 20 10)',
    )
    # --learning-rate is a standard flag (see ModelArguments); these
    # models have always started from 0.01.
    parser.set_defaults(learning_rate=0.01)
    return parser

  def process(self) -> None:
    super().process()
    hidden_layers(self.hidden_layers)


def hidden_layers(
  layers: Optional[Sequence[Any]],
) -> list[tuple[str, int, str]]:
  """`(name, units, activation)` of each hidden layer of `--hidden-layers`.

  An item is a number of units (a relu layer named `hidden<N>`), or, as the
  original tensorfx's last version set them in code, a tuple `(name, units,
  activation)`, e.g. `args.hidden_layers = [('l1', 20, 'relu'), ('l2', 10,
  'relu')]`.

  Example:
    >>> hidden_layers([20, ('top', 10, 'tanh')])
    [('hidden1', 20, 'relu'), ('top', 10, 'tanh')]

  Raises:
    ConfigurationError: an item is neither, or has no positive units.
  """
  result = []
  for index, item in enumerate(layers or [], start=1):
    if isinstance(item, (list, tuple)) and len(item) == 3:
      name, units, activation = item
    else:
      name, units, activation = f'hidden{index}', item, 'relu'
    if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
      raise ConfigurationError(
        'Hidden layers need a positive number of units (or a tuple (name, '
        f'units, activation)). Received: --hidden-layers:{index}={item!r}'
      )
    if not isinstance(name, str) or not isinstance(activation, str):
      raise ConfigurationError(
        'A hidden layer given as a tuple is (name, units, activation), '
        f'two strings and a number. Received: hidden_layers[{index - 1}]='
        f'{item!r}'
      )
    result.append((name, units, activation))
  return result


class FeedForwardClassificationArguments(FeedForwardArguments):
  """Arguments of `FeedForwardClassification`."""


class FeedForwardRegressionArguments(FeedForwardArguments):
  """Arguments of `FeedForwardRegression`.

  The loss flags are those of every trainer (see
  `tensorfx.training.regression_loss`): `--loss` (or `--loss-type`)
  mean_squared_error, mean_absolute_error or huber (with `--huber-delta`),
  and `--loss-normalization` none, percentage_error or
  expected_value_greater_than_one, in Gematria's spelling or any case;
  `mse`, `mae` and `percentage` are accepted too.

  Example:
    >>> args = FeedForwardRegressionArguments.parse(
    ...     ['--loss', 'MEAN_ABSOLUTE_ERROR',
    ...      '--loss-normalization', 'PERCENTAGE_ERROR'])
    >>> args.loss, args.loss_normalization
    ('mean_absolute_error', 'percentage_error')
  """


class _FeedForward(ModelBuilder):
  """Shared body: model inputs from the features, then dense layers."""

  _outputs = 1

  def __init__(self, args: Any, dataset: Any = None) -> None:
    super().__init__(args, dataset)
    self._described: Any = None
    self._layers: Any = None
    self._embeddings: Any = None

  @property
  def target(self) -> Any:
    """The `TransformedFeature` of the single target feature."""
    features = self.dataset.features
    target = features.target if features is not None else None
    if target is None:
      raise ConfigurationError(
        f'{type(self).__name__} needs one feature of type target in the '
        'feature set.'
      )
    return self.described[target.name]

  @property
  def described(self) -> Any:
    if self._described is None:
      self._described = self.dataset.transformed_features
    return self._described

  def _model_inputs(
    self, inputs: dict[str, Any], training: bool = False
  ) -> Any:
    parts = []
    for name, info in sorted(self.described.items()):
      if info.type in (FeatureType.TARGET, FeatureType.KEY, FeatureType.WEIGHT):
        continue
      value = inputs[name]
      if info.type == FeatureType.EMBEDDING:
        features: Any = self.dataset.features  # Set: it described inputs.
        params = features[name].params
        layer = self._embeddings[name]
        if isinstance(layer, EmbeddingTable):
          value = layer.lookup(value, params.get('combiner'), training=training)
        else:
          value = _embed(layer, value, params.get('combiner', 'mean'))
      elif info.categorical:
        # Several values per instance (a multivalent field) are a bag.
        value = _transforms.multi_hot(value, info.cardinality)
      elif isinstance(value, tf.SparseTensor):
        raise ConfigurationError(
          f'Feature {name!r} has a variable number of values; feed-forward '
          'models need one row per instance (use onehot, embedding, hash '
          'or bucketize in the feature set).'
        )
      elif value.dtype == tf.string:
        raise ConfigurationError(
          f'Feature {name!r} is a string; feed-forward models need numbers '
          '(use onehot, embedding or hash in the feature set).'
        )
      parts.append(_transforms.as_matrix(tf.cast(value, tf.float32)))
    if not parts:
      raise ConfigurationError(
        'The feature set has no input features besides the target and keys.'
      )
    return tf.concat(parts, axis=1)

  def _build_layers(self) -> None:
    features = self.dataset.features
    tables: dict[str, EmbeddingTable] = {}
    self._embeddings = {}
    for name, info in sorted(self.described.items()):
      if info.type != FeatureType.EMBEDDING:
        continue
      owner = features[name].table
      if owner is None:
        self._embeddings[name] = tf_keras.layers.Embedding(
          info.cardinality, info.embedding_dim, name=f'embedding_{name}'
        )
        continue
      if owner not in tables:
        # Raw keys: a table sharded over parameter servers, trained by the
        # sparse optimizer, with admission and eviction.
        feature = features[owner]
        field = self.dataset.schema[feature.fields[0]]
        tables[owner] = EmbeddingTable.from_params(
          owner,
          feature.params,
          key_dtype=tf.int64 if field.numeric else tf.string,
        )
      self._embeddings[name] = tables[owner]
    self._layers = [
      tf_keras.layers.Dense(units, activation=activation, name=name)
      for name, units, activation in hidden_layers(self.args.hidden_layers)
    ]
    self._layers.append(
      tf_keras.layers.Dense(self._output_units(), name='output')
    )

  def build_inference(self, inputs: dict[str, Any], training: bool) -> Any:
    if self._layers is None:
      self._build_layers()
    x = self._model_inputs(inputs, training)
    for layer in self._layers:
      x = layer(x)
    return x


def _embed(layer: Any, indices: Any, combiner: str = 'mean') -> Any:
  """Embeds [B] indices; combines the embeddings of [B, N] or sparse ones."""
  if isinstance(indices, tf.SparseTensor):
    if not layer.built:
      layer.build(None)
    # Out-of-range (negative) ids are dropped; an empty row embeds to 0.
    return tf.nn.safe_embedding_lookup_sparse(
      layer.embeddings, indices, combiner=combiner
    )
  value = layer(indices)
  if indices.shape.rank == 2:
    value = tf.reduce_sum(value, axis=1)
    if combiner != 'sum':
      count = tf.cast(tf.shape(indices)[1], value.dtype)
      value /= count if combiner == 'mean' else tf.sqrt(count)
  return value


class FeedForwardClassification(_FeedForward):
  """A feed-forward classifier over the features of a dataset.

  Inputs are every non-target, non-key feature side by side: numeric ones
  as they are, categorical ones (bucketize, hash, cross) one-hot encoded,
  embedding ones through a trainable `tf_keras.layers.Embedding` each. A
  multivalent categorical feature is a bag: multi-hot, or the mean of its
  values' embeddings. The target is a discrete field. Outputs `label`
  (the predicted class), `scores` (a probability per class) and
  `classes` (the class names, in the order of `scores`: `scores[i]` is
  the probability of `classes[i]`), so predictions read without knowing
  the vocabulary's order.

  Example:
    >>> args = FeedForwardClassificationArguments.parse(
    ...     ['--hidden-layers:1', '20', '--batch-size', '32'])
    >>> FeedForwardClassification(args, dataset)
  """

  evaluation_metric = ('accuracy', 'max')

  def __init__(self, args: Any, dataset: Any = None) -> None:
    super().__init__(args, dataset)
    loss = self.settings.loss
    if loss.given:
      raise ConfigurationError(
        'FeedForwardClassification trains on the cross-entropy; --loss, '
        '--loss-normalization and --huber-delta choose a regression loss '
        '(use FeedForwardRegression). Received: '
        f'--loss={loss.type} --loss-normalization={loss.normalization} '
        f'--huber-delta={loss.huber_delta}'
      )

  def _output_units(self) -> int:
    classes = self.target.cardinality
    if classes < 2:
      raise ConfigurationError(
        'Classification needs a discrete target with at least 2 classes. '
        f'Received: {classes} class(es) in {self.target.name!r}.'
      )
    return classes

  @property
  def labels(self) -> list[str]:
    """The class labels, in score order."""
    return list(self.target.vocabulary)

  def build_training(
    self, global_steps: Any, inputs: dict[str, Any], inferences: Any
  ) -> tuple[Any, Any]:
    del global_steps
    labels = inputs[self.target.name]
    if not hasattr(self, '_class_weights'):
      self._class_weights = _training.class_weights(self)
    # Labels unseen in analysis are -1: they carry no weight. The weight
    # feature and --class-weight scale each example's loss (as Keras'
    # sample_weight and class_weight: the mean over the known examples).
    weights = _training.example_weights(
      self, inputs, labels, self._class_weights
    )
    known = tf.cast(labels >= 0, tf.float32)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.maximum(labels, 0), logits=inferences
    )
    loss = tf.reduce_sum(losses * weights) / tf.maximum(
      tf.reduce_sum(known), 1.0
    )
    return loss, self.optimizer

  def build_output(self, inferences: Any) -> dict[str, Any]:
    scores = tf.nn.softmax(inferences)
    labels = tf.constant(self.labels)
    return {
      'label': tf.gather(labels, tf.argmax(scores, axis=1)),
      'scores': scores,
      # The names beside the scores, one row per instance (what
      # TensorFlow Serving's classify API returns too).
      'classes': tf.tile(labels[tf.newaxis, :], [tf.shape(scores)[0], 1]),
    }

  def build_evaluation(
    self, inputs: dict[str, Any], outputs: dict[str, Any]
  ) -> dict[str, Any]:
    if not hasattr(self, '_accuracy'):
      self._accuracy = tf_keras.metrics.Accuracy(name='accuracy')
    labels = inputs[self.target.name]
    self._accuracy.update_state(
      labels,
      tf.argmax(outputs['scores'], axis=1),
      sample_weight=tf.cast(labels >= 0, tf.float32),
    )
    return {'accuracy': self._accuracy}


class FeedForwardRegression(_FeedForward):
  """A feed-forward regressor over the features of a dataset.

  The target is a numeric field; outputs `value`. The training loss follows
  `--loss`, `--loss-normalization` and `--huber-delta` (see
  `tensorfx.training.regression_loss`); without them it is the mean
  squared error. Evaluation reports `rmse`, `mae` and `mape` (the mean
  absolute percentage error, Gematria's figure of merit), and the error
  percentiles of `--percentile-ranks` when given (`abs_error_p90`, ...).

  With several target features, it learns one task per target (Gematria's
  multi-task heads; `tensorfx.training.task_loss`): outputs `value_TASK`
  for each task, trains on the sum of the tasks' losses (an example whose
  target is missing, NaN, is left out of that task's), and reports each
  metric per task (`mape_TASK`, ...) besides over all tasks. Tasks are
  named by `--task-names`, by default by their target features.

  Example:
    >>> args = FeedForwardRegressionArguments.parse(['--loss', 'huber'])
    >>> FeedForwardRegression(args, dataset)
  """

  evaluation_metric = ('rmse', 'min')

  @property
  def tasks(self) -> list[tuple[str, str]]:
    """`(task name, target feature name)` of each task; [] for one target."""
    try:
      features = self.dataset.features
    except ConfigurationError:  # No dataset yet: the single `target`.
      features = None
    targets = [t.name for t in features.targets] if features else []
    if len(targets) < 2:
      if self.settings.tasks.count > 1:
        self.settings.tasks.named(targets)  # Raises, naming the flag.
      return []
    return list(zip(self.settings.tasks.named(targets), targets))

  def _output_units(self) -> int:
    return len(self.tasks) or 1

  def build_training(
    self, global_steps: Any, inputs: dict[str, Any], inferences: Any
  ) -> tuple[Any, Any]:
    del global_steps
    tasks = self.tasks
    if tasks:
      targets = tf.stack(
        [tf.cast(inputs[target], tf.float32) for _, target in tasks], axis=1
      )
      loss = _training.task_loss(
        inferences,
        targets,
        self.settings.loss,
        weights=_training.example_weights(self, inputs),
      )
      return loss, self.optimizer
    target = tf.cast(inputs[self.target.name], tf.float32)
    # The weight feature's per-example weights (ones without one).
    loss = _training.regression_loss(
      inferences[:, 0],
      target,
      self.settings.loss,
      weights=_training.example_weights(self, inputs),
    )
    return loss, self.optimizer

  def build_output(self, inferences: Any) -> dict[str, Any]:
    tasks = self.tasks
    if tasks:
      return {
        f'value_{name}': inferences[:, index]
        for index, (name, _) in enumerate(tasks)
      }
    return {'value': inferences[:, 0]}

  def build_evaluation(
    self, inputs: dict[str, Any], outputs: dict[str, Any]
  ) -> dict[str, Any]:
    ranks = getattr(self.args, 'percentile_ranks', None) or ()
    tasks = self.tasks
    if tasks:
      if not hasattr(self, '_task_metrics'):
        self._task_metrics = _training.TaskMetrics([n for n, _ in tasks], ranks)
      return self._task_metrics.update(
        tf.stack([inputs[target] for _, target in tasks], axis=1),
        tf.stack([outputs[f'value_{name}'] for name, _ in tasks], axis=1),
      )
    if not hasattr(self, '_rmse'):
      self._rmse = tf_keras.metrics.RootMeanSquaredError(name='rmse')
      self._mae = tf_keras.metrics.MeanAbsoluteError(name='mae')
      self._mape = tf_keras.metrics.MeanAbsolutePercentageError(name='mape')
      self._percentiles = _training.error_percentiles(ranks)
    # [B, 1]: Keras' mean metrics average over the last axis first, which
    # for [B] would weigh each batch, not each example, the same.
    target = tf.cast(inputs[self.target.name], tf.float32)[:, tf.newaxis]
    value = outputs['value'][:, tf.newaxis]
    metrics = [self._rmse, self._mae, self._mape, *self._percentiles]
    for metric in metrics:
      metric.update_state(target, value)
    return {metric.name: metric for metric in metrics}
