"""The ModelBuilder of a `train_from_params` job, made of its functions.

Each hook calls what the params dictionaries give:

| hook | from |
| --- | --- |
| `build_input` | the source's data function (`data_params['func']`) |
| `build_inference` | `model_params['func']` (its variables kept by a `VariableStore`); `train_params['targets']` in training steps |
| `build_training` | `loss_params`, and the optimizer |
| `build_optimizer` | `optimizer_params` with `learning_rate_params` |
| `build_init` | `load_params`: a fresh experiment loads another's checkpoint |
| `build_callbacks` | the experiment's record (see `_record`) |

Everything else is the engine's, as for any builder.
"""

import dataclasses
import types
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple, cast

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.tfutils import _fingerprint
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _optimizer
from tensorfx.tfutils import _train_loop
from tensorfx.tfutils import _variables
from tensorfx.training import internal as _training
from tensorfx.training.internal import ModelBuilder
from tensorfx.training.internal import PredictionInterface
from tensorfx.training.internal import TrainingInterface


@dataclasses.dataclass(frozen=True)
class Spec:
  """What a `ParamsBuilder` is made of (read from the params dicts).

  Attributes:
    model: the `_functions.Model`.
    loss: the `_functions.Loss`.
    learning_rate: `learning_rate_params` (`_optimizer.LearningRate`);
      None in testing.
    optimizer: `optimizer_params` (`Params`); None in testing.
    train_targets: `train_params['targets']` (a `_functions.Function`).
    train_loop: `train_params['train_loop']` (a `_functions.Function`).
    warm_start: what a fresh experiment loads: `(checkpoint, load
      settings)`, or None.
    recorded: the fingerprint the experiment recorded, or None.
    exp_id: the experiment id.
    callbacks: the callbacks `build_callbacks` returns.
  """

  model: _functions.Model
  loss: _functions.Loss
  learning_rate: Any = None
  optimizer: Any = None
  train_targets: Optional[_functions.Function] = None
  train_loop: Optional[_functions.Function] = None
  warm_start: Optional[Tuple[str, Any]] = None
  recorded: Optional[dict] = None
  exp_id: str = ''
  callbacks: Tuple[Any, ...] = ()

  @property
  def testing(self) -> bool:
    """Whether the builder only evaluates (`test_from_params`)."""
    return self.optimizer is None


