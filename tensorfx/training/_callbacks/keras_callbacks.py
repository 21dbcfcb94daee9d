"""KerasCallback: a standard tf_keras callback inside a tensorfx run."""

from typing import Any

from tensorfx._logging import logger
from tensorfx.training._callbacks import base

# Keras callbacks whose work tensorfx does itself, and what does it.
_REPLACED = {
  'TensorBoard': 'tensorfx writes TensorBoard summaries to summaries/ '
  'in every run',
  'ModelCheckpoint': 'tensorfx checkpoints to checkpoints/ '
  '(--checkpoint-interval-steps, --keep-best-checkpoints)',
  'ProgbarLogger': 'tensorfx logs progress at --log-interval-steps',
  'History': 'tensorfx keeps the metrics in job.yaml and summaries/',
}
# Callbacks that write files: on the chief only.
_CHIEF_ONLY = ('CSVLogger', 'BackupAndRestore')


def is_keras_callback(value: Any) -> bool:
  """Whether `value` is a tf_keras (Keras 2) callback."""
  return any(
    cls.__name__ == 'Callback' and cls.__module__.split('.')[0] == 'tf_keras'
    for cls in type(value).__mro__
  )


class KerasCallback(base.Callback):
  """Runs a standard `tf_keras` callback in tensorfx's callback list.

  A Keras callback given to `ModelTrainer(callbacks=...)` or returned by
  `build_callbacks()` is wrapped in one of these by itself. What Keras
  calls an epoch is here the span between two validations
  (`--eval-interval-steps`): `on_epoch_end` runs after each validation,
  with the last training `loss` and the validation metrics as `val_NAME`
  (`val_loss`, `val_accuracy`), and the next epoch begins; a batch is a
  log interval (`--log-interval-steps`), whose logs hold the last step's
  `loss`. The callback's `model` is the `KerasModelBuilder`'s Keras model,
  or, for other builders, a stand-in holding the training `optimizer`
  and `stop_training`; setting `model.stop_training` stops the run as
  `context.stop` does.

  Limits: `ReduceLROnPlateau` and `LearningRateScheduler` need an
  optimizer whose learning rate is a number (not a schedule);
  `BackupAndRestore` saves a tensorfx checkpoint at its `save_freq`
  (every epoch, or every N steps, checked at log intervals) and restores
  as every tensorfx run does (from `checkpoints/`, not its `backup_dir`);
  `TensorBoard`, `ModelCheckpoint`, `ProgbarLogger` and `History` are
  refused, tensorfx doing their work. Keras callbacks run in training
  processes only (not in the evaluator task or `tensorfx evaluate`), and
  `CSVLogger` and `BackupAndRestore` on the chief only.

  Example:
    >>> ModelTrainer(callbacks=[
    ...     tf_keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=2),
    ...     tf_keras.callbacks.CSVLogger('/tmp/epochs.csv'),
    ... ]).train(builder, output)

  Args:
    callback: a `tf_keras.callbacks.Callback`.

  Raises:
    TypeError: `callback` is not a tf_keras callback.
    ValueError: tensorfx does the callback's work itself.
  """

  def __init__(self, callback: Any) -> None:
    super().__init__()
    if not is_keras_callback(callback):
      raise TypeError(
        'KerasCallback wraps a tf_keras callback (Keras 2: `import '
        'tf_keras`; Keras 3 callbacks are not supported). Received: '
        f'{type(callback).__module__}.{type(callback).__qualname__}'
      )
    name = type(callback).__name__
    if name in _REPLACED:
      raise ValueError(
        f'The Keras callback {name} is not needed: {_REPLACED[name]}. '
        f'Received: {callback!r}'
      )
    self.callback = callback
    self._epoch = 0
    self._loss: float | None = None
    self._active = True
    self._backup = name == 'BackupAndRestore'
    self._saved_step = 0

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    context = self.context
    name = type(self.callback).__name__
    self._active = context.role == 'train' and (
      context.chief or name not in _CHIEF_ONLY
    )
    if not self._active:
      return
    self._saved_step = int(logs.get('step') or 0)
    # A builder of a Keras model (`tensorfx.models.KerasModelBuilder`)
    # hands the callback that model; any other, a view of itself.
    model = getattr(context.builder, 'keras_model', None)
    if model is None:
      model = _ModelView(context.builder, context.engine)
    model.stop_training = False
    self.callback.set_model(model)
    self.callback.set_params({'verbose': 0, 'epochs': None, 'steps': None})
    if self._backup:
      logger.info(
        'BackupAndRestore: tensorfx checkpoints to %s (save_freq=%s)'
        ' and resumes from there; backup_dir %s is not used',
        context.paths.get('checkpoints', 'checkpoints/'),
        self.callback.save_freq,
        self.callback.backup_dir,
      )
      return
    self.callback.on_train_begin({})
    self.callback.on_epoch_begin(self._epoch, {})
    self._check_stop()

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    if not self._active:
      return
    loss = logs.get('loss')
    self._loss = None if loss is None else float(loss)
    if self._backup:
      every = self.callback.save_freq
      if isinstance(every, int) and step - self._saved_step >= every:
        self._save(step)
      return
    self.callback.on_train_batch_end(step, {'loss': self._loss})
    self._check_stop()

  def on_evaluate_end(self, step: int, results: Any) -> None:
    if not self._active:
      return
    if self._backup:
      if self.callback.save_freq == 'epoch':
        self._save(step)
      return
    logs = {} if self._loss is None else {'loss': self._loss}
    for name, value in results.primary.items():
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        logs[f'val_{name}'] = float(value)
    self.callback.on_epoch_end(self._epoch, logs)
    self._epoch += 1
    if not self._check_stop():
      self.callback.on_epoch_begin(self._epoch, {})
      self._check_stop()

  def on_train_end(self, logs: dict[str, Any]) -> None:
    if not self._active or self._backup:
      return
    self.callback.on_train_end(
      {} if self._loss is None else {'loss': self._loss}
    )

  def _save(self, step: int) -> None:
    self._saved_step = step
    self.context.save_checkpoint()

  def _check_stop(self) -> bool:
    """Passes the Keras model's `stop_training` on to the run."""
    if getattr(self.callback.model, 'stop_training', False):
      self.context.stop(
        f'{type(self.callback).__name__} set model.stop_training'
      )
      return True
    return False


class _ModelView:
  """What a Keras callback reads of a model that is not a Keras model."""

  def __init__(self, builder: Any, engine: Any) -> None:
    self._builder = builder
    self._engine = engine
    self.stop_training = False

  @property
  def optimizer(self) -> Any:
    optimizer = (
      None if self._engine is None else self._engine.training_optimizer
    )
    return optimizer if optimizer is not None else self._builder.optimizer

  def __repr__(self) -> str:
    return f'<the model of {type(self._builder).__name__}>'
