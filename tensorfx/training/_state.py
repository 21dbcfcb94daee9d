"""EngineState: what the engine keeps of a run, apart from the user's builder.

The user's `ModelBuilder` holds what its hooks make (layers, metrics, its
optimizer); the engine's own state (the strategy, the global step, the
optimizer `build_training` returned, the evaluation metrics, the gradient
accumulator, the loss scale, the settings with `--batch-size all`
resolved, and run-time objects kept out of checkpoints) lives here, one
`EngineState` per builder. The builder holds it privately, for its
read-only properties (`strategy`, `global_step`, `settings`), and reaches
the engine only through it: its default `build_input`, warm start and
graph builders call the engine's entry points here. The trainer takes it
from the builder once (`_builderbase.engine_of`) and passes it to the engine,
the evaluation and the callbacks as an argument: nothing looks it up by the
user's object.

Checkpoints hold both under `model` (`checkpointed`): the builder's own
variables and, beside them, the engine's, under the names earlier releases
gave them as attributes of the builder (`global_step`,
`_training_optimizer`, `_evaluation_metrics`, `_accumulator`,
`_loss_scale_optimizer`). The layout is unchanged, so checkpoints restore
across releases both ways.
"""

import types
from typing import Any, Dict, Optional

import tensorflow as tf

from tensorfx.training._engine import evaluation_graph as _evaluation_graph
from tensorfx.training._engine import graphs as _graphs
from tensorfx.training._engine import input as _input
from tensorfx.training._engine import serving as _serving
from tensorfx.training._engine import training_graph as _training_graph
from tensorfx.training._engine import variables as _variables


class _Tracked(tf.Module):
  """The engine's checkpointed objects, under the release's names."""

  def __init__(self) -> None:
    super().__init__(name='engine')
    self.global_step: Any = None
    self._training_optimizer: Any = None
    self._accumulator: Any = None
    self._loss_scale_optimizer: Any = None


def _tracked(name: str, doc: str) -> Any:
  """A property of `EngineState` kept in its checkpointed `_Tracked`."""
  return property(
    lambda self: getattr(self._tracked, name),
    lambda self, value: setattr(self._tracked, name, value),
    doc=doc,
  )