class ParamsBuilder(ModelBuilder):
  """A `ModelBuilder` made of tfutils-style functions.

  Example:
    >>> builder = ParamsBuilder(args, dataset, spec)
    >>> ModelTrainer().train(builder, output)

  Args:
    args: the job's `ModelArguments` (made from the params dicts).
    dataset: the `FunctionDataSet`.
    spec: the `Spec`.
  """

  def __init__(self, args: Any, dataset: Any, spec: Spec) -> None:
    super().__init__(args, dataset)
    self._spec = spec
    self.model_variables = _variables.VariableStore("model_params['func']")
    # Run state, outside the checkpoint: the train targets' last values
    # are not part of the model.
    self._run = types.SimpleNamespace(
      config=None,
      wrapped=None,
      targets=None,
      input_layer=None,
      warm_started=None,
    )
    # A builder that only evaluates restores the model from a training
    # checkpoint, which holds evaluation metrics only if that training
    # validated: the engine keeps them out of this builder's checkpoint.
    _training.builder.engine_of(self).evaluation_checkpointed = not spec.testing

  @property
  def spec(self) -> Spec:
    """The `Spec` the builder was made of."""
    return self._spec

  @property
  def model_config(self) -> Any:
    """The dict the model function returned beside its outputs, or None."""
    return self._run.config

  @property
  def warm_started(self) -> Optional[Dict[str, Any]]:
    """What `build_init` loaded (`_training.checkpoints.warm_start`'s dict), or None."""
    return self._run.warm_started

  @property
  def transform_layer(self) -> Any:
    """Parsed raw instances to model inputs (there is no transform graph)."""
    if self._run.input_layer is None:
      self._run.input_layer = self.dataset.input_layer()
    return self._run.input_layer

  def build_callbacks(self) -> List[Any]:
    return list(self._spec.callbacks)

  def build_input(
    self, source: str, batch: int, epochs: Optional[int], shuffle: bool
  ) -> tf.data.Dataset:
    return self.dataset[source].read(batch, epochs=epochs, shuffle=shuffle)

  def build_inference(self, inputs: Dict[str, Any], training: bool) -> Any:
    outputs, config = self.model_variables.call(
      self._spec.model, inputs, training
    )
    if self._run.wrapped is None:
      self._run.config = _keys.describe(config)
      self._run.wrapped = not isinstance(outputs, dict)
    if self._spec.train_targets is not None:
      self._train_targets(inputs, outputs, training)
    return outputs

  def build_output(self, inferences: Any) -> Dict[str, Any]:
    if isinstance(inferences, dict):
      return dict(inferences)
    return _functions.Wrapped(outputs=inferences)

  def build_training(
    self, global_steps: Any, inputs: Dict[str, Any], inferences: Any
  ) -> Tuple[Any, Any]:
    loss = self._loss(inputs, inferences)
    return loss, self.optimizer

  def build_optimizer(self) -> Any:
    spec = self._spec
    if spec.testing:
      return _NoOptimizer()
    rate = spec.learning_rate.schedule(self.global_step)
    return _optimizer.optimizer(spec.optimizer, rate)

  def build_init(self, restored: bool = False) -> None:
    if restored or self._spec.warm_start is None:
      return
    checkpoint, load = self._spec.warm_start
    variables = [
      v
      for v in _engine_variables(self)
      if load.select is None
      or load.select(_training.checkpoints.variable_name(v))
    ]
    if not variables:
      raise ConfigurationError(
        f"load_params['to_restore'] ({load.to_restore!r}) selects none of "
        "the model's variables: "
        f'{", ".join(_training.checkpoints.variable_name(v) for v in _engine_variables(self))}'
      )
    self._run.warm_started = _training.checkpoints.warm_start(
      variables,
      checkpoint,
      rename=load.rename,
      global_step=self.global_step if load.restore_global_step else None,
    )
    logger.info('Loaded %s into %s', checkpoint, self._spec.exp_id)

  def build_training_graph(self) -> TrainingInterface:
    training = super().build_training_graph()
    if not self._spec.testing:
      _fingerprint.check(
        self._spec.recorded, self.fingerprint(), self._spec.exp_id, 'its record'
      )
    return training

  def build_prediction_graph(self) -> PredictionInterface:
    try:
      return super().build_prediction_graph()
    except KeyError as e:
      raise ConfigurationError(
        f"model_params['func'] reads the input {e}, which the exported "
        'model does not take: it takes every input but the targets '
        "(loss_params['pred_targets']). Read the targets in the loss and "
        'the target functions only.'
      ) from None

  def fingerprint(self) -> Dict[str, Any]:
    """The model's fingerprint (see `_fingerprint`)."""
    return _fingerprint.fingerprint(
      self._spec.model, self.model_variables.created
    )

  def wrap_train_steps(
    self, steps: Callable[[int], Any]
  ) -> Callable[[int], Any]:
    """The engine's steps, driven by `train_params['train_loop']` if any.

    Called by the engine once per run (see `_train_loop`).
    """
    function = self._spec.train_loop
    if function is None:
      return steps
    names = ['loss', 'learning_rate', 'optimizer'] + sorted(
      self._run.targets or ()
    )

    def values(result: Any) -> Dict[str, Any]:
      rate = None
      try:
        rate = float(self.optimizer.learning_rate)
      except (AttributeError, TypeError, ValueError):
        pass
      return {
        'loss': result.loss,
        'learning_rate': rate,
        'optimizer': None,
        **self.train_target_values(),
      }

    return _train_loop.wrap(steps, function, values, names)

  def train_target_values(self) -> Dict[str, float]:
    """The extra training targets of the last step: name -> float."""
    if self._run.targets is None:
      return {}
    return {name: float(v.numpy()) for name, v in self._run.targets.items()}

  def _loss(self, inputs: Dict[str, Any], outputs: Any) -> Any:
    loss = self._spec.loss
    if (
      self._spec.testing
      and tf.executing_eagerly()
      and any(t not in inputs for t in loss.pred_targets)
    ):
      # Testing without targets in the data: the variables are made with
      # no loss; a validation target that needs one says so when traced.
      return tf.constant(0.0)
    return loss(inputs, outputs)

  def _train_targets(
    self, inputs: Dict[str, Any], outputs: Any, training: bool
  ) -> None:
    # Called by build_inference only when the spec has train targets.
    function = cast(_functions.Function, self._spec.train_targets)
    if self._run.targets is None:
      # The first (eager) call: the targets' names make their variables.
      values = _functions.call_targets(function, inputs, outputs)
      reserved = sorted(set(values) & set(_functions.RESERVED_TARGETS))
      if reserved:
        raise ConfigurationError(
          f"{function.where}['func'] returns {reserved}, names tfutils "
          'keeps for its own targets; rename them.'
        )
      self._run.targets = {
        name: tf.Variable(
          0.0,
          trainable=False,
          name=f'train_{name}',
          synchronization=tf.VariableSynchronization.ON_WRITE,
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )
        for name in values
      }
      return
    if not training:
      return
    values = _functions.call_targets(function, inputs, outputs)
    for name, variable in self._run.targets.items():
      if name not in values:
        raise ConfigurationError(
          f"{function.where}['func'] returned no {name!r} in a training "
          'step (its first call did): return the same names every time.'
        )
      # tfutils recorded the mean of a target that is not a number.
      variable.assign(tf.reduce_mean(tf.cast(values[name], tf.float32)))


class _NoOptimizer:
  """The optimizer of a builder that only evaluates: it has no state.

  A real optimizer's slots would have to match the checkpoint's, which
  `test_from_params` does not know (tfutils' test took no
  optimizer_params).
  """

  variables = ()

  def apply_gradients(self, grads_and_vars: Any) -> NoReturn:
    del grads_and_vars
    raise ConfigurationError('test_from_params does not train.')


def _engine_variables(builder: ParamsBuilder) -> List[Any]:
  """The variables a load may set: the model's own."""
  return list(builder.model_variables.created)
