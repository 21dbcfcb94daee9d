"""`train_from_params` and `test_from_params`: tfutils' interface.

Both read tfutils' dictionaries, make a `ParamsBuilder` of their functions
and run it with `ModelTrainer` (`train`, or `evaluate` for testing): the
same engine, loop, callbacks, checkpoints and evaluation as every
tensorfx job.
"""

import json
import os
from typing import Any, Mapping, Optional, Sequence

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.tfutils import _arguments
from tensorfx.tfutils import _builder
from tensorfx.tfutils import _data
from tensorfx.tfutils import _fingerprint
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _load
from tensorfx.tfutils import _optimizer
from tensorfx.tfutils import _record
from tensorfx.tfutils import _save
from tensorfx.tfutils import _store
from tensorfx.tfutils import _train
from tensorfx.tfutils import _validation


def train_from_params(
  save_params: Optional[dict[str, Any]],
  model_params: Optional[dict[str, Any]],
  train_params: Optional[dict[str, Any]],
  loss_params: Optional[dict[str, Any]] = None,
  learning_rate_params: Optional[dict[str, Any]] = None,
  optimizer_params: Optional[dict[str, Any]] = None,
  validation_params: Optional[dict[str, Any]] = None,
  load_params: Optional[dict[str, Any]] = None,
  log_device_placement: bool = False,
  dont_run: bool = False,
  skip_check: bool = False,
  callbacks: Optional[Sequence[Any]] = None,
  config: Any = None,
) -> dict[str, Any]:
  """Trains a model given as tfutils' parameter dictionaries.

  tfutils' interface on tensorfx's engine: the dictionaries are read
  with tfutils' meanings and defaults (`thres_loss=100`,
  `validate_first=True`, `save_metrics_freq=5`, ...), the experiment is
  recorded in MLflow (`host`/`port` locate the store, `DBNAME/COLLNAME` is
  the experiment, `exp_id` the run), and the job runs as any tensorfx job
  (`ModelTrainer`), in the directory of its `exp_id`. Calling again with
  the same `exp_id` resumes from its latest checkpoint; another model on
  an existing `exp_id` is an error. See the tfutils migration guide for
  every key.

  Example:
    >>> def model(inputs, train=True, seed=0, hidden=16):
    ...   x = tf_keras.layers.Dense(hidden, 'relu', name='hidden')(
    ...       inputs['features'])
    ...   return tf_keras.layers.Dense(3, name='logits')(x), {'hidden': hidden}
    >>> def data(batch_size, split):
    ...   return tf.data.Dataset.from_tensor_slices(load(split)).batch(
    ...       batch_size)
    >>> def top1(inputs, outputs):
    ...   return {'top1': tf.reduce_mean(tf.cast(tf.equal(
    ...       tf.argmax(outputs, 1), inputs['labels']), tf.float32))}
    >>> result = tensorfx.training.train_from_params(
    ...     save_params={'dbname': 'iris', 'collname': 'mlp',
    ...                  'exp_id': 'h16', 'save_valid_freq': 100},
    ...     model_params={'func': model, 'hidden': 16},
    ...     train_params={'data_params': {'func': data, 'batch_size': 32,
    ...                                   'split': 'train'},
    ...                   'num_steps': 1000},
    ...     learning_rate_params={'func': tf.compat.v1.train.exponential_decay,
    ...                           'learning_rate': 0.1, 'decay_steps': 500,
    ...                           'decay_rate': 0.5},
    ...     validation_params={'valid': {
    ...         'data': {'func': data, 'batch_size': 50, 'split': 'eval'},
    ...         'targets': {'func': top1}}})
    >>> result['validation']['valid']['top1']
    0.96

  Args:
    save_params: where the experiment is recorded and how often: `host`,
      `port`, `dbname`, `collname`, `exp_id` (required, here or in
      load_params: each location key absent is load_params', as tfutils),
      `cache_dir`, `do_save`, `save_metrics_freq`, `save_valid_freq`,
      `save_filters_freq`, `cache_filters_freq`, `cache_max_num`,
      `save_initial_filters`.
    model_params: `func` (called as `func(inputs=, train=, seed=,
      **kwargs)`, returning the outputs or `(outputs, config)`), `seed`,
      `trainable_scopes`, and the function's other arguments.
    train_params: `data_params` (`func`, `batch_size`, its arguments),
      `targets` (`func(inputs, outputs, **kwargs)` -> dict, recorded),
      `num_steps` (None: until interrupted), `thres_loss`,
      `validate_first`, `num_minibatches`, `train_loop` (`{'func':
      f(sess, train_targets, **kwargs)}`, called for every step with
      `train_targets` a list of one dict, as tfutils: its
      `sess.run(train_targets)` runs the step).
    loss_params: `pred_targets`, `loss_func`, `loss_func_kwargs`,
      `agg_func`, `agg_func_kwargs` (default: softmax cross-entropy of
      `labels`, averaged).
    learning_rate_params: `func` (receives `global_step=`; default, as
      tfutils: `tf.compat.v1.train.exponential_decay`) and its arguments;
      or `{'learning_rate': RATE}` alone, a constant.
    optimizer_params: `optimizer` (a tf_keras or `tf.compat.v1.train`
      optimizer class) and its arguments; default momentum 0.9 with
      gradients clipped to [-1, 1] (tfutils' ClipOptimizer).
    validation_params: targets by name: `data` (`func`, `batch_size`, its
      arguments), `targets` (`func(inputs, outputs, **kwargs)` -> dict;
      default: the loss), `num_steps`, `online_agg_func` (default, as
      tfutils: the list of per-batch dicts), `agg_func` (receives what
      `online_agg_func` made; default: each key's per-batch list;
      `'mean'` for their means).
    load_params: what a fresh experiment starts from: `exp_id` (and the
      location keys) of another experiment, or `from_ckpt`; `do_restore`
      (False: from scratch, the exp_id's checkpoints moved aside), `query`
      (a MongoDB-style query, see the guide), `to_restore`,
      `load_param_dict`, `restore_global_step`. save_params' own keys
      (`save_valid_freq`, ...) are ignored here, as tfutils ignored them.
    log_device_placement: log where each operation runs.
    dont_run: build everything, train nothing.
    skip_check: accepted for tfutils' scripts; tensorfx records git
      provenance without failing outside git.
    callbacks: more `tensorfx.training.Callback`s.
    config: the `Configuration` (default: from `TF_CONFIG`).

  Returns:
    A dict: `exp_id`, `output` (the job's directory), `step`, `run_id`
    (the MLflow run, None without `do_save`), `validation` (the last
    validation's results by target) and `model` (the exported
    `tensorfx.prediction.Model`). With `dont_run`: `builder`, `arguments`
    and `output`.

  Raises:
    ConfigurationError: a dictionary is missing a key or has a bad one
      (naming its path, e.g. `train_params['data_params']['func']`), or
      the `exp_id` was trained with another model.
  """
  del skip_check
  saving = _keys.Params(save_params, 'save_params')
  loading = _keys.Params(load_params, 'load_params')
  save = _save.SaveSettings.from_params(saving, loading)
  model = _functions.Model.from_params(
    _keys.Params(model_params, 'model_params')
  )
  train = _train.TrainSettings.from_params(
    _keys.Params(train_params, 'train_params')
  )
  loss = _functions.Loss.from_params(_keys.Params(loss_params, 'loss_params'))
  rate = _optimizer.LearningRate.from_params(
    _keys.Params(learning_rate_params, 'learning_rate_params')
  )
  optimizer = _keys.Params(optimizer_params, 'optimizer_params')
  validations = _validation.from_params(
    _keys.Params(validation_params, 'validation_params')
  )
  load = _load.LoadSettings.from_params(loading, saving)
  location = save.location
  store = _store.Store(location.uri) if save.do_save else None
  output = _store.output_of(location, store)
  own = tf.train.latest_checkpoint(os.path.join(output, 'checkpoints'))
  fresh = _fresh_start(load, location, own)
  recorded = None if fresh else _recorded_fingerprint(output, store, location)
  # Before anything of the experiment is touched; the variables are
  # compared once the model is built.
  _fingerprint.check_function(
    recorded, model, location.exp_id, f'recorded in {output}'
  )
  warm_start = None if fresh else _warm_start(load, location, store, own)
  description = {
    'save_params': {
      **_keys.describe(
        {k: v for k, v in vars(location).items() if v is not None}
      ),
      **save.describe(),
    },
    'model_params': model.describe(),
    'train_params': train.describe(),
    'loss_params': loss.describe(),
    'learning_rate_params': rate.describe(),
    'optimizer_params': _keys.describe(optimizer.value),
    'validation_params': {v.name: v.describe() for v in validations},
    'load_params': load.describe(),
  }
  flags = (
    save.flags()
    + train.flags(_first_step(own, fresh, warm_start))
    + _model_flags(model, _optimizer.trainable_pattern(optimizer))
  )
  if fresh:
    # tfutils' do_restore False: from scratch; the old checkpoints and
    # summaries go aside (never deleted), the store gets a new run.
    flags.append('--no-resume')
  args = _arguments.ParamsArguments.make(
    flags, [v.target() for v in validations], description
  )
  sources = {
    'train': _data.FunctionSource(
      'train', train.data.func, train.data.kwargs, train.data.where
    )
  }
  sources.update({v.source_name: v.source() for v in validations})
  dataset = _data.FunctionDataSet(sources, train.batch_size, loss.pred_targets)
  record = _record.ExperimentRecord(
    location.exp_id,
    store,
    location.experiment,
    action='train',
    description=description,
    save=save,
    fresh=bool(fresh),
  )
  spec = _builder.Spec(
    model=model,
    loss=loss,
    learning_rate=rate,
    optimizer=optimizer,
    train_targets=train.targets,
    train_loop=train.train_loop,
    warm_start=warm_start,
    recorded=recorded,
    exp_id=location.exp_id,
    callbacks=(record,),
  )
  builder = _builder.ParamsBuilder(args, dataset, spec)
  if dont_run:
    return {'builder': builder, 'arguments': args, 'output': output}
  if log_device_placement:
    tf.debugging.set_log_device_placement(True)
  from tensorfx.training.internal import ModelTrainer

  exported = ModelTrainer(config=config, callbacks=callbacks).train(
    builder, output
  )
  last = record.results or {}
  return {
    'exp_id': location.exp_id,
    'output': output,
    'step': int(builder.global_step.numpy()),
    'run_id': record.run_id,
    'validation': last.get('results', {}),
    'model': exported,
  }


