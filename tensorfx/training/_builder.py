"""ModelBuilder: the hooks a user fills in to define a model."""

import types

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.data import _csv
from tensorfx.data import _filters
from tensorfx.data import _listtext
from tensorfx.data import _transforms
from tensorfx.data import _validation
from tensorfx.data._features import FeatureType
from tensorfx.embeddings import _sharding
from tensorfx.embeddings import _table
from tensorfx.training import _interfaces
from tensorfx.training import _optimizers
from tensorfx.training import _restore


class ModelBuilder(tf.Module):
  """Builds the training, evaluation and prediction graphs of a model.

  Subclass it and fill in the hooks; `ModelTrainer` calls them. A builder
  is a `tf.Module`: every variable its hooks create (layers, optimizer
  slots, metrics) is tracked, checkpointed and exported. Hooks are traced
  into `tf.function`s and must create their variables (layers, optimizer,
  metric objects) on their first call only and reuse them afterwards; the
  trainer makes that first call eagerly, under the distribution strategy's
  scope, before anything is traced.

  Hooks, in the order the trainer first calls them:

  - `build_input(source, batch, epochs, shuffle)`: the dataset of a source.
  - `build_inference(inputs, training)`: the model's forward pass.
  - `build_training(global_steps, inputs, inferences)`: `(loss, optimizer)`.
  - `build_output(inferences)`: the prediction outputs.
  - `build_evaluation(inputs, outputs)`: metric objects, updated.
  - `build_init()`: initialization of a fresh (not resumed) model.

  Example:
    >>> class Linear(ModelBuilder):
    ...   def build_inference(self, inputs, training):
    ...     if not hasattr(self, 'dense'):
    ...       self.dense = tf_keras.layers.Dense(1)
    ...     return self.dense(inputs['X'])
    ...   def build_training(self, global_steps, inputs, inferences):
    ...     loss = tf.reduce_mean(tf.square(inferences[:, 0] - inputs['Y']))
    ...     return loss, self.optimizer

  Args:
    args: the `ModelArguments` of the job.
    dataset: the `DataSet` to train and evaluate on.
  """

  # The evaluation result that ranks models: (name, 'min' or 'max'). The
  # evaluator keeps the best model by it; tuning reports it.
  evaluation_metric = ('loss', 'min')

  def __init__(self, args, dataset):
    super().__init__(name=_module_name(type(self).__name__))
    self._args = args
    self._dataset = dataset
    # Before any hook creates a variable: initializers draw from the seed.
    _set_seed(getattr(args, 'seed', None))
    self._strategy = None
    self.global_step = None
    self._optimizer = None
    self._sparse_optimizer = None
    # Held outside tf.Module tracking: the transform graph is exported with
    # the model but is not part of the model's checkpoints.
    self._untracked = types.SimpleNamespace(transform_layer=None,
                                            worker_layer=None,
                                            coordinator=None)

  @property
  def args(self):
    """The `ModelArguments` of the job."""
    return self._args

  @property
  def dataset(self):
    """The `DataSet` used for training and evaluation."""
    return self._dataset

  @property
  def strategy(self):
    """The `tf.distribute.Strategy` the graphs were built under."""
    if self._strategy is None:
      raise ConfigurationError(
          'strategy is available once build_graph_interfaces(config) has '
          'been called.')
    return self._strategy

  @property
  def optimizer(self):
    """The optimizer, made once by `build_optimizer()`."""
    if self._optimizer is None:
      self._optimizer = self.build_optimizer()
    return self._optimizer

  @property
  def sparse_optimizer(self):
    """The optimizer of embedding tables, made once by `build_sparse_optimizer()`."""
    if self._sparse_optimizer is None:
      self._sparse_optimizer = self.build_sparse_optimizer()
    return self._sparse_optimizer

  @property
  def transform_layer(self):
    """The tf.Transform layer that maps raw features to model inputs."""
    if self._untracked.worker_layer is not None:
      # Building a parameter-server worker's dataset: its tables must be
      # the copies the strategy places on each worker.
      return self._untracked.worker_layer
    if self._untracked.transform_layer is None:
      self._untracked.transform_layer = (
          self._dataset.transform_output.transform_features_layer())
    return self._untracked.transform_layer

  # Hooks.

  def build_input(self, source, batch, epochs, shuffle):
    """Builds the input pipeline of a data source.

    Called once per phase, outside `tf.function`. The default reads the
    source through the dataset, keeps the records that match
    `--data-filter FIELD=REGEX` (if given), and applies the transform graph
    per batch.

    Args:
      source: the name of the dataset's source ('train', 'eval').
      batch: the number of instances per batch.
      epochs: the number of passes over the data (None: repeat forever).
      shuffle: whether to shuffle.

    Returns:
      A `tf.data.Dataset` of dicts of tensors keyed by feature name.
    """
    raw = self._dataset[source].read(batch, epochs=epochs, shuffle=shuffle,
                                     seed=getattr(self._args, 'seed', None))
    filters = getattr(self._args, 'data_filter', None)
    if filters:
      # --data-filter FIELD=REGEX: keep matching records (Gematria's filter).
      raw = _filters.filter_records(
          raw, _filters.parse_filters(filters, self._dataset.schema), batch)
    return self._dataset.transform(raw, self.transform_layer)

  def build_inference(self, inputs, training):
    """Builds the inference (forward pass) of the model.

    Called inside `tf.function`, once per replica, for training, evaluation
    and prediction; and once eagerly first, to create the variables.

    Args:
      inputs: a dict of input tensors keyed by feature name.
      training: whether this is the training graph (dropout, batch norm).

    Returns:
      The inference values (a tensor or a structure of tensors).
    """
    raise NotImplementedError(
        f'{type(self).__name__} must implement build_inference(inputs, '
        'training), returning the inference values.')

  def build_training(self, global_steps, inputs, inferences):
    """Builds the loss of a training step.

    Called inside `tf.function` under a gradient tape, once per replica.

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
        'inputs, inferences), returning (loss, optimizer).')

  def build_optimizer(self):
    """Builds the optimizer, once, from the arguments' optimizer flags.

    Called on first use of `self.optimizer`, eagerly, under the strategy's
    scope. The default follows `--optimizer` (Adam), `--learning-rate`
    (0.001 unless the arguments set another default),
    `--learning-rate-schedule` with `--warmup-steps`, and `--clip-norm` or
    `--clip-value`; see `tensorfx.training._optimizers`. Override it for
    another optimizer.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_optimizer(self):
      ...     return tf_keras.optimizers.Lion(learning_rate=1e-4)

    Returns:
      A `tf_keras.optimizers.Optimizer`.
    """
    return _optimizers.build_optimizer(self._args)

  def build_sparse_optimizer(self):
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
    from tensorfx.embeddings import _optimizers as sparse  # pylint: disable=g-import-not-at-top
    return sparse.build_sparse_optimizer(
        self._args, _optimizers.build_learning_rate(self._args))

  def build_evaluation(self, inputs, outputs):
    """Builds the evaluation metrics and updates them with a batch.

    Called inside `tf.function` for each evaluation batch. Create the metric
    objects on the first call and update the same objects on every call;
    the trainer reads `result()` after each evaluation pass and resets them.
    The evaluation loss is added by the trainer as `loss`.

    Args:
      inputs: the dict of input tensors.
      outputs: what `build_output` returned.

    Returns:
      A dict of `tf_keras.metrics.Metric` by name.
    """
    del inputs, outputs
    return {}

  def build_output(self, inferences):
    """Builds the prediction outputs from the inference values.

    Called inside `tf.function`, for evaluation and serving.

    Args:
      inferences: what `build_inference` returned.

    Returns:
      A dict of output tensors (e.g. `label`, `scores`), batch-major.
    """
    if isinstance(inferences, dict):
      return dict(inferences)
    return {'outputs': inferences}

  def build_init(self):
    """Initializes a fresh model, before its first training step.

    Called eagerly once, after the variables exist, when no checkpoint of
    the job's own is being resumed. The default warm-starts from
    `--warm-start PATH` when given (by variable name, filtered by
    `--restore-pattern`, renamed by `--restore-rename`, with the global step
    when `--restore-global-step`; see `tensorfx.training._restore`) and
    otherwise leaves the initializers' values. Override it to initialize
    another way; call `super().build_init()` to keep the warm start.

    Example:
      >>> class Model(ModelBuilder):
      ...   def build_init(self):
      ...     super().build_init()
      ...     self.embedding.embeddings.assign(pretrained_vectors)
    """
    args = self._args
    path = getattr(args, 'warm_start', None)
    if not path:
      return
    _restore.warm_start(
        self._warm_start_variables(), path,
        pattern=getattr(args, 'restore_pattern', None),
        rename=getattr(args, 'restore_rename', None),
        global_step=(self.global_step
                     if getattr(args, 'restore_global_step', False)
                     else None))

  def _warm_start_variables(self):
    """The model's variables, without optimizer, metric and step state."""
    skip = {id(self.global_step)}
    optimizers = [getattr(self, '_training_optimizer', None) or self._optimizer,
                  self._sparse_optimizer]
    optimizers += [table.optimizer for table in _table.find_tables(self)]
    for optimizer in optimizers:
      for variable in getattr(optimizer, 'variables', ()) or ():
        # Slots of a table sharded over parameter servers are saved as one
        # ShardedVariable; the model lists its shards.
        skip.update(id(v) for v in _sharding.shards(variable))
    accumulator = getattr(self, '_accumulator', None)
    if accumulator is not None:
      skip.update(id(v) for v in accumulator.sums)
    metrics = list(getattr(self, '_evaluation_metrics', {}).values())
    if getattr(self, '_eval_loss', None) is not None:
      metrics.append(self._eval_loss)
    for metric in metrics:
      skip.update(id(v) for v in metric.variables)
    skip.update(id(v) for v in self._untracked_variables())
    return [v for v in self.variables if id(v) not in skip]

  # Graph builders.

  def build_graph_interfaces(self, config):
    """Builds the training, evaluation and prediction interfaces.

    Creates the strategy from `config`, then every variable under its scope,
    then the three interfaces.

    Args:
      config: the training `Configuration`.

    Returns:
      A tuple `(training, evaluation, prediction)` of graph interfaces; the
      prediction interface is traced when first used (at export).
    """
    self._strategy = config.create_device_setter(self._args)
    if self._dataset.features is not None:
      # Made after connecting to the cluster (which renames this task's
      # devices) but outside the strategy's scope: evaluation and serving
      # run it here, never on a parameter-server worker.
      _ = self.transform_layer
    with self._strategy.scope():
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name='global_step',
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      training = self.build_training_graph()
      evaluation = self.build_evaluation_graph()
    strategy = self._strategy

    def build_prediction():
      with strategy.scope():
        return self.build_prediction_graph()

    return training, evaluation, _interfaces.DeferredPrediction(
        build_prediction)

  def _create_variables(self, dataset):
    """Calls the hooks eagerly once, so variables exist before tracing."""
    if getattr(self, '_variables_created', False):
      return
    inputs = tf.nest.map_structure(_zeros_like_spec, dataset.element_spec)
    inferences = self.build_inference(inputs, training=False)
    _, optimizer = self.build_training(self.global_step, inputs, inferences)
    self._training_optimizer = optimizer
    outputs = self.build_output(inferences)
    metrics = {}

    def evaluation_pass():
      metrics.update(self.build_evaluation(inputs, outputs))
      return tf.constant(0)

    if self._replicated:
      # Metrics of mirrored replicas may only be updated in replica context.
      self.strategy.run(evaluation_pass)
    else:
      evaluation_pass()
    self._evaluation_metrics = metrics
    dense, groups = self._route(self._trainable(), optimizer)
    if hasattr(optimizer, 'build'):
      optimizer.build(dense)
    for table_optimizer, variables in groups:
      table_optimizer.build(variables)
    self._variables_created = True

  def _route(self, variables, optimizer):
    """Splits variables into the dense ones and each table optimizer's.

    Embedding tables' rows go to their optimizer (their own, or
    `self.sparse_optimizer`), which also becomes their clock's partner for
    eviction; everything else to `optimizer`.

    Returns:
      `(dense, [(table_optimizer, table_variables), ...])`.
    """
    tables = _table.find_tables(self)
    for table in tables:
      table.bind(step_counter=self.global_step,
                 optimizer=None if table.optimizer is not None
                 else self.sparse_optimizer)
    owner = {}
    for table in tables:
      if table.built:
        for shard in table.shards:
          owner[id(shard)] = table.optimizer
    dense, groups = [], {}
    for variable in variables:
      table_optimizer = owner.get(id(variable))
      if table_optimizer is None or table_optimizer is optimizer:
        dense.append(variable)
      else:
        groups.setdefault(id(table_optimizer), (table_optimizer, []))[1].append(
            variable)
    return dense, list(groups.values())

  def _trainable(self):
    skip = {id(v) for v in self._untracked_variables()}
    return tuple(v for v in self.trainable_variables if id(v) not in skip)

  def _untracked_variables(self):
    return ()

  @property
  def _parameter_servers(self):
    return isinstance(self.strategy, tf.distribute.ParameterServerStrategy)

  @property
  def _replicated(self):
    """Whether steps run on several synchronous replicas (mirrored)."""
    return (not self._parameter_servers and
            self.strategy.num_replicas_in_sync > 1)

  def build_training_graph(self):
    """Builds the training interface; see `TrainingInterface`."""
    args = self._args
    strategy = self.strategy
    replicas = strategy.num_replicas_in_sync
    shuffle = getattr(args, 'shuffle', True)
    # Parameter-server workers read independently and forever; the step
    # count (--max-steps) bounds training.
    epochs = None if self._parameter_servers else args.epochs
    dataset = self.build_input('train', args.batch_size, epochs, shuffle)
    if not self._parameter_servers:
      # The pipeline's threads start with the iterator, not at the first
      # batch asked for: the first batches are read while the training
      # loop is traced, on the core tracing does not use.
      options = tf.data.Options()
      options.experimental_warm_start = True
      dataset = dataset.with_options(options)
    self._create_variables(dataset)
    optimizer = self._training_optimizer
    variables = self._trainable()
    if not variables:
      raise ConfigurationError(
          f'{type(self).__name__}.build_inference created no trainable '
          'variables; create layers on its first call and keep them as '
          'attributes of the builder.')
    variables = _optimizers.select_variables(
        variables, getattr(args, 'trainable_pattern', None))
    dense, groups = self._route(variables, optimizer)
    if groups and (getattr(args, 'accumulation_steps', None) or 1) > 1:
      # Tables' rows change every step (admission, eviction); their
      # gradients are not accumulated.
      raise ConfigurationError(
          '--accumulation-steps is not supported with embedding tables; '
          'raise --batch-size instead. Received: --accumulation-steps='
          f'{args.accumulation_steps}')
    # Dense variables first, then each table optimizer's, in that order.
    variables = tuple(dense) + tuple(v for _, vs in groups for v in vs)
    accumulator = self._build_accumulator(variables)
    global_step = self.global_step

    replicated = self._replicated

    # Python-only control flow, calling optimizers (which autograph leaves
    # alone, as Keras' own training step does): converting it would only
    # cost start-up time.
    @tf.autograph.experimental.do_not_convert
    def apply_gradients(step_optimizer, gradients):
      if replicated:
        # Sparse gradients' all-reduce is an all-gather of varying size,
        # which fails inside the training loop's tf.while_loop: reduce them
        # densely (the sparse optimizers still update only the rows whose
        # gradient is not zero).
        gradients = [tf.convert_to_tensor(g)
                     if isinstance(g, tf.IndexedSlices) else g
                     for g in gradients]
      step_optimizer.apply_gradients(zip(gradients[:len(dense)], dense))
      start = len(dense)
      for table_optimizer, table_variables in groups:
        end = start + len(table_variables)
        table_optimizer.apply_gradients(
            zip(gradients[start:end], table_variables))
        start = end

    def train_step(inputs):
      with tf.GradientTape() as tape:
        inferences = self.build_inference(inputs, training=True)
        loss, step_optimizer = self.build_training(global_step, inputs,
                                                   inferences)
        loss = tf.cast(loss, tf.float32)
        # Each replica's mean loss counts 1/replicas of the global mean:
        # the optimizer sums the replicas' gradients.
        scaled = loss / replicas
      gradients = tape.gradient(scaled, variables)
      if accumulator is None:
        # The optimizer sums the replicas' gradients, then clips
        # (--clip-norm, --clip-value) and applies them; embedding tables'
        # optimizers update only the rows the step looked up.
        apply_gradients(step_optimizer, gradients)
      else:
        # Applied every --accumulation-steps steps by run_step.
        accumulator.add(gradients)
      global_step.assign_add(1)
      return loss

    # Converted once, here (the hooks it calls with it): the loop around it
    # is plain TensorFlow, traced without autograph.
    train_step = tf.autograph.to_graph(train_step)
    run_step = self._step_runner(train_step, accumulator, optimizer)

    if self._parameter_servers:
      loop, distributed = self._parameter_server_loop(train_step, epochs,
                                                      shuffle)
    else:
      distributed = dataset
      if self._replicated:
        distributed = strategy.experimental_distribute_dataset(
            _shard_by_data(dataset))

      # The trainer's guards (non-finite loss, --thres-loss) stop the loop
      # at the first bad step, compared on the device: no host sync.
      loss_limit = float(getattr(args, 'thres_loss', None) or 'inf')

      @tf.function(autograph=False)
      def loop(iterator, num_steps):
        # A tf.while_loop whose body is the step: nothing for autograph to
        # convert, and the step is not a branch of a `tf.cond` (as "fetch;
        # if none: break; step" makes it) -- that halves the tracing and
        # the first call's graph optimization, seconds of every job's
        # start. The next batch is fetched only when another step is to
        # run, so no batch is lost between calls.
        def body(steps, loss, batch, _):
          per_replica = run_step(batch.get_value())
          loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica,
                                 axis=None)
          steps += 1
          go = tf.logical_and(
              tf.logical_and(tf.math.is_finite(loss), loss <= loss_limit),
              steps < num_steps)
          batch = tf.cond(go, iterator.get_next_as_optional, lambda: batch)
          return steps, loss, batch, tf.logical_and(go, batch.has_value())

        batch = iterator.get_next_as_optional()
        steps, loss, _, _ = tf.while_loop(
            lambda *state: state[-1], body,
            (tf.constant(0, tf.int64), tf.constant(0.0), batch,
             batch.has_value()))
        return loss, steps

    return _interfaces.TrainingInterface(
        dataset=distributed, global_step=global_step, loop=loop,
        optimizer=optimizer, variables=variables,
        batch_size=args.batch_size)

  def _build_accumulator(self, variables):
    """The `GradientAccumulator` of `--accumulation-steps`, or None."""
    steps = getattr(self._args, 'accumulation_steps', None) or 1
    if steps <= 1:
      return None
    if self._parameter_servers:
      # Workers step asynchronously: there is no shared set of N
      # minibatches to accumulate. A larger --batch-size does the same.
      raise ConfigurationError(
          '--accumulation-steps is not supported with parameter servers '
          '(asynchronous training); raise --batch-size instead. Received: '
          f'--accumulation-steps={steps}')
    if not hasattr(self, '_accumulator'):
      # An attribute of the module: checkpointed with the model.
      self._accumulator = _optimizers.GradientAccumulator(variables, steps)
    return self._accumulator

  def _step_runner(self, train_step, accumulator, optimizer):
    """Runs `train_step` on each replica; applies accumulated gradients.

    Called in cross-replica context, inside the training loop's
    `tf.function`. The update of an accumulation runs here rather than in
    `train_step`: a synchronisation point (the optimizer's cross-replica
    sum) may not sit inside control flow in replica context.
    """
    strategy = self.strategy
    global_step = self.global_step
    if accumulator is None:
      return lambda inputs: strategy.run(train_step, (inputs,))

    def apply():
      strategy.run(accumulator.apply, (optimizer,))
      return tf.constant(True)

    def run_step(inputs):
      per_replica = strategy.run(train_step, (inputs,))
      # The global step counts minibatches; every N-th one updates.
      due = tf.equal(global_step % accumulator.steps, 0)
      tf.cond(due, apply, lambda: tf.constant(False))
      return per_replica

    return run_step

  def _parameter_server_loop(self, train_step, epochs, shuffle):
    """The training loop of a parameter-server cluster's chief.

    The chief schedules closures of several steps on the workers through a
    `ClusterCoordinator`; a closure lost with its worker runs again on
    another (so steps run at least once).
    """
    strategy = self.strategy
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    self._untracked.coordinator = coordinator
    args = self._args
    global_step = self.global_step
    # Tables made under the strategy's scope get a copy on each worker.
    worker_layer = self._dataset.transform_output.transform_features_layer() \
        if self._dataset.features is not None else None

    def dataset_fn(context=None):
      del context
      self._untracked.worker_layer = worker_layer
      try:
        return self.build_input('train', args.batch_size, epochs, shuffle)
      finally:
        self._untracked.worker_layer = None

    per_worker = coordinator.create_per_worker_dataset(dataset_fn)

    @tf.function
    def worker_loop(iterator, num_steps):
      loss = tf.constant(0.0)
      for _ in tf.range(num_steps):
        loss = strategy.run(train_step, (next(iterator),))
      return loss

    steps_per_closure = max(1, getattr(args, 'steps_per_closure', 0) or 10)

    def loop(iterator, num_steps):
      remaining = int(num_steps)
      start = int(global_step.numpy())
      last = None
      while remaining > 0:
        count = min(remaining, steps_per_closure)
        last = coordinator.schedule(
            worker_loop, args=(iterator, tf.constant(count, tf.int64)))
        remaining -= count
      coordinator.join()
      loss = last.fetch() if last is not None else 0.0
      return loss, int(global_step.numpy()) - start

    return loop, per_worker

  def build_evaluation_graph(self):
    """Builds the evaluation interface; see `EvaluationInterface`."""
    import tf_keras  # pylint: disable=g-import-not-at-top
    args = self._args
    default_batch = getattr(args, 'eval_batch_size', None) or args.batch_size
    # The default target reads `eval`; --eval-target adds others.
    if 'eval' not in self._dataset and not getattr(args, 'eval_targets',
                                                    None):
      return None

    def dataset(source='eval', batch_size=None, batches=None):
      data = self.build_input(source, batch_size or default_batch, 1, False)
      return data.take(batches) if batches else data

    loss_metric = tf_keras.metrics.Mean(name='loss')
    self._eval_loss = loss_metric
    metrics = {'loss': loss_metric}
    metrics.update(getattr(self, '_evaluation_metrics', {}))
    global_step = self.global_step

    def eval_step(inputs):
      inferences = self.build_inference(inputs, training=False)
      outputs = self.build_output(inferences)
      loss, _ = self.build_training(global_step, inputs, inferences)
      size = tf.shape(tf.nest.flatten(inputs)[0], out_type=tf.int64)[0]
      loss_metric.update_state(tf.cast(loss, tf.float32),
                               sample_weight=tf.cast(size, tf.float32))
      self.build_evaluation(inputs, outputs)
      return size

    strategy = self.strategy
    replicated = self._replicated

    @tf.function
    def loop(data):
      count = tf.constant(0, tf.int64)
      for inputs in data:
        if replicated:
          count += strategy.reduce(tf.distribute.ReduceOp.SUM,
                                   strategy.run(eval_step, (inputs,)),
                                   axis=None)
        else:
          count += eval_step(inputs)
      return count

    @tf.function
    def step(inputs):
      if replicated:
        return strategy.reduce(tf.distribute.ReduceOp.SUM,
                               strategy.run(eval_step, (inputs,)), axis=None)
      return eval_step(inputs)

    def eval_dataset(source='eval', batch_size=None, batches=None):
      data = dataset(source, batch_size, batches)
      if replicated:
        return strategy.experimental_distribute_dataset(_shard_by_data(data))
      return data

    return _interfaces.EvaluationInterface(dataset=eval_dataset, loop=loop,
                                           metrics=metrics, step=step)

  def build_prediction_graph(self):
    """Builds the prediction interface over raw instances.

    Three signatures share one model: `serving_default` takes CSV lines
    (`csv`, in schema order, target columns optional), `predict_examples`
    serialized tf.Example protos (`examples`), and `predict_features` one
    tensor per raw field.
    """
    dataset = self._dataset
    schema = dataset.schema
    features = dataset.features
    target_fields = set()
    key_names = []
    if features is not None:
      for feature in features:
        if feature.type == FeatureType.TARGET:
          target_fields.update(feature.fields)
        elif feature.type == FeatureType.KEY:
          key_names.append(feature.name)
    serving = [f for f in schema if f.name not in target_fields]
    spec = dataset.raw_feature_spec()
    serving_spec = {f.name: spec[f.name] for f in serving}
    # CSV cells and feature tensors hold list fields as text: "7 8 9".
    text_schema = _listtext.text_schema(schema)
    text_spec = _transforms.raw_feature_spec(text_schema)
    transform = _transforms.applier(self.transform_layer)

    def predict(raw):
      transformed = transform(raw)
      inferences = self.build_inference(transformed, training=False)
      outputs = dict(self.build_output(inferences))
      for name in key_names:
        outputs[name] = transformed[name]
      return outputs

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string,
                                                name='csv')])
    def predict_csv(csv):
      raw, reasons = _csv.parse_lines(
          csv, text_schema, fields=[f.name for f in serving],
          optional=sorted(target_fields))
      index = tf.range(1, tf.size(csv, out_type=tf.int64) + 1)
      check = _validation.assert_valid(
          reasons, tf.fill(tf.shape(csv), 'instance'), index)
      with tf.control_dependencies([check]):
        raw = {k: tf.identity(v) for k, v in raw.items()}
      return predict(_listtext.parse_lists(raw, schema))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string,
                                                name='examples')])
    def predict_examples(examples):
      return predict(tf.io.parse_example(examples, serving_spec))

    feature_signature = {
        f.name: tf.TensorSpec([None], text_spec[f.name].dtype, name=f.name)
        for f in serving}

    @tf.function(input_signature=[feature_signature])
    def predict_features(raw):
      return predict(_listtext.parse_lists(raw, schema))

    signatures = {
        'serving_default': predict_csv.get_concrete_function(),
        'predict_examples': predict_examples.get_concrete_function(),
        'predict_features': predict_features.get_concrete_function(),
    }
    module = tf.Module()
    module.transform_layer = self.transform_layer
    captured = {}
    for function in signatures.values():
      for variable in function.variables:
        captured[id(variable)] = variable
    module.model_variables = list(captured.values())
    # Exact-key tables serve through their indexes' hash tables.
    module.embedding_indexes = [
        index for table in _table.find_tables(self)
        for index in table.index_tables]
    return _interfaces.PredictionInterface(signatures=signatures,
                                           module=module)


def _set_seed(seed):
  """Makes runs with the same --seed on one machine repeat exactly."""
  if seed is None:
    return
  import tf_keras  # pylint: disable=g-import-not-at-top
  # Python's, NumPy's and TensorFlow's global seeds: layer initializers and
  # dropout draw from them.
  tf_keras.utils.set_random_seed(seed)
  # Deterministic kernels (reductions, tf.data ordering); slower on GPUs,
  # and process-wide: asked for by --seed only.
  tf.config.experimental.enable_op_determinism()


def _module_name(name):
  # tf.Module names must be Python identifiers.
  return ''.join(c if c.isalnum() or c == '_' else '_' for c in name) or 'model'


def _shard_by_data(dataset):
  """Shards by element, not file: a job may have fewer files than workers."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.DATA)
  return dataset.with_options(options)


def _zeros_like_spec(spec):
  shape = [1 if d is None else d for d in spec.shape.as_list()]
  if spec.dtype == tf.string:
    return tf.fill(shape, '')
  return tf.zeros(shape, spec.dtype)
