"""Per-example and per-class weights of the training loss.

Two sources multiply: the `weight` feature of the feature set (one number
per example, read from the data; Keras `fit`'s `sample_weight`) and
`--class-weight` (one number per class of a discrete target; Keras `fit`'s
`class_weight`). The ready-made models and `KerasModelBuilder` weigh their
training loss with them; a builder of one's own calls `example_weights`.
"""

from typing import Any

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import weights as _weight_settings


def class_weights(builder: Any) -> list[float] | None:
  """The weight of each class of the builder's target, in index order.

  Example:
    >>> # --class-weight balanced, 100 'a' and 300 'b' in the training data
    >>> class_weights(builder)  # doctest: +SKIP
    [2.0, 0.6666666666666666]

  Args:
    builder: a `ModelBuilder` whose dataset has one discrete target.

  Returns:
    None without `--class-weight`; else a weight per class, in the order
    of the target's vocabulary (its indices).

  Raises:
    ConfigurationError: the target is not discrete, a class named is not
      one of the target's, or `balanced` without the class counts of an
      analysis.
  """
  given = builder.settings.weights.class_weight
  if given is None:
    return None
  dataset = builder.dataset
  features = dataset.features
  target = features.target if features is not None else None
  described = dataset.transformed_features.get(target.name) if target else None
  if target is None or described is None or not described.vocabulary:
    raise ConfigurationError(
      '--class-weight needs a classifier: one target feature reading a '
      'discrete field. Received: --class-weight for '
      f'{"no target" if target is None else repr(target.name)}'
    )
  labels = [str(label) for label in described.vocabulary]
  if given == _weight_settings.BALANCED:
    return _balanced(dataset, target.fields[0], labels)
  weights = [1.0] * len(labels)
  for key, weight in given:
    if isinstance(key, int) and not 0 <= key < len(labels):
      raise ConfigurationError(
        f'--class-weight: class index {key} is out of range; the target '
        f'{target.name!r} has {len(labels)} classes. Received: '
        f'{key}={weight}'
      )
    if isinstance(key, str) and key not in labels:
      raise ConfigurationError(
        f'--class-weight: {key!r} is not a class of the target '
        f'{target.name!r}; its classes are {", ".join(labels)}. Received: '
        f'{key}={weight}'
      )
    weights[key if isinstance(key, int) else labels.index(key)] = weight
  return weights


def _balanced(dataset, field, labels):
  """n / (classes * count(class)), from the analysis' class counts."""
  metadata = dataset.metadata
  counts = {}
  if metadata is not None and field in metadata.fields:
    vocabulary = metadata.fields[field].get('vocabulary')
    if hasattr(vocabulary, 'items'):
      counts = dict(vocabulary.items())
  missing = [label for label in labels if not counts.get(label)]
  if missing:
    raise ConfigurationError(
      '--class-weight balanced needs the count of each class in the '
      f"training data (the analysis' vocabulary of field {field!r}); "
      f'none for {", ".join(missing)}. Name the weights instead, e.g. '
      "--class-weight '{CLASS: 2}'."
    )
  total = sum(counts[label] for label in labels)
  return [total / (len(labels) * counts[label]) for label in labels]


def example_weights(
  builder: Any,
  inputs: dict[str, Any],
  labels: Any | None = None,
  classes: list[float] | None = None,
) -> Any:
  """The weight of each example of a batch in the training loss.

  Called inside the training and evaluation steps. The `weight` feature
  (when the feature set has one) times the weight of each example's class
  (`classes`, from `class_weights`); an unknown label (-1) weighs 0.

  Example:
    >>> def build_training(self, global_steps, inputs, inferences):
    ...   labels = inputs['species']
    ...   weights = example_weights(self, inputs, labels,
    ...                             class_weights(self))
    ...   losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
    ...       labels=tf.maximum(labels, 0), logits=inferences)
    ...   return (tf.reduce_sum(losses * weights) /
    ...           tf.maximum(tf.reduce_sum(weights), 1.0)), self.optimizer

  Args:
    builder: the `ModelBuilder`.
    inputs: the batch's transformed features.
    labels: the integer class of each example (a discrete target), or
      None for other targets.
    classes: the weight of each class, or None.

  Returns:
    A float32 [B] tensor of weights.
  """
  try:
    features = builder.dataset.features
  except ConfigurationError:
    # A builder made without a dataset (e.g. building its graphs alone)
    # has no weight feature: every example weighs 1.
    features = None
  weight_feature = features.weight if features is not None else None
  size = tf.shape(tf.nest.flatten(inputs)[0])[:1]
  weights = tf.ones(size, tf.float32)
  if weight_feature is not None:
    weights = tf.reshape(tf.cast(inputs[weight_feature.name], tf.float32), [-1])
  if labels is not None:
    labels = tf.reshape(labels, [-1])
    known = labels >= 0
    if classes is not None:
      per_class = tf.gather(
        tf.constant(classes, tf.float32), tf.maximum(labels, 0)
      )
      weights *= per_class
    weights *= tf.cast(known, tf.float32)
  return weights
