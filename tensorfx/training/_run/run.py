"""One training run: set up, run the loop, export.

Runs on the chief, and on every worker of a multi-worker (mirrored)
cluster, where all replicas step together; only the chief writes the real
checkpoints, summaries, job record and model, the other workers write
theirs to a scratch directory that is removed at the end.
"""

import inspect
import os
import re

import tensorflow as tf

from tensorfx import _faults
from tensorfx._errors import TrainingError
from tensorfx._logging import logger
from tensorfx.data import _filters
from tensorfx.data import _validation
from tensorfx.embeddings import internal as _tables
from tensorfx.training import _callbacks
from tensorfx.training._callbacks import table_fill
from tensorfx.training._checkpoints import checkpoints as _checkpoints
from tensorfx.training._checkpoints import export as _export
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._engine import cadence as _cadence
from tensorfx.training._engine import guards as _guards
from tensorfx.training._engine import loop as _loop
from tensorfx.training._engine import random_state as _random_state
from tensorfx.training._engine import strategies
from tensorfx.training._run import exactness as _exactness
from tensorfx.training._run import input_position as _input_position
from tensorfx.training._run import jobinfo as _jobinfo
from tensorfx.training._run import layout as _layout
from tensorfx.training._run import recovery as _recovery
from tensorfx.training._run import skeleton as _skeleton
from tensorfx.training._run import summaries as _summaries
from tensorfx.training._run import tracking as _tracking


