"""ModelTrainer: runs a ModelBuilder as whatever role this process has."""

import json
import os
import signal
import sys
import time

import tensorflow as tf

from tensorfx import _logging
from tensorfx import cloud
from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx._errors import TrainingError
from tensorfx.data import _validation
from tensorfx.training import _actions
from tensorfx.training import _checkpoints
from tensorfx.training import _cluster
from tensorfx.training import _export
from tensorfx.training import _guards
from tensorfx.training import _jobinfo
from tensorfx.training import _progress
from tensorfx.training import _summaries
from tensorfx.training import _tracking
from tensorfx.training import _validator
from tensorfx.training._config import Configuration



class ModelTrainer:
  """Trains a model as the role this process has in the job.

  Example:
    >>> args, output = FeedForwardClassificationArguments.parse(parse_job=True)
    >>> dataset = tfx.data.CsvDataSet(args.data_schema, train=args.data_train,
    ...                               eval=args.data_eval,
    ...                               features=args.data_features)
    >>> model = ModelTrainer().train(FeedForwardClassification(args, dataset),
    ...                              output)
    >>> model.predict(['6.3,3.3,6,2.5'])

  Args:
    config: the `Configuration`; read from `TF_CONFIG` when not given.
  """

  def __init__(self, config=None):
    if config is not None and not isinstance(config, Configuration):
      raise ConfigurationError('config must be a Configuration or None. '
                               f'Received: config={config!r}')
    self._config = config or Configuration.environment()

  @property
  def config(self):
    """The training `Configuration`."""
    return self._config

  def train(self, model_builder, output):
    """Runs training for this process's role.

    The chief trains, checkpoints, evaluates and exports; parameter servers
    and workers of a parameter-server cluster serve until the job ends.

    Args:
      model_builder: the `ModelBuilder` to train.
      output: the job's output directory (local or gs://); re-using one
        resumes from its latest checkpoint.

    With `--action evaluate` or `--action export` in the arguments (what
    `tensorfx evaluate` and `tensorfx export` pass), the trainer script's
    call does that instead, in this process: `evaluate()` prints its results
    as one JSON line and the process exits (code 0); `export()` returns the
    exported model.

    Returns:
      On the chief, the trained `tensorfx.prediction.Model`. Other roles
      (parameter servers, workers, the evaluator) do not return: their
      process exits (code 0) when the job has ended, so a trainer script
      written for the chief runs unchanged as every task.
    """
    output = _output(output, 'train')
    config = self._config
    args = model_builder.args
    _configure_logging(args)
    action = getattr(args, 'action', None) or 'train'
    if action == 'evaluate':
      summary = self.evaluate(model_builder, output,
                              getattr(args, 'checkpoint', None))
      print(json.dumps(summary), flush=True)
      raise SystemExit(0)
    if action == 'export':
      return self.export(model_builder, output,
                         getattr(args, 'checkpoint', None),
                         getattr(args, 'export_dir', None))
    timeout = float(getattr(args, 'cluster_timeout_secs', None) or 300)
    if config.evaluator:
      from tensorfx.training import _evaluator  # pylint: disable=g-import-not-at-top
      _evaluator.EvaluatorRun(model_builder, output, config,
                              timeout_secs=timeout).run()
      _exit_task(config)
    if config.strategy_kind == 'parameter_server' and not config.master:
      # Parameter servers and workers only serve: the chief sends them work.
      _cluster.serve(config, output)
      _exit_task(config)
    if config.strategy_kind == 'parameter_server':
      # Servers are up from the start: fail fast, naming a missing one.
      _cluster.wait_for_cluster(config, timeout)
    elif config.strategy_kind == 'multi_worker_mirrored':
      # Collective ops must be set up before any other TensorFlow work.
      config.create_device_setter(args)
    model = _ChiefRun(model_builder, output, config).run()
    if not config.master:
      _exit_task(config)
    return model

  def evaluate(self, model_builder, output, checkpoint=None):
    """Evaluates a checkpoint on the validation targets, without training.

    `002_*`'s `test_from_params`: the same builder and arguments as
    training, one checkpoint, every validation target (`--data-eval`,
    `--eval-target`). Results are written to
    `OUTPUT/evaluations/CHECKPOINT.json` (and to MLflow with
    `--experiment`).

    Example:
      >>> ModelTrainer().evaluate(builder, '/tmp/job')
      {'checkpoint': '/tmp/job/checkpoints/ckpt-300', 'step': 300,
       'results': {'eval': {'loss': 0.11, 'accuracy': 0.97}}}

    Args:
      model_builder: the `ModelBuilder` (not yet built).
      output: the job's output directory.
      checkpoint: a checkpoint prefix or directory; None for the latest of
        `OUTPUT/checkpoints`.

    Returns:
      A dict: `checkpoint`, `step`, `results` (target name -> metrics).
    """
    output = _output(output, 'evaluate')
    _configure_logging(model_builder.args)
    return _actions.evaluate(model_builder, output, checkpoint)

  def export(self, model_builder, output, checkpoint=None, directory=None):
    """Exports a checkpoint as the SavedModel over raw instances.

    Example:
      >>> model = ModelTrainer().export(builder, '/tmp/job',
      ...                               '/tmp/job/checkpoints/best')
      >>> model.predict(['6.3,3.3,6,2.5'])

    Args:
      model_builder: the `ModelBuilder` (not yet built).
      output: the job's output directory.
      checkpoint: a checkpoint prefix or directory; None for the latest of
        `OUTPUT/checkpoints`.
      directory: where to write the model; None for `OUTPUT/model`.

    Returns:
      The exported `tensorfx.prediction.Model`.
    """
    output = _output(output, 'export')
    _configure_logging(model_builder.args)
    return _actions.export(model_builder, output, checkpoint, directory)