def test_from_params(
  load_params: Optional[dict[str, Any]],
  model_params: Optional[dict[str, Any]],
  validation_params: Optional[dict[str, Any]],
  log_device_placement: bool = False,
  save_params: Optional[dict[str, Any]] = None,
  dont_run: bool = False,
  skip_check: bool = False,
  loss_params: Optional[dict[str, Any]] = None,
  callbacks: Optional[Sequence[Any]] = None,
) -> dict[str, Any]:
  """Evaluates a trained experiment on validation targets, without training.

  tfutils' `test_from_params` on tensorfx's evaluation engine
  (`ModelTrainer.evaluate`): the experiment `load_params` locates is
  restored (its latest checkpoint, `query={'step': N}`'s, or
  `from_ckpt`) and every target of `validation_params` is evaluated
  once. The results are recorded as an MLflow run (tag `tensorfx.action`
  `evaluate`) named `save_params['exp_id']` in its experiment (default:
  the loaded experiment's), and written to
  `OUTPUT/evaluations/CKPT.json` of the loaded experiment.

  Example:
    >>> result = tensorfx.training.test_from_params(
    ...     load_params={'dbname': 'iris', 'collname': 'mlp', 'exp_id': 'h16'},
    ...     model_params={'func': model, 'hidden': 16},
    ...     validation_params={'test': {
    ...         'data': {'func': data, 'batch_size': 50, 'split': 'test'},
    ...         'targets': {'func': top1}}})
    >>> result['results']['test']['top1']
    0.95

  Args:
    load_params: the experiment to test: `host`, `port`, `dbname`,
      `collname`, `exp_id` (defaulting to save_params'), `cache_dir`,
      `from_ckpt`, `query` (save_params' own keys ignored).
    model_params: the model, as trained (see `train_from_params`).
    validation_params: the targets (see `train_from_params`).
    log_device_placement: log where each operation runs.
    save_params: where the results are recorded (`do_save` False: not at
      all); location keys it lacks, and without it all of them, are the
      loaded experiment's.
    dont_run: build everything, evaluate nothing.
    skip_check: accepted for tfutils' scripts.
    loss_params: the loss of targets without `targets` (tfutils' default
      when not given).
    callbacks: more `tensorfx.training.Callback`s.

  Returns:
    A dict: `exp_id` (of the record), `validates` (the exp_id tested),
    `checkpoint`, `step`, `results` (target -> values), `run_id`.
  """
  del skip_check
  if load_params is None and save_params is None:
    raise ConfigurationError(
      "load_params is required: {'dbname': ..., 'collname': ..., "
      "'exp_id': ...} of the experiment to test."
    )
  saving = _keys.Params(save_params, 'save_params')
  loading = _keys.Params(load_params, 'load_params')
  save = None
  if save_params is not None:
    save = _save.SaveSettings.from_params(saving, loading)
  load = _load.LoadSettings.from_params(loading, saving)
  model = _functions.Model.from_params(
    _keys.Params(model_params, 'model_params')
  )
  loss = _functions.Loss.from_params(_keys.Params(loss_params, 'loss_params'))
  validations = _validation.from_params(
    _keys.Params(validation_params, 'validation_params')
  )
  if not validations:
    raise ConfigurationError(
      'validation_params is required: the targets to test, by name: '
      "{'test': {'data': {...}, 'targets': {...}}}."
    )
  record_at = save.location if save is not None else load.location
  do_save = save.do_save if save is not None else True
  # Read only to find the tested experiment (its directory, a query's
  # runs): without MLflow, where TFUTILS_HOME keeps it.
  load_store = (
    _store.Store(load.location.uri)
    if do_save
    else _store.store_if_installed(load.location.uri)
  )
  output = _store.output_of(load.location, load_store)
  checkpoint = _checkpoint_to_load(load, output, load_store)
  flags = ['--batch-size', str(validations[0].batch_size)]
  if do_save:
    flags += [
      '--experiment',
      record_at.experiment,
      '--tracking-uri',
      record_at.uri,
    ]
  description = {
    'load_params': load.describe(),
    'model_params': model.describe(),
    'validation_params': {v.name: v.describe() for v in validations},
  }
  args = _arguments.ParamsArguments.make(
    flags, [v.target() for v in validations], description
  )
  first = validations[0]
  # The model's variables are made from the first target's batches.
  sources = {'train': first.source()}
  sources.update({v.source_name: v.source() for v in validations})
  dataset = _data.FunctionDataSet(sources, first.batch_size, loss.pred_targets)
  store = None
  if do_save:
    store = (
      load_store
      if load_store and record_at.uri == load_store.uri
      else _store.Store(record_at.uri)
    )
  record = _record.ExperimentRecord(
    record_at.exp_id,
    store,
    record_at.experiment,
    action='evaluate',
    validates={'validates': load.location.exp_id, 'checkpoint': checkpoint},
  )
  spec = _builder.Spec(
    model=model, loss=loss, exp_id=record_at.exp_id, callbacks=(record,)
  )
  builder = _builder.ParamsBuilder(args, dataset, spec)
  if dont_run:
    return {
      'builder': builder,
      'arguments': args,
      'output': output,
      'checkpoint': checkpoint,
    }
  if log_device_placement:
    tf.debugging.set_log_device_placement(True)
  from tensorfx.training.internal import ModelTrainer

  summary = ModelTrainer(callbacks=callbacks).evaluate(
    builder, output, checkpoint
  )
  return {
    'exp_id': record_at.exp_id,
    'validates': load.location.exp_id,
    'checkpoint': summary['checkpoint'],
    'step': summary['step'],
    'results': summary['results'],
    'run_id': record.run_id,
  }