class TrainingRun(_skeleton.Run):
  """Trains `builder` into `output` as this process's part of the job.

  Args:
    builder: the `ModelBuilder`.
    output: the job's output directory.
    config: the training `Configuration`.
    callbacks: the user's callbacks (`ModelTrainer(callbacks=...)`).
  """

  def __init__(self, builder, output, config, callbacks=()):
    self.chief = config.master
    super().__init__(
      builder,
      output,
      config,
      'train',
      callbacks,
      worker=None if self.chief else f'{config.task.type}-{config.task.index}',
    )
    # With an evaluator task in the cluster, evaluation is its job.
    self.evaluator_task = (
      config.cluster is not None and 'evaluator' in config.cluster.jobs
    )

  def run(self):
    """Trains, then exports.

    Returns:
      The exported `tensorfx.prediction.Model` on the chief; None on the
      other workers.

    Raises:
      SystemExit: a stop with an exit code (a signal: 128 + its number).
    """
    tf.io.gfile.makedirs(os.path.dirname(self.paths['job']))
    # Read before this run's record replaces it: how far the last one got
    # (not under --no-resume: a new job starts in the same place).
    earlier = (
      _cluster.job_record(self.paths['job']) or {}
      if self.chief and self.settings.restore.resume
      else {}
    )
    record = _jobinfo.JobRecord(
      self.paths['job'], self.arguments(), self.config.to_dict()
    )
    recovery = _recovery.Recovery(record, earlier)
    # What the runs before counted stays, should this one die early too.
    record.write(**recovery.carried())
    try:
      return self._run(record, recovery)
    except SystemExit:
      raise
    except KeyboardInterrupt:
      record.write_on_failure(status='interrupted')
      raise
    except tf.errors.UnavailableError as e:
      error = TrainingError(
        f'{_unavailable(e.message)}. Restart the job: it resumes from the '
        'last checkpoint.'
      )
      record.write_on_failure(status='failed', error=str(error))
      raise error from None
    except BaseException as e:
      record.write_on_failure(status='failed', error=f'{type(e).__name__}: {e}')
      raise
    finally:
      if self.layout.scratch:
        _remove_scratch(self.layout.scratch)

  def _run(self, record, recovery):
    builder, settings = self.builder, self.settings
    dataset = builder.dataset
    # Opened first: a store that cannot be reached stops the job early.
    tracker = _tracking.create(
      settings.tracking, self.output, enabled=self.chief
    )
    settings = self.ready_data(
      skip_bad_records=settings.data.skip_bad_records,
      # Parameter-server workers run the input pipeline in their own
      # processes, which cannot count into this one.
      count_bad_records=self.config.strategy_kind != 'parameter_server',
      analyze=self._analyze if self.chief else None,
      wait_secs=settings.job.cluster_timeout_secs,
    )
    # Tables this job grew under parameter servers start with their rows.
    _tables.expansion.start_rows(
      table_fill.grown_rows(self.layout.grown_tables) if self.chief else {}
    )
    targets, training, evaluation, prediction = self.build_graphs()
    evaluation = self.evaluation(
      evaluation if not self.evaluator_task else None,
      targets,
      sliced=not self.evaluator_task,
    )
    if not settings.restore.resume and self.chief:
      # --no-resume: what an earlier run left goes aside, never deleted.
      _checkpoints.move_aside(
        [self.paths['checkpoints'], self.paths['summaries']]
      )
    # Checkpoints carry the input's position: where a resumed run reads.
    position = _input_position.InputPosition(training.input_read)
    saved = {_input_position.NAME: position}
    random_state = _random_state.collect(builder)
    if random_state is not None:
      saved['random_state'] = random_state
    checkpoints = self.open_checkpoints(
      training.global_step,
      max_to_keep=settings.checkpoints.keep,
      keep_best=settings.checkpoints.keep_best,
      best_mode=self.best()[2],
      # The other workers resume the chief's checkpoint: all replicas
      # must start from one state.
      restore_from=None
      if self.chief
      else _layout.JobLayout.of(self.output).checkpoints,
      # Checkpoints of earlier releases hold neither.
      optional=list(saved),
      **saved,
    )
    restored = _checkpoints.resume(checkpoints, settings.restore) is not None
    _run_init(builder, restored=restored)
    if self.chief:
      recovery.resumed(int(training.global_step.numpy()), restored)
    if strategies.multi_worker(self.engine.strategy):
      _check_same_start(self.engine.strategy, training.global_step, position)
    summaries = _summaries.Summaries(self.paths['summaries'])
    iterator = position.resume(training)
    _exactness.report(
      settings,
      self.engine.strategy,
      training,
      iterator,
      builder,
      random_state.generators if random_state is not None else (),
    )
    context = self.context(
      chief=self.chief,
      checkpoints=checkpoints,
      summaries=summaries,
      training=training,
      prediction=prediction,
      training_graph=_graph_of(training, iterator),
    )
    callbacks = self.callback_list(
      tracker,
      context,
      source=record.source,
      arguments=record.arguments,
      evaluator_task=self.evaluator_task,
      extra=[_recovery.ProgressCallback(record, recovery, self.engine.run)]
      if self.chief
      else [],
    )
    steps = _step_function(
      training, iterator, settings.guards.loss_limit, position
    )
    # A builder may drive each call of the steps itself (tfutils'
    # train_loop, `ParamsBuilder.wrap_train_steps`).
    wrap = getattr(builder, 'wrap_train_steps', None)
    loop = _loop.TrainingLoop(
      steps if wrap is None else wrap(steps),
      lambda: int(training.global_step.numpy()),
      _cadence.Cadence(
        max_steps=settings.loop.max_steps,
        log_every=settings.loop.log_interval_steps,
        per_call=settings.loop.steps_per_loop,
        checkpoint_steps=settings.checkpoints.interval_steps,
        checkpoint_secs=settings.checkpoints.interval_secs,
        eval_steps=settings.validation.interval_steps,
        validate=evaluation.enabled,
        validate_first=settings.validation.validate_first,
        call_seconds=_cadence.PS_TARGET_CALL_SECONDS
        if strategies.parameter_servers(self.engine.strategy)
        else _cadence.TARGET_CALL_SECONDS,
        measured=not strategies.multi_worker(self.engine.strategy),
      ),
      callbacks,
      save=lambda: _save(checkpoints),
      evaluate=evaluation.evaluate
      if evaluation.enabled
      else (lambda step: None),
      agree=lambda flag: strategies.agree(self.engine.strategy, flag),
      batch_size=training.batch_size,
      learning_rate=lambda: _learning_rate(training.optimizer),
      gradient_norm=lambda: _read(training.gradient_norm),
      why_empty=lambda: _filters.why_nothing_matched(
        dataset['train'],
        _filters.parse_filters(settings.data.filters),
      ),
    )
    context.save = loop.save_checkpoint
    context.step_hook = loop.at_step
    for fault_step in _faults.counts('train.step'):
      # Tests' kills at a chosen step (`TENSORFX_FAULT=train.step:N`).
      loop.at_step(fault_step, lambda s: _faults.point('train.step', s))
    logs = _skeleton.new_logs()
    try:
      with _validation.data_errors():
        outcome = loop.run()
    except BaseException as e:
      logs.update(
        error=f'{type(e).__name__}: {e}',
        status=(
          'interrupted' if isinstance(e, KeyboardInterrupt) else 'failed'
        ),
      )
      _end_after_failure(callbacks, logs)
      summaries.close()
      raise
    results = evaluation.last
    logs.update(
      status=(
        'interrupted' if context.exit_code is not None else outcome.status
      ),
      step=outcome.step,
      reason=outcome.reason,
      metrics=results.primary if results is not None else {},
      model=self.paths['model'] if context.exit_code is None else None,
      nan_restores=callbacks.find(_callbacks.LossGuardCallback).restores,
    )
    _skeleton.end(callbacks, summaries, logs)
    step = outcome.step
    if context.exit_code is not None:
      record.write(status='interrupted', global_step=step)
      if context.exit_code == table_fill.RESTART_EXIT_CODE:
        logger.info(
          'Restarting the chief in place at step %d (%s)',
          step,
          context.stop_reason,
        )
        _cluster.restart_in_place()
      logger.warning(
        'Stopped at step %d; the checkpoint is %s. Run the same '
        'command again to resume.',
        step,
        checkpoints.latest,
      )
      raise SystemExit(context.exit_code)
    # The version names the weights exported: after early stopping
    # restored its best state, that state's step, not the step it stopped at.
    model_dir = _export.export(
      prediction,
      dataset.schema,
      self.paths['model'],
      version=int(training.global_step.numpy())
      if settings.export.versioned
      else None,
    )
    if not self.chief:
      return None
    extra = {}
    bad = callbacks.find(_callbacks.BadRecordsCallback).counts()
    if bad:
      extra['bad_records'] = bad
    if len(evaluation.targets) > 1 and evaluation.last is not None:
      extra['validation'] = {
        name: dict(values) for name, values in evaluation.last.items()
      }
    if checkpoints.best:
      extra['best_checkpoints'] = checkpoints.best
    if logs.get('nan_restores'):
      extra['nan_restores'] = logs['nan_restores']
    if outcome.reason:
      extra['stopped'] = outcome.reason
    record.write(
      status='completed',
      global_step=step,
      metrics=logs['metrics'],
      checkpoint=checkpoints.latest,
      model=model_dir,
      **extra,
    )
    from tensorfx.prediction import Model

    return Model.load(model_dir)

  def _analyze(self, dataset):
    # A previous run's analysis of the same data, schema and features is
    # reused: the dataset compares fingerprints and logs its decision.
    analysis_dir = self.paths['analysis']
    if not tf.io.gfile.exists(os.path.join(analysis_dir, 'metadata.json')):
      logger.info(
        'No analysis given (--data-metadata): analyzing the '
        'training data into %s',
        analysis_dir,
      )
    dataset.analyze(analysis_dir)


