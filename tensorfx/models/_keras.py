"""KerasModelBuilder: a compiled tf_keras model, trained by tensorfx."""

from typing import Any, Callable

import tensorflow as tf
import tf_keras

from tensorfx import training as _training
from tensorfx._errors import ConfigurationError
from tensorfx.data import FeatureType
from tensorfx.training import ModelBuilder

# Features that are not model inputs: what is learnt, passed through, or
# how much an example counts.
_NOT_INPUTS = (FeatureType.TARGET, FeatureType.KEY, FeatureType.WEIGHT)
# log(0) of a probability read back as a logit: kept finite.
_EPSILON = 1e-7


class KerasModelBuilder(ModelBuilder):
  """A model written for Keras `fit`, trained on tensorfx's engine.

  Implement `build_model(inputs)`: make a `tf_keras.Model` (functional or
  subclassed) over `inputs`, one `tf_keras.Input` per transformed feature
  (the target, keys and the weight feature left out), `compile` it, and
  return it. Its loss, metrics and optimizer come from `compile`;
  everything else is tensorfx's: the data and its tf.Transform analysis,
  the loop and callbacks, checkpoints and resume, every strategy (one
  device, mirrored replicas, multi-worker, parameter servers), evaluation
  and the exported model, which takes raw instances.

  The exported model's outputs follow the target: a discrete target
  gives `label`, `classes` and `scores` (the model outputs a score per
  class, or for two classes one sigmoid unit; logits when the loss says
  `from_logits=True`); a numeric one gives `value`.

  Model inputs: a feature of one value per instance is an `Input` of
  shape `(1,)`, one of `n` values `(n,)`, one of a variable number of
  values a sparse `Input`. Categorical features (onehot, hash, bucketize,
  embedding) arrive as int64 indices; their number of categories is
  `self.dataset.transformed_features[name].cardinality`.

  `--class-weight` and the feature set's `weight` feature weigh the
  training loss (Keras' `class_weight` and `sample_weight`); metrics
  compiled as `weighted_metrics` take the weight feature. What `compile`
  says of execution (`steps_per_execution`, `jit_compile`,
  `run_eagerly`) and the optimizer flags (`--optimizer`,
  `--learning-rate`) are not used: `--steps-per-loop`, `--jit-compile` and
  the compiled optimizer are. Models with several outputs are not
  supported.

  Example:
    >>> class Iris(KerasModelBuilder):
    ...   def build_model(self, inputs):
    ...     x = tf_keras.layers.Dense(16, activation='relu')(inputs['X'])
    ...     scores = tf_keras.layers.Dense(3, activation='softmax')(x)
    ...     model = tf_keras.Model(inputs, scores)
    ...     model.compile(optimizer=tf_keras.optimizers.Adam(0.01),
    ...                   loss='sparse_categorical_crossentropy',
    ...                   metrics=['accuracy'])
    ...     return model
    >>> ModelTrainer().train(Iris(args, dataset), output)

  Args:
    args: the `ModelArguments` of the job.
    dataset: the `DataSet` to train and evaluate on (with a feature set).
  """

  def __init__(self, args: Any, dataset: Any) -> None:
    super().__init__(args, dataset)
    self._keras_model: tf_keras.Model | None = None
    self._output_width: int | None = None
    self._class_weights: list[float] | None = None

  def build_model(self, inputs: dict[str, Any]) -> tf_keras.Model:
    """Builds and compiles the Keras model.

    Called once per process, eagerly, under the distribution strategy's
    scope (so the model's and the optimizer's variables are placed by
    it), on the first call of `build_inference`.

    Args:
      inputs: a dict of `tf_keras.Input` by feature name, the target,
        keys and weight feature left out.

    Returns:
      A compiled `tf_keras.Model` with one output.
    """
    raise NotImplementedError(
      f'{type(self).__name__} must implement build_model(inputs), '
      'returning a compiled tf_keras.Model.'
    )

  @property
  def keras_model(self) -> tf_keras.Model:
    """The compiled `tf_keras.Model`, once `build_model` has made it."""
    if self._keras_model is None:
      raise ConfigurationError(
        'keras_model is available once the trainer has built the model '
        '(build_graph_interfaces).'
      )
    return self._keras_model

  @property
  def trainable_variables(self) -> tuple[tf.Variable, ...]:
    # A frozen layer (layer.trainable = False) keeps variables that
    # TensorFlow calls trainable; Keras lists them as non-trainable.
    variables = super().trainable_variables
    if self._keras_model is None:
      return variables
    frozen = {id(v) for v in self._keras_model.non_trainable_variables}
    return tuple(v for v in variables if id(v) not in frozen)

  # The hooks, over the Keras model.

  def build_inference(self, inputs: dict[str, Any], training: bool) -> Any:
    model = self._model()
    outputs = model(self._model_inputs(inputs), training=training)
    if self._output_width is None and tf.is_tensor(outputs):
      self._output_width = _width(outputs)
    return outputs

  def build_training(
    self, global_steps: Any, inputs: dict[str, Any], inferences: Any
  ) -> tuple[Any, Any]:
    del global_steps
    model = self._model()
    labels, y_true = self._target(inputs, inferences)
    if labels is not None and self._class_weights is None:
      self._class_weights = _training.class_weights(self)
    weights = _training.example_weights(
      self, inputs, labels, self._class_weights
    )
    losses = _per_example(self._loss_function(), y_true, inferences)
    # Keras' mean over the batch (examples of unknown labels left out);
    # the engine averages replicas.
    count = (
      tf.cast(tf.size(weights), tf.float32)
      if labels is None
      else tf.reduce_sum(tf.cast(labels >= 0, tf.float32))
    )
    loss = tf.reduce_sum(losses * weights) / tf.maximum(count, 1.0)
    if model.losses:
      loss += tf.add_n([tf.cast(extra, tf.float32) for extra in model.losses])
    return loss, model.optimizer

  def build_output(self, inferences: Any) -> dict[str, Any]:
    if not tf.is_tensor(inferences):
      return super().build_output(inferences)
    vocabulary = self._vocabulary()
    if not vocabulary:
      return {
        'value': inferences[:, 0]
        if _width(inferences) == 1 and inferences.shape.rank == 2
        else inferences
      }
    scores = self._scores(inferences, len(vocabulary))
    labels = tf.constant(vocabulary)
    return {
      'label': tf.gather(labels, tf.argmax(scores, axis=1)),
      'scores': scores,
      'classes': tf.tile(labels[tf.newaxis, :], [tf.shape(scores)[0], 1]),
    }

  def build_evaluation(
    self, inputs: dict[str, Any], outputs: dict[str, Any]
  ) -> dict[str, Any]:
    model = self._model()
    metrics = model.compiled_metrics
    if metrics is None:
      return {}
    predictions = self._predictions(outputs)
    labels, y_true = self._target(inputs, predictions)
    metrics.update_state(
      y_true,
      predictions,
      sample_weight=_training.example_weights(self, inputs, labels),
    )
    # The evaluation loss is the engine's ('loss').
    return {m.name: m for m in metrics.metrics if m.name != 'loss'}

  # Helpers.

  def _model(self) -> tf_keras.Model:
    if self._keras_model is None:
      self._keras_model = _checked(self.build_model(self._inputs()), self)
    return self._keras_model

  def _feature_names(self) -> list[str]:
    features = self.dataset.features
    if features is None:
      raise ConfigurationError(
        f'{type(self).__name__} needs a feature set (--data-features): '
        "the model's inputs are its transformed features."
      )
    return [f.name for f in features if f.type not in _NOT_INPUTS]

  def _inputs(self) -> dict[str, Any]:
    spec = self.dataset.transform_output.transformed_feature_spec()
    inputs = {}
    for name in self._feature_names():
      feature = spec[name]
      if isinstance(feature, tf.io.FixedLenFeature):
        shape = tuple(feature.shape) or (1,)
        inputs[name] = tf_keras.Input(
          shape=shape, dtype=feature.dtype, name=name
        )
      else:
        inputs[name] = tf_keras.Input(
          shape=(None,), dtype=feature.dtype, sparse=True, name=name
        )
    return inputs

  def _model_inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
    values = {}
    for name in self._feature_names():
      value = inputs[name]
      if not isinstance(value, tf.SparseTensor) and value.shape.rank == 1:
        # One value per instance: the (1,) of Keras' Input.
        value = value[:, tf.newaxis]
      values[name] = value
    return values

  def _target_name(self) -> str | None:
    target = self.dataset.features.target
    return None if target is None else target.name

  def _vocabulary(self) -> list[str]:
    name = self._target_name()
    if name is None:
      return []
    return [str(v) for v in self.dataset.transformed_features[name].vocabulary]

  def _target(
    self, inputs: dict[str, Any], predictions: Any
  ) -> tuple[Any, Any]:
    """`(labels or None, y_true)`: y_true shaped as Keras' losses want."""
    name = self._target_name()
    if name is None:
      raise ConfigurationError(
        f'{type(self).__name__} needs one feature of type target in the '
        'feature set.'
      )
    value = inputs[name]
    labels = value if self._vocabulary() else None
    y_true = (
      tf.maximum(value, 0) if labels is not None else tf.cast(value, tf.float32)
    )
    if predictions.shape.rank == 2 and _width(predictions) == 1:
      # One output unit (regression, a sigmoid): [B, 1] targets.
      y_true = tf.cast(y_true[:, tf.newaxis], predictions.dtype)
    return labels, y_true

  def _from_logits(self) -> bool:
    loss = self._model().loss
    if isinstance(loss, tf_keras.losses.Loss):
      return bool(loss.get_config().get('from_logits', False))
    return False

  def _loss_function(self) -> Callable[..., Any]:
    loss = self._model().loss
    if isinstance(loss, tf_keras.losses.Loss):
      # Per-example values; reduced here, as the engine needs.
      return loss.call
    return tf_keras.losses.get(loss)

  def _scores(self, inferences: Any, classes: int) -> Any:
    width = _width(inferences)
    logits = self._from_logits()
    if width == classes:
      return tf.nn.softmax(inferences) if logits else inferences
    if width == 1 and classes == 2:
      p = tf.sigmoid(inferences) if logits else inferences
      return tf.concat([1.0 - p, p], axis=1)
    raise ConfigurationError(
      f'The model of {type(self).__name__} outputs {width} values per '
      f'instance; a classifier of the {classes} classes of target '
      f'{self._target_name()!r} outputs {classes} (one per class)'
      + (' or 1 (a sigmoid)' if classes == 2 else '')
      + '.'
    )

  def _predictions(self, outputs: dict[str, Any]) -> Any:
    """The model's own output, read back from `build_output`'s."""
    if 'scores' not in outputs:
      value = outputs.get('value')
      if value is None:
        return tf.nest.flatten(outputs)[0]
      return (
        value[:, tf.newaxis]
        if self._output_width == 1 and value.shape.rank == 1
        else value
      )
    scores = outputs['scores']
    logits = self._from_logits()
    if self._output_width == 1:
      p = tf.clip_by_value(scores[:, 1:], _EPSILON, 1.0 - _EPSILON)
      return tf.math.log(p) - tf.math.log(1.0 - p) if logits else scores[:, 1:]
    # log(softmax(z)) differs from z by a constant: the same softmax.
    return tf.math.log(tf.maximum(scores, _EPSILON)) if logits else scores