def _model_flags(
  model: _functions.Model, trainable_names: Optional[str] = None
) -> list[str]:
  flags = []
  if model.seed:
    flags += ['--seed', str(model.seed)]
  pattern = trainable_names
  if model.trainable_scopes:
    scopes = '|'.join(s.replace('.', r'\.') for s in model.trainable_scopes)
    # Both given: variables of the scopes whose names start as named.
    pattern = f'^(?=(?:{scopes})/){pattern[1:]}' if pattern else f'^({scopes})/'
  if pattern:
    flags += ['--trainable-pattern', pattern]
  return flags


def _recorded_fingerprint(
  output: str, store: Optional[_store.Store], location: _store.Location
) -> Optional[dict[str, Any]]:
  """The fingerprint the experiment recorded: in its output, or its run."""
  record = _store.read_record(output)
  if record is not None:
    return record.get('fingerprint')
  if store is not None:
    run = store.training_run(location)
    if run is not None and run.data.tags.get('tfutils.model'):
      try:
        return json.loads(run.data.tags['tfutils.model'])
      except ValueError:
        return None
  return None


def _fresh_start(
  load: _load.LoadSettings, location: _store.Location, own: Optional[str]
) -> Optional[str]:
  """The checkpoint `do_restore` False sets aside, or None.

  tfutils' `do_restore=False` trains from scratch whatever the exp_id
  has (`own`, its latest checkpoint): its checkpoints are moved aside
  (`--no-resume`), not resumed.
  """
  if load.do_restore:
    return None
  if own:
    logger.warning(
      "load_params['do_restore'] is False: exp_id %r starts "
      'from scratch; its checkpoints (latest %s) are moved '
      'aside, and the store records a new run.',
      location.exp_id,
      own,
    )
  return own