def _end_after_failure(callbacks, logs):
  """Ends the callbacks of a failed run; their own errors only logged.

  The failure that ended the run is what the user must see, not a
  callback's trouble reporting it.
  """
  try:
    callbacks.on_train_end(logs)
  except Exception as e:
    logger.warning(
      'A callback failed while the run ended: %s: %s', type(e).__name__, e
    )


def _step_function(training, iterator, limit, position):
  """`steps(n) -> StepResult` over the training interface's loop.

  Each step reads one batch: `position` (the `InputPosition`) counts them.
  """
  global_step = training.global_step

  def steps(num_steps):
    loss, ran = training.loop(iterator, tf.constant(num_steps, tf.int64))
    ran = int(ran)
    position.advance(ran)
    # Read back: parameter-server steps run at least once, maybe twice.
    step = int(global_step.numpy())
    loss = float(loss) if ran else None
    return _loop.StepResult(
      step=step, ran=ran, loss=loss, bad_loss=_guards.bad_loss(loss, limit)
    )

  return steps


def _check_same_start(strategy, global_step, position):
  """Raises unless every worker starts at the chief's step and input.

  Replicas that resumed different checkpoints would train apart, or wait
  for each other forever at the end.

  Raises:
    TrainingError: naming the range of steps the workers start at.
  """
  start = (
    int(global_step.numpy()),
    position.batches,
  )
  low, high = strategies.spread(strategy, start)
  if low != high:
    raise TrainingError(
      'The workers of the cluster resumed different checkpoints (steps '
      f"and batches read from {low} to {high}): each must see the chief's "
      'checkpoint directory. Restart the job.'
    )


