"""BuilderBase: what a ModelBuilder is made with, and reads of its run.

`ModelBuilder` (`_builder.py`) is the hooks a user fills in. This base
holds what those hooks read: the job's arguments, dataset and settings
and, from the builder's `EngineState`, the strategy, the global step and
the transform layer. It also holds the one seam between a builder and the
trainer that runs it (`engine_of`, `made_optimizers`).
"""

from typing import Any, List, Optional

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.training import _seed
from tensorfx.training import _settings
from tensorfx.training import _state
from tensorfx.training._arguments import parsedjob as _parsedjob


class BuilderBase(tf.Module):
  """The job's arguments, dataset and settings, and the run's state.

  The base of `ModelBuilder`; see it for the arguments.
  """

  def __init__(self, args: Any, dataset: Any = None) -> None:
    super().__init__(name=_module_name(type(self).__name__))
    self._args = _parsedjob.arguments_of(args)
    self._dataset = dataset
    self._settings: Optional[_settings.Settings] = None
    # The engine's state of this builder: read here, passed by the trainer.
    self._engine = _state.EngineState()
    # Before any hook creates a variable: initializers draw from the seed.
    _seed.set_seed(self.settings.loop.seed)
    if self.settings.data.vocabularies and dataset is not None:
      # --data-vocabulary (Gematria's --gematria_tokens_file).
      dataset.use_vocabulary_files(dict(self.settings.data.vocabularies))
    self._optimizer = None
    self._sparse_optimizer = None

  @property
  def args(self) -> Any:
    """The `ModelArguments` of the job."""
    return self._args

  @property
  def dataset(self) -> Any:
    """The `DataSet` used for training and evaluation.

    Raises:
      ConfigurationError: the builder was made without one and none was
        given since (`use_dataset`, or `ModelTrainer().train(builder,
        dataset, output)`).
    """
    if self._dataset is None:
      raise ConfigurationError(
        f'{type(self).__name__} has no dataset: pass it to the builder '
        '(Builder(args, dataset)) or to the trainer (ModelTrainer().train('
        'builder, dataset, output)).'
      )
    return self._dataset

  def use_dataset(self, dataset: Any) -> None:
    """Gives the builder its dataset, before its graphs are built.

    What `ModelTrainer().train(builder, dataset, output)` does for a
    builder made without one, as the original tensorfx's last version
    did.

    Example:
      >>> builder = nn.FeedForwardClassification(args)
      >>> builder.use_dataset(dataset)

    Raises:
      ConfigurationError: the graphs were built with another dataset.
    """
    if dataset is self._dataset:
      return
    if self._engine.strategy is not None:
      raise ConfigurationError(
        f'{type(self).__name__} was built with another dataset; make a new '
        'builder to train on this one.'
      )
    self._dataset = dataset

  @property
  def settings(self) -> _settings.Settings:
    """The job's typed settings, read from `args` once, on first use.

    Once the graphs are built, the engine's: with `--batch-size all`
    replaced by the training data's size.
    """
    if self._engine.settings is not None:
      return self._engine.settings
    if self._settings is None:
      self._settings = _settings.Settings.from_args(self._args)
    return self._settings

  @property
  def strategy(self) -> tf.distribute.Strategy:
    """The `tf.distribute.Strategy` the graphs were built under."""
    if self._engine.strategy is None:
      raise ConfigurationError(
        'strategy is available once build_graph_interfaces(config) has '
        'been called.'
      )
    return self._engine.strategy

  @property
  def global_step(self) -> Any:
    """The int64 global step variable (None before the graphs are built).

    Kept by the engine, and checkpointed with the model.
    """
    return self._engine.global_step

  @property
  def transform_layer(self) -> Any:
    """The tf.Transform layer that maps raw features to model inputs."""
    # Held by the engine, outside checkpoints: the transform graph is
    # exported with the model but is not part of the model's checkpoints.
    run = self._engine.run
    if run.worker_layer is not None:
      # Building a parameter-server worker's dataset: its tables must be
      # the copies the strategy places on each worker.
      return run.worker_layer
    if run.transform_layer is None:
      run.transform_layer = (
        self._dataset.transform_output.transform_features_layer()
      )
    return run.transform_layer


def engine_of(builder: BuilderBase) -> _state.EngineState:
  """The engine state of a builder the trainer runs.

  The one seam between the user's builder and the engine: a run takes the
  state here once and passes it on (to the engine, the evaluation, the
  callbacks' `RunContext`).
  """
  return builder._engine  # noqa: SLF001  (the seam itself)


def made_optimizers(builder: BuilderBase) -> List[Any]:
  """The optimizers the builder has made itself, without making any."""
  made = (builder._optimizer, builder._sparse_optimizer)  # noqa: SLF001
  return [optimizer for optimizer in made if optimizer is not None]


def _module_name(name):
  # tf.Module names must be Python identifiers.
  return ''.join(c if c.isalnum() or c == '_' else '_' for c in name) or 'model'