class EngineState:
  """The engine's state of one builder.

  Example:
    >>> state = EngineState()
    >>> state.global_step is None
    True

  Attributes:
    strategy: the `tf.distribute.Strategy` the graphs were built under.
    settings: the run's `Settings`, `--batch-size all` resolved (None
      until the run's data is ready: the builder's own are used).
    variables_created: whether the hooks' eager pass ran.
    run: run-time objects, never checkpointed nor exported: the transform
      layer, a parameter-server worker's copy of it, the cluster
      coordinator, the gradient norm variable, the evaluation loss metric,
      the `--cache` plan, the `--eval-slices` filter, and the steps that
      ran twice under parameter servers (`steps_again`).
  """

  def __init__(self) -> None:
    self.strategy: Optional[tf.distribute.Strategy] = None
    self.settings: Any = None
    self.variables_created = False
    # The builder's own replacements of the engine's defaults (set by the
    # run, `_builder.overrides`); None: call each through the builder.
    self.overrides: Optional[frozenset] = None
    self.evaluation_checkpointed = True
    self._tracked = _Tracked()
    self._metrics: Dict[str, Any] = {}
    self.run = types.SimpleNamespace(
      transform_layer=None,
      worker_layer=None,
      coordinator=None,
      gradient_norm=None,
      eval_loss=None,
      cache_plan=None,
      slice_filter=None,
      steps_again=0,
    )

  global_step = _tracked('global_step', 'The int64 global step variable.')
  training_optimizer = _tracked(
    '_training_optimizer', 'The optimizer `build_training` returned.'
  )
  accumulator = _tracked(
    '_accumulator',
    'The `GradientAccumulator` of `--accumulation-steps`, or None.',
  )
  loss_scale_optimizer = _tracked(
    '_loss_scale_optimizer',
    'The `LossScaleOptimizer` of `--precision mixed_float16`, or None.',
  )

  @property
  def evaluation_metrics(self) -> Dict[str, Any]:
    """The metrics `build_evaluation` returned, by name."""
    return self._metrics

  def keep_evaluation_metrics(self, metrics: Dict[str, Any]) -> None:
    """Keeps the evaluation metrics; checkpointed unless told otherwise.

    A builder that only evaluates (tfutils' `test_from_params`) restores
    a training checkpoint, which holds metrics only if that training
    validated: its metrics stay out (`evaluation_checkpointed`).
    """
    self._metrics = dict(metrics)
    if self.evaluation_checkpointed:
      # Under `_evaluation_metrics`, the release's name.
      self._tracked._evaluation_metrics = self._metrics  # noqa: SLF001

  # The engine's defaults of the builder's hooks of the same names: what
  # `ModelBuilder.build_graph_interfaces`, the graph builders it calls and
  # `build_input` do unless overridden.

  def build_graph_interfaces(self, builder: Any, config: Any) -> Any:
    """The training, evaluation and (deferred) prediction interfaces."""
    return _graphs.build_graph_interfaces(builder, self, config)

  def build_training_graph(self, builder: Any) -> Any:
    """The `TrainingInterface`."""
    return _training_graph.build(builder, self)

  def build_evaluation_graph(self, builder: Any) -> Any:
    """The `EvaluationInterface`, or None with nothing to evaluate."""
    return _evaluation_graph.build(builder, self)

  def build_prediction_graph(self, builder: Any) -> Any:
    """The `PredictionInterface`: the serving signatures."""
    return _serving.build(builder)

  def build_input(self, builder: Any, *source: Any) -> Any:
    """The transformed dataset of `(source, batch, epochs, shuffle)`."""
    return _input.read(builder, self, *source)

  def calls_builder(self, hook: str) -> bool:
    """Whether the engine calls the builder's `hook` or does it itself."""
    return self.overrides is None or hook in self.overrides

  def call(self, builder: Any, hook: str, *args: Any) -> Any:
    """`hook(*args)`: the builder's own where it has one, else the default."""
    if self.calls_builder(hook):
      return getattr(builder, hook)(*args)
    return getattr(self, hook)(builder, *args)

  def warm_start_variables(self, builder: Any, made_optimizers: Any) -> Any:
    """The model's variables a warm start assigns."""
    return _variables.warm_start_variables(builder, self, made_optimizers)


class _Checkpointed(tf.__internal__.tracking.Trackable):
  """A builder and its engine state as one checkpointed object.

  Its children are the builder's own and the engine's: what a checkpoint
  of a builder holding the engine's state as attributes held.
  """

  def __init__(self, builder: Any, state: EngineState) -> None:
    self._parts = (builder, state)

  def _trackable_children(
    self, save_type: Any = 'checkpoint', **kwargs: Any
  ) -> Dict[str, Any]:
    builder, state = self._parts
    # The builder's own children as checkpointing reads them: TensorFlow
    # has no public API for them (`tf.train.TrackableView.children` also
    # converts them).
    children = dict(builder._trackable_children(save_type, **kwargs))  # noqa: SLF001  (TensorFlow's checkpoint protocol)
    # The engine's, by their names in checkpoints.
    children.update(state._tracked._trackable_children(save_type, **kwargs))  # noqa: SLF001
    return children

  def _lookup_dependency(
    self, name: str, cached_dependencies: Any = None
  ) -> Any:
    children = cached_dependencies or self._trackable_children()
    return children.get(name)


def checkpointed(builder: Any, state: EngineState) -> Any:
  """What checkpoints save as `model`: the builder with the engine's state.

  Example:
    >>> tf.train.Checkpoint(model=checkpointed(builder, state)).write('/tmp/c')
  """
  return _Checkpointed(builder, state)