def _width(tensor: Any) -> int:
  width = tensor.shape[-1] if tensor.shape.rank else 1
  return 1 if width is None else int(width)


def _per_example(function: Callable[..., Any], y_true: Any, y_pred: Any) -> Any:
  """Each example's loss, a [B] tensor (later axes averaged, as Keras)."""
  losses = tf.cast(function(y_true, y_pred), tf.float32)
  if losses.shape.rank and losses.shape.rank > 1:
    losses = tf.reduce_mean(losses, axis=list(range(1, losses.shape.rank)))
  return losses


def _checked(model: Any, builder: KerasModelBuilder) -> tf_keras.Model:
  """`model`, or ConfigurationError saying what build_model must return."""
  where = f'{type(builder).__name__}.build_model'
  if not isinstance(model, tf_keras.Model):
    raise ConfigurationError(
      f'{where} must return a tf_keras.Model (Keras 2: `import tf_keras`, '
      'or tf.keras when tensorfx is imported before TensorFlow; Keras 3 '
      'cannot train under parameter servers or several workers). Received: '
      f'{type(model).__module__}.{type(model).__qualname__}'
    )
  if (
    getattr(model, 'optimizer', None) is None
    or getattr(model, 'loss', None) is None
  ):
    raise ConfigurationError(
      f'{where} must return a compiled model: call model.compile('
      'optimizer=..., loss=..., metrics=[...]) before returning it. '
      f'Received: model {model.name!r}, not compiled (or compiled '
      'without a loss).'
    )
  if isinstance(model.loss, (dict, list, tuple)):
    raise ConfigurationError(
      f'{where}: models with several outputs (a loss per output) are not '
      'supported; return a model with one output. Received: '
      f'loss={model.loss!r}'
    )
  return model
