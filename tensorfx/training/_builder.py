"""ModelBuilder: the hooks a user fills in to define a model."""

from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf

from tensorfx.training import _builderbase
from tensorfx.training import _interfaces
from tensorfx.training import _optimizers
from tensorfx.training._checkpoints import restore as _restore


class ModelBuilder(_builderbase.BuilderBase):
  """Builds the training, evaluation and prediction graphs of a model.

  Subclass it and fill in the hooks; `ModelTrainer` calls them. A builder
  is a `tf.Module`: every variable its hooks create (layers, optimizer
  slots, metrics) is tracked, checkpointed and exported.

  Hooks run in two ways. First the trainer calls `build_inference`,
  `build_training`, `build_output` and `build_evaluation` once eagerly,
  under the distribution strategy's scope: create the variables (layers,
  the optimizer, metric objects) then, keep them as attributes, and reuse
  them on every later call. Then the same hooks are traced into
  `tf.function`s (the training step, the evaluation step, the serving
  signatures) with autograph, so Python `if`/`for` over tensors works in
  them; traced code runs many times, the Python in it once per trace.

  Hooks, in the order the trainer first calls them:

  - `build_callbacks()`: extra training callbacks.
  - `build_input(source, batch, epochs, shuffle)`: the dataset of a source.
  - `build_inference(inputs, training)`: the model's forward pass.
  - `build_training(global_steps, inputs, inferences)`: `(loss, optimizer)`.
  - `build_output(inferences)`: the prediction outputs.
  - `build_evaluation(inputs, outputs)`: metric objects, updated.
  - `build_init(restored)`: initialization of a fresh model, or (when it
    takes `restored`) of a restored one's local state.

  `build_optimizer()` and `build_sparse_optimizer()` make the optimizers
  on first use of `self.optimizer` and `self.sparse_optimizer`. The graph
  builders (`build_graph_interfaces` and the three it calls) and
  `build_input` have defaults that run the engine; override them only to
  replace it. The trainer calls a builder's own version only where it has
  one; the defaults run in the engine directly.

  Example:
    >>> class Linear(ModelBuilder):
    ...   def build_inference(self, inputs: Dict[str, Any], training: bool) -> Any:
    ...     if not hasattr(self, 'dense'):
    ...       self.dense = tf_keras.layers.Dense(1)
    ...     return self.dense(inputs['X'])
    ...   def build_training(self, global_steps: tf.Variable,
                     inputs: Dict[str, Any],
                     inferences: Any) -> Tuple[Any, Any]:
    ...     loss = tf.reduce_mean(tf.square(inferences[:, 0] - inputs['Y']))
    ...     return loss, self.optimizer

  Args:
    args: the `ModelArguments` of the job (or what `parse(parse_job=True)`
      returned).
    dataset: the `DataSet` to train and evaluate on; may be given later,
      to `ModelTrainer().train(builder, dataset, output)`.
  """

  # The evaluation result that ranks models: (name, 'min' or 'max'). The
  # default of --best-metric: which checkpoints are the best, which model
  # the evaluator exports to best_model/, what tuning reports.
  evaluation_metric = ('loss', 'min')

  @property
  def optimizer(self) -> Any:
    """The optimizer, made once by `build_optimizer()`."""
    if self._optimizer is None:
      self._optimizer = self.build_optimizer()
    return self._optimizer

  @property
  def sparse_optimizer(self) -> Any:
    """The optimizer of embedding tables, made once by `build_sparse_optimizer()`."""
    if self._sparse_optimizer is None:
      self._sparse_optimizer = self.build_sparse_optimizer()
    return self._sparse_optimizer

  # Hooks.

  def build_callbacks(self) -> List[Any]:
    """Returns the model's own training callbacks.

    Called once per run, eagerly, before training begins, in every process
    that trains or evaluates (the chief, each worker of a multi-worker
    cluster, the evaluator task, `tensorfx evaluate`). The callbacks run
    after the built-in ones and after those given to `ModelTrainer`; see
    `tensorfx.training.Callback` for when each of their methods runs.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_callbacks(self):
      ...     return [tensorfx.training.EarlyStopping(patience=3)]

    Returns:
      A list of `tensorfx.training.Callback`s (default: none).
    """
    return []

  def build_input(
    self, source: str, batch: int, epochs: Optional[int], shuffle: bool
  ) -> tf.data.Dataset:
    """Builds the input pipeline of a data source.

    Called eagerly (outside `tf.function`), on the chief or the evaluator:
    for `train` once per run (under parameter servers its result is
    traced once and sent to every worker); for `eval` and each validation
    target's source once per validation, a fresh pass each time. The
    default reads the source through the dataset, keeps the records that
    match `--data-filter FIELD=REGEX` (if given), and applies the transform
    graph per batch; for `train` over several epochs it keeps the
    transformed batches in memory after the first (`--cache`). An
    override decides its own caching (`--cache` applies to the default).

    Args:
      source: the name of the dataset's source ('train', 'eval', or a
        validation target's).
      batch: the number of instances per batch.
      epochs: the number of passes over the data (None: repeat forever).
      shuffle: whether to shuffle.

    Returns:
      A `tf.data.Dataset` of dicts of tensors keyed by feature name.
    """
    return self._engine.build_input(self, source, batch, epochs, shuffle)

  def build_inference(self, inputs, training):
    """Builds the inference (forward pass) of the model.

    Called once eagerly (`training=False`) to create the variables; then
    traced: once into the training step (`training=True`), once into the
    evaluation step, once into the serving model the three signatures
    share.
    Traced steps run on every replica (mirrored) or every worker
    (parameter servers).

    Args:
      inputs: a dict of input tensors keyed by feature name.
      training: whether this is the training graph (dropout, batch norm).

    Returns:
      The inference values (a tensor or a structure of tensors), passed to
      `build_training` and `build_output`.
    """
    raise NotImplementedError(
      f'{type(self).__name__} must implement build_inference(inputs, '
      'training), returning the inference values.'
    )

  def build_training(self, global_steps, inputs, inferences):
    """Builds the loss of a training step.

    Called once eagerly, then traced into the training step (under a
    gradient tape, on every replica or worker) and into the evaluation
    step (whose `loss` metric is this loss; the optimizer is ignored
    there).

    Args:
      global_steps: the int64 global step variable.
      inputs: the dict of input tensors.
      inferences: what `build_inference` returned.

    Returns:
      `(loss, optimizer)`: the scalar mean loss over the (per-replica) batch
      and the optimizer that applies its gradients (the same object on each
      call; `self.optimizer` is made for that).
    """
    raise NotImplementedError(
      f'{type(self).__name__} must implement build_training(global_steps, '
      'inputs, inferences), returning (loss, optimizer).'
    )

  def build_optimizer(self) -> Any:
    """Builds the optimizer, once, from the arguments' optimizer flags.

    Called on first use of `self.optimizer` (usually in the eager call of
    `build_training`), under the strategy's scope. The default follows
    `--optimizer` (Adam), `--learning-rate` (0.001 unless the arguments set
    another default), `--learning-rate-schedule` with `--warmup-steps`,
    and `--clip-norm` or `--clip-value`; see
    `tensorfx.training._optimizers`. Override it for another optimizer.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_optimizer(self):
      ...     return tf_keras.optimizers.Lion(learning_rate=1e-4)

    Returns:
      A `tf_keras.optimizers.Optimizer`.
    """
    return _optimizers.build_optimizer(self.settings.optimizer)

  def build_sparse_optimizer(self) -> Any:
    """Builds the optimizer of the builder's embedding tables, once.

    Called on first use of `self.sparse_optimizer`, eagerly, under the
    strategy's scope, when the builder holds `tensorfx.embeddings`
    tables without an optimizer of their own. The training step applies the
    tables' gradients (`tf.IndexedSlices` of the rows looked up) with it,
    and every other variable's with the optimizer `build_training` returns:
    one builder, two optimizers. The default follows
    `--embedding-optimizer` (lazy-adam) and `--embedding-learning-rate`
    (default `--learning-rate`); see `tensorfx.embeddings.EmbeddingArguments`.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_sparse_optimizer(self):
      ...     return tensorfx.embeddings.SparseAdagrad(learning_rate=0.05)

    Returns:
      A `tf_keras.optimizers.Optimizer`.
    """
    from tensorfx import embeddings

    return embeddings.build_sparse_optimizer(
      self._args, _optimizers.build_learning_rate(self._args)
    )

  def build_evaluation(
    self, inputs: Dict[str, Any], outputs: Dict[str, Any]
  ) -> Dict[str, Any]:
    """Builds the evaluation metrics and updates them with a batch.

    Called once eagerly (in replica context), then traced into the
    evaluation step, which runs for every evaluation batch on every
    replica. Create the metric objects on the first call and update the
    same objects on every call: the dict the first call returns is the one
    kept; the trainer reads `result()` after each evaluation pass and
    resets the metrics before the next. The evaluation loss is added by
    the trainer as `loss`.

    Args:
      inputs: the dict of input tensors.
      outputs: what `build_output` returned.

    Returns:
      A dict of `tf_keras.metrics.Metric` by name.
    """
    del inputs, outputs
    return {}

  def build_output(self, inferences: Any) -> Dict[str, Any]:
    """Builds the prediction outputs from the inference values.

    Called once eagerly, then traced into the evaluation step and into
    the serving model of the exported signatures.

    Args:
      inferences: what `build_inference` returned.

    Returns:
      A dict of output tensors (e.g. `label`, `scores`), batch-major.
    """
    if isinstance(inferences, dict):
      return dict(inferences)
    return {'outputs': inferences}

  def build_init(self, restored: bool = False) -> None:
    """Initializes a fresh model, or a restored one's local state.

    Its two uses (the original tensorfx's init and local init): with
    `restored=False`, a fresh model before its first training step; with
    `restored=True`, after a previous model (the job's own checkpoint) was
    restored, for what checkpoints do not hold (caches, lookup tables,
    counters kept outside the model). An override without the `restored`
    parameter is only called for a fresh model, as before.

    Called eagerly, once per run, after the variables exist and only when
    no checkpoint of the job's own is being resumed; in every training
    process (the chief, each worker of a multi-worker cluster), never in
    the evaluator or `tensorfx evaluate`/`export`. The default
    warm-starts from `--warm-start PATH` when given (by variable name,
    filtered by `--restore-pattern`, renamed by `--restore-rename`, with
    the global step when `--restore-global-step`; see
    `tensorfx.training._checkpoints.restore`) and otherwise leaves the initializers'
    values. Override it to initialize another way; call
    `super().build_init()` to keep the warm start.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_init(self, restored=False):
      ...     super().build_init(restored)
      ...     if not restored:
      ...       self.embedding.embeddings.assign(pretrained_vectors)
      ...     self.seen_this_run.assign(0)  # not in checkpoints' meaning

    Args:
      restored: whether a previous model was just restored (then the
        default does nothing: the warm start is for fresh models).
    """
    restore = self.settings.restore
    if restored or not restore.warm_start:
      return
    _restore.warm_start(
      self._engine.warm_start_variables(
        self, _builderbase.made_optimizers(self)
      ),
      restore.warm_start,
      pattern=restore.pattern,
      rename=restore.rename,
      global_step=self.global_step if restore.global_step else None,
    )

  # Graph builders: the engine by default.

  def build_graph_interfaces(
    self, config: Any
  ) -> Tuple[
    _interfaces.TrainingInterface,
    Optional[_interfaces.EvaluationInterface],
    Any,
  ]:
    """Builds the training, evaluation and prediction interfaces.

    Called eagerly, once per process, by the trainer (every role but the
    parameter servers), the evaluator and `tensorfx evaluate`/`export`.
    Creates the strategy from `config`, then every variable under its
    scope, then the three interfaces with `build_training_graph()`,
    `build_evaluation_graph()` and `build_prediction_graph()`.

    Args:
      config: the training `Configuration`.

    Returns:
      A tuple `(training, evaluation, prediction)` of graph interfaces; the
      prediction interface is traced when first used (once training has
      started, and at export).
    """
    return self._engine.build_graph_interfaces(self, config)

  def build_training_graph(self) -> _interfaces.TrainingInterface:
    """Builds the training interface; see `TrainingInterface`.

    Called once, under the strategy's scope: builds the training input,
    creates the variables (the eager hook calls), then traces the training
    step and the loop that runs it for the strategy.
    """
    return self._engine.build_training_graph(self)

  def build_evaluation_graph(self) -> Optional[_interfaces.EvaluationInterface]:
    """Builds the evaluation interface; see `EvaluationInterface`.

    Called once, under the strategy's scope. Returns None when there is
    nothing to evaluate (no `eval` source and no validation target).
    """
    return self._engine.build_evaluation_graph(self)

  def build_prediction_graph(self) -> _interfaces.PredictionInterface:
    """Builds the prediction interface over raw instances.

    Called once, under the strategy's scope, on the process that exports.
    Three signatures share one model: `serving_default` takes CSV lines
    (`csv`, in schema order, target columns optional), `predict_examples`
    serialized tf.Example protos (`examples`), and `predict_features` one
    tensor per raw field.
    """
    return self._engine.build_prediction_graph(self)


# What a builder may replace that the engine otherwise does itself.
ENGINE_DEFAULTS = (
  'build_input',
  'build_graph_interfaces',
  'build_training_graph',
  'build_evaluation_graph',
  'build_prediction_graph',
)


def overrides(builder: 'ModelBuilder') -> frozenset:
  """Which of `ENGINE_DEFAULTS` the builder's class replaces.

  The trainer calls a builder's own version only where there is one; the
  others run in the engine directly.
  """
  return frozenset(
    name
    for name in ENGINE_DEFAULTS
    if getattr(type(builder), name) is not getattr(ModelBuilder, name)
  )