class _ChiefRun:
  """One training run: the outer loop and its collaborators.

  Runs on the chief, and on every worker of a multi-worker (mirrored)
  cluster, where all replicas step together; only the chief writes the
  real checkpoints, summaries, job record and model, the other workers
  write theirs to a scratch directory that is removed at the end.
  """

  def __init__(self, builder, output, config):
    self.builder = builder
    self.args = builder.args
    self.config = config
    self.output = output
    self.chief = config.master
    base = output if self.chief else os.path.join(
        output, '.workers', f'{config.task.type}-{config.task.index}')
    # On Vertex AI, AIP_MODEL_DIR & co. (per trial when tuning) win.
    dirs = cloud.output_dirs(base) if self.chief else cloud.output_dirs(
        base, environ={})
    self.paths = {
        'checkpoints': dirs['checkpoints'],
        'model': dirs['model'],
        'summaries': dirs['summaries'],
        'analysis': os.path.join(output, 'analysis'),
        'job': os.path.join(base, 'job.yaml'),
    }
    self.scratch = None if self.chief else base
    # With an evaluator task in the cluster, evaluation is its job.
    self.evaluate = not (config.cluster is not None and
                         'evaluator' in config.cluster.jobs)
    self._stop_signal = None
    self._untraced_prediction = None
    # Bad records each source had skipped at the last report.
    self._bad_records = {}

  def run(self):
    tf.io.gfile.makedirs(os.path.dirname(self.paths['job']))
    args_dict = (self.args.to_dict() if hasattr(self.args, 'to_dict')
                 else dict(vars(self.args)))
    record = _jobinfo.JobRecord(self.paths['job'], args_dict,
                                self.config.to_dict())
    record.write()
    self._tracker = _tracking.Tracker()
    try:
      # Only the chief records the run; tracking is off unless asked for.
      self._tracker = _tracking.create(self.args, self.output,
                                       enabled=self.chief)
      self._tracker.start(args_dict, record.source)
      result = self._run(record)
    except SystemExit:
      # A requested stop: the record already says 'interrupted'.
      self._tracker.finish('interrupted')
      raise
    except KeyboardInterrupt:
      record.write(status='interrupted')
      self._tracker.finish('interrupted')
      raise
    except tf.errors.UnavailableError as e:
      error = TrainingError(
          'A task of the cluster became unavailable (a parameter server '
          f'lost?): {e.message.splitlines()[0]}. Restart the job: it '
          'resumes from the last checkpoint.')
      record.write(status='failed', error=str(error))
      self._tracker.set_tags(error=str(error))
      self._tracker.finish('failed')
      raise error from None
    except BaseException as e:
      record.write(status='failed', error=f'{type(e).__name__}: {e}')
      self._tracker.set_tags(error=f'{type(e).__name__}: {e}')
      self._tracker.finish('failed')
      raise
    finally:
      if self.scratch:
        _remove_scratch(self.scratch)
    return result

  def _run(self, record):
    builder, args = self.builder, self.args
    dataset = builder.dataset
    if getattr(args, 'skip_bad_records', False):
      # Parameter-server workers run the input pipeline in their own
      # processes, which cannot count into this one.
      dataset.skip_bad_records(
          count=self.config.strategy_kind != 'parameter_server')
    if not dataset.analyzed:
      if self.chief:
        self._analyze(dataset)
      else:
        _cluster.wait_for_analysis(
            dataset, self.paths['analysis'],
            float(getattr(args, 'cluster_timeout_secs', None) or 300))
    # Validation targets with files of their own become dataset sources.
    targets = _validator.prepare_targets(args, dataset)
    with _validation.data_errors():
      training, evaluation, prediction = builder.build_graph_interfaces(
          self.config)
    self._untraced_prediction = prediction
    best = _actions.best_metric(args, builder)
    checkpoints = _checkpoints.Checkpoints(
        self.paths['checkpoints'], training.global_step,
        max_to_keep=getattr(args, 'keep_checkpoints', None) or 5,
        keep_best=getattr(args, 'keep_best_checkpoints', None) or 0,
        best_mode=best[2], model=builder)
    if checkpoints.restore_latest() is None:
      builder.build_init()
    summaries = _summaries.Summaries(self.paths['summaries'])
    max_steps = args.max_steps if args.max_steps and args.max_steps > 0 \
        else None
    # Replicas step together: the chief's progress tells for all.
    progress = _progress.Progress(max_steps, enabled=self.chief)
    self._validator = _validator.Validator(
        evaluation, targets, summaries, progress, self._tracker,
        checkpoints, best)
    self._guard = _guards.LossGuard(getattr(args, 'thres_loss', None),
                                    getattr(args, 'nan_restore', None) or 0)
    self._tracked_checkpoint = None
    previous = self._install_signal_handlers()
    try:
      with _validation.data_errors():
        self._train(training, checkpoints, summaries, progress, max_steps)
        step = int(training.global_step.numpy())
        self._save(checkpoints)
        if self.evaluate:
          self._validator.validate(step)
        metrics = self._validator.primary if self.evaluate else {}
        self._report_bad_records(step, summaries)
    finally:
      progress.close()
      summaries.close()
      self._restore_signal_handlers(previous)
    if self._stop_signal is not None:
      record.write(status='interrupted', global_step=step)
      logger.warning('Stopped at step %d; the checkpoint is %s. Run the same '
                     'command again to resume.', step, checkpoints.latest)
      raise SystemExit(128 + self._stop_signal)
    model_dir = _export.export(prediction, dataset.schema, self.paths['model'])
    if not self.chief:
      return None
    bad = {name: count for name, count in dataset.bad_records().items()
           if count}
    if bad:
      logger.warning('Skipped bad records: %s', ', '.join(
          f'{count} of {name}' for name, count in bad.items()))
    extra = {'bad_records': bad} if bad else {}
    if len(self._validator.results) > 1:
      extra['validation'] = self._validator.results
    if checkpoints.best:
      extra['best_checkpoints'] = checkpoints.best
    if self._guard.restores:
      extra['nan_restores'] = self._guard.restores
    record.write(status='completed', global_step=step, metrics=metrics,
                 checkpoint=checkpoints.latest, model=model_dir, **extra)
    self._tracker.set_tags(model=model_dir)
    self._tracker.finish('completed')
    from tensorfx.prediction import Model  # pylint: disable=g-import-not-at-top
    return Model.load(model_dir)

  def _analyze(self, dataset):
    # A previous run's analysis of the same data is reused (the dataset
    # compares fingerprints and logs its decision).
    dataset.analyze(self.paths['analysis'])

  def _train(self, training, checkpoints, summaries, progress, max_steps):
    args = self.args
    global_step = training.global_step
    step = int(global_step.numpy())
    if max_steps is not None and step >= max_steps:
      logger.info('Already trained to step %d (--max-steps %d)', step,
                   max_steps)
      return
    if self.evaluate and getattr(args, 'validate_first', False):
      self._validator.validate(step)
    guard = self._guard
    if guard.nan_restores and not checkpoints.latest:
      # A non-finite loss before the first checkpoint needs one to go to.
      self._save(checkpoints)
    log_every = max(1, args.log_interval_steps)
    per_call = max(1, getattr(args, 'steps_per_loop', 0) or log_every)
    checkpoint_steps = getattr(args, 'checkpoint_interval_steps', None)
    checkpoint_secs = args.checkpoint_interval_secs
    eval_steps = (getattr(args, 'eval_interval_steps', None)
                  if self.evaluate else None)
    iterator = iter(training.dataset)
    logger.info('Training from step %d%s, %d examples per step', step,
                 f' to {max_steps}' if max_steps else '', training.batch_size)
    last_checkpoint = time.monotonic()
    window_start, window_step = time.monotonic(), step
    first_call = True
    while True:
      # Run up to the next log, checkpoint, validation or final step in one
      # call.
      bounds = [per_call, log_every - step % log_every]
      if max_steps is not None:
        bounds.append(max_steps - step)
      if checkpoint_steps:
        bounds.append(checkpoint_steps - step % checkpoint_steps)
      if eval_steps:
        bounds.append(eval_steps - step % eval_steps)
      previous_step = step
      loss, ran = training.loop(iterator, tf.constant(min(bounds), tf.int64))
      # Read back: parameter-server steps run at least once, maybe twice.
      step = int(global_step.numpy())
      ran = int(ran)
      # One read per call: the loop stopped at the first non-finite loss
      # or one above --thres-loss, if any; the guard raises or restores.
      loss = float(loss) if ran else None
      if guard.check(loss, step, previous_step, ran,
                     checkpoints.latest) == _guards.RESTORE:
        self._restore_after_nan(checkpoints, loss, step)
        step = int(global_step.numpy())
        window_start, window_step = time.monotonic(), step
        continue
      exhausted = ran < min(bounds)
      if ran and (step % log_every == 0 or exhausted):
        now = time.monotonic()
        rate = ((step - window_step) * training.batch_size /
                max(now - window_start, 1e-9))
        window_start, window_step = now, step
        values = {'loss': loss, 'examples_per_sec': rate}
        # The line first: the first summary also opens the event file.
        progress.update(step, loss, rate)
        summaries.scalars('train', step, values)
        self._tracker.log_train(step, values)
        self._report_bad_records(step, summaries)
      else:
        progress.update(step)
      if first_call:
        # Once step 1 is reported, which then waits for neither: the graph
        # summary, and the serving signatures (traced once training runs,
        # so a serving bug surfaces in the first minute, not at export).
        first_call = False
        if hasattr(training.loop, 'get_concrete_function'):
          summaries.graph('train', training.loop.get_concrete_function(
              iterator, tf.constant(1, tf.int64)).graph)
        if self._untraced_prediction is not None:
          _ = self._untraced_prediction.signatures
          self._untraced_prediction = None
        # Examples/s leave out this one-off work.
        window_start, window_step = time.monotonic(), step
      done = exhausted or (max_steps is not None and step >= max_steps)
      # Replicas of a multi-worker cluster must take the same decisions.
      if self._agree(self._stop_signal is not None) and not done:
        self._stop_signal = self._stop_signal or signal.SIGTERM
        return
      if done:
        if exhausted:
          logger.info('The training data ended at step %d', step)
        return
      due = (time.monotonic() - last_checkpoint >= checkpoint_secs or
             bool(checkpoint_steps and step % checkpoint_steps == 0))
      if self._agree(due):
        self._save(checkpoints)
        last_checkpoint = time.monotonic()
        if self.evaluate and not eval_steps:
          self._validator.validate(step)
      if eval_steps and step % eval_steps == 0:
        self._validator.validate(step)

  def _save(self, checkpoints):
    """Saves a checkpoint and records it."""
    path = checkpoints.save()
    step = checkpoints.last_saved_step
    if path and step != self._tracked_checkpoint:
      self._tracker.log_checkpoint(step, path, recent=checkpoints.recent)
      self._tracked_checkpoint = step
    return path

  def _restore_after_nan(self, checkpoints, loss, step):
    """Goes back to the last checkpoint after a non-finite loss."""
    guard = self._guard
    logger.warning(
        'The training loss is %s at step %d: restoring %s and training on '
        '(restore %d of %d, --nan-restore)', loss, step, checkpoints.latest,
        len(guard.restores), guard.nan_restores)
    checkpoints.restore_latest()
    self._tracker.set_tags(nan_restores=json.dumps(guard.restores))

  def _report_bad_records(self, step, summaries):
    """Logs and summarizes the bad records skipped since the last report."""
    for name, count in self.builder.dataset.bad_records().items():
      if count != self._bad_records.get(name, 0):
        logger.warning('Skipped %d bad records of %s so far (step %d)',
                       count, name, step)
        summaries.scalars(name, step, {'bad_records': count})
        self._bad_records[name] = count

  def _agree(self, flag):
    """True when any replica says so (always just `flag` off multi-worker)."""
    strategy = self.builder.strategy
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
      return bool(flag)
    votes = strategy.run(lambda: tf.constant(1 if flag else 0))
    return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, votes,
                                axis=None) > 0)

  def _install_signal_handlers(self):
    """SIGTERM (preemption) and SIGINT stop after the current call."""
    def stop(signum, frame):
      del frame
      if self._stop_signal is not None:
        raise KeyboardInterrupt
      self._stop_signal = signum
      logger.warning('Received signal %d: saving a checkpoint and stopping',
                      signum)
    try:
      return {s: signal.signal(s, stop)
              for s in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # Not the main thread: leave signals alone.
      return {}

  @staticmethod
  def _restore_signal_handlers(previous):
    for s, handler in previous.items():
      signal.signal(s, handler)


def _output(output, method):
  output = getattr(output, 'output', output)
  if not output or not isinstance(output, str):
    raise ConfigurationError(f'{method}() needs the output directory (a path). '
                             f'Received: output={output!r}')
  return output


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


def _exit_task(config):
  logger.info('%s is done', config.device or config.task.type)
  sys.stdout.flush()
  sys.stderr.flush()
  # A server's gRPC threads would keep the interpreter alive: leave now.
  os._exit(0)  # pylint: disable=protected-access


def _configure_logging(args):
  _logging.configure(getattr(args, 'log_level', 'info'),
                     getattr(args, 'log_level_tensorflow', 'warning'))