def _graph_of(training, iterator):
  """A callable tracing the training loop's graph, for TensorBoard."""
  loop = training.loop
  if not hasattr(loop, 'get_concrete_function'):
    return None
  return lambda: (
    loop.get_concrete_function(iterator, tf.constant(1, tf.int64)).graph
  )


def _save(checkpoints):
  path = checkpoints.save()
  return checkpoints.last_saved_step, path


def _learning_rate(optimizer):
  """The optimizer's learning rate now, or None if it has none to read."""
  try:
    return float(optimizer.learning_rate)
  except (AttributeError, TypeError, ValueError):
    return None


def _read(variable):
  """A scalar variable's value now, or None when there is none."""
  if variable is None:
    return None
  return float(variable.numpy())


def _remove_scratch(directory):
  if tf.io.gfile.exists(directory):
    tf.io.gfile.rmtree(directory)
  parent = os.path.dirname(directory)
  try:
    # The last replica out removes the shared parent too.
    if not tf.io.gfile.listdir(parent):
      tf.io.gfile.rmtree(parent)
  except tf.errors.NotFoundError:
    pass


def _unavailable(message):
  r"""What a `tf.errors.UnavailableError` says about the task that was lost.

  TensorFlow's message is a traceback of the node that failed; the task and
  the reason are inside it.

  Example:
    >>> _unavailable('Graph execution error:\n... tasks are unhealthy '
    ...              '(stopped sending heartbeats):\n/job:worker/replica:0/task:1')
    'Task worker 1 of the cluster stopped answering (stopped sending heartbeats)'
  """
  task = re.search(
    r'unhealthy \([^)]*\):\s*/job:(\w+)/replica:\d+/task:(\d+)', message
  ) or re.search(r'remote target /job:(\w+)/replica:\d+/task:(\d+)', message)
  reason = re.search(r'unhealthy \(([^)]*)\)', message) or re.search(
    r'aborted by: ([^;\n]*)', message
  )
  if task and reason:
    kind, index = task.groups()
    return (
      f'Task {kind} {index} of the cluster stopped answering '
      f'({reason.group(1).strip()})'
    )
  lines = [line.strip() for line in message.splitlines()]
  lines = [
    line
    for line in lines
    if line
    and not line.startswith(
      ('Graph execution error', 'Detected at node', 'File "')
    )
  ]
  first = lines[0] if lines else message.strip()
  return (
    'A task of the cluster became unavailable (a parameter server '
    f'lost?): {first}'
  )


def _run_init(builder, restored):
  """Calls `builder.build_init` for a fresh or a restored model.

  An override that does not take `restored` is called for fresh models
  only: it was written when build_init had that one use.
  """
  if not restored:
    builder.build_init()
    return
  try:
    parameters = inspect.signature(builder.build_init).parameters
  except (TypeError, ValueError):
    return
  if 'restored' in parameters or any(
    p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
  ):
    builder.build_init(restored=True)