def _warm_start(
  load: _load.LoadSettings,
  location: _store.Location,
  store: Optional[_store.Store],
  own: Optional[str],
) -> Optional[tuple[str, _load.LoadSettings]]:
  """What a fresh experiment loads, `(checkpoint, load)`, or None.

  Raises:
    ConfigurationError: nothing to load where load_params point.
  """
  if own:
    # Resuming its own checkpoints: load_params apply to a fresh start.
    return None
  if not load.do_restore:
    return None
  if load.from_ckpt:
    from tensorfx.training import internal as _training

    return (
      _training.checkpoints.resolve_checkpoint(
        load.from_ckpt, what="load_params['from_ckpt']"
      ),
      load,
    )
  if (
    load.location.same_experiment(location)
    and load.step is None
    and load.query is None
  ):
    return None
  load_store = store
  if store is None or load.location.uri != store.uri:
    load_store = _store.store_if_installed(load.location.uri)
  loaded = _store.output_of(load.location, load_store)
  return _load.find_checkpoint(load, load_store, loaded), load


def _first_step(
  own: Optional[str],
  fresh: Optional[str],
  warm_start: Optional[tuple[str, _load.LoadSettings]],
) -> Optional[int]:
  """The global step training starts at: resumed, loaded, or 0.

  tfutils validated first (`validate_first`) at step 0 only, so a resumed
  run does not validate again the step its last run ended validating.
  None: resumed from a checkpoint that cannot be read here (the engine
  resumes an older one).
  """
  if own and not fresh:
    return _global_step_of(own, {})
  if warm_start is not None and warm_start[1].restore_global_step:
    checkpoint, load = warm_start
    return _global_step_of(checkpoint, load.rename)
  return 0


def _global_step_of(
  checkpoint: str, rename: Mapping[str, str]
) -> Optional[int]:
  """The global step a checkpoint restores (0 when it has none).

  None when the checkpoint cannot be read (damaged).
  """
  from tensorfx.training import internal as _training

  # As warm_start reads it: under its own name, or the one renamed to it.
  name = {new: old for old, new in rename.items()}.get('global_step')
  try:
    reader = tf.train.load_checkpoint(checkpoint)
    keys = _training.checkpoints.checkpoint_names(reader).get(
      name or 'global_step'
    )
    return int(reader.get_tensor(keys[0])) if keys else 0
  except (tf.errors.OpError, ValueError):
    return None


def _checkpoint_to_load(
  load: _load.LoadSettings, output: str, store: Optional[_store.Store]
) -> str:
  if load.from_ckpt:
    from tensorfx.training import internal as _training

    return _training.checkpoints.resolve_checkpoint(
      load.from_ckpt, what="load_params['from_ckpt']"
    )
  return _load.find_checkpoint(load, store, output)
