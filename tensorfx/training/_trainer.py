"""ModelTrainer: runs a ModelBuilder as whatever role this process has."""

import math
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
from tensorfx.training import _checkpoints
from tensorfx.training import _cluster
from tensorfx.training import _export
from tensorfx.training import _jobinfo
from tensorfx.training import _progress
from tensorfx.training import _summaries
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

    Returns:
      On the chief, the trained `tensorfx.prediction.Model`. Other roles
      (parameter servers, workers, the evaluator) do not return: their
      process exits (code 0) when the job has ended, so a trainer script
      written for the chief runs unchanged as every task.
    """
    output = getattr(output, 'output', output)
    if not output or not isinstance(output, str):
      raise ConfigurationError('train() needs the output directory (a path). '
                               f'Received: output={output!r}')
    config = self._config
    args = model_builder.args
    _configure_logging(args)
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

  def run(self):
    tf.io.gfile.makedirs(os.path.dirname(self.paths['job']))
    args_dict = (self.args.to_dict() if hasattr(self.args, 'to_dict')
                 else dict(vars(self.args)))
    record = _jobinfo.JobRecord(self.paths['job'], args_dict,
                                self.config.to_dict())
    record.write()
    try:
      result = self._run(record)
    except SystemExit:
      raise  # A requested stop: the record already says 'interrupted'.
    except KeyboardInterrupt:
      record.write(status='interrupted')
      raise
    except tf.errors.UnavailableError as e:
      error = TrainingError(
          'A task of the cluster became unavailable (a parameter server '
          f'lost?): {e.message.splitlines()[0]}. Restart the job: it '
          'resumes from the last checkpoint.')
      record.write(status='failed', error=str(error))
      raise error from None
    except BaseException as e:
      record.write(status='failed', error=f'{type(e).__name__}: {e}')
      raise
    finally:
      if self.scratch:
        _remove_scratch(self.scratch)
    return result

  def _run(self, record):
    builder, args = self.builder, self.args
    dataset = builder.dataset
    if not dataset.analyzed:
      if self.chief:
        self._analyze(dataset)
      else:
        _cluster.wait_for_analysis(
            dataset, self.paths['analysis'],
            float(getattr(args, 'cluster_timeout_secs', None) or 300))
    with _validation.data_errors():
      training, evaluation, prediction = builder.build_graph_interfaces(
          self.config)
    checkpoints = _checkpoints.Checkpoints(
        self.paths['checkpoints'], training.global_step, model=builder)
    if checkpoints.restore_latest() is None:
      builder.build_init()
    summaries = _summaries.Summaries(self.paths['summaries'])
    max_steps = args.max_steps if args.max_steps and args.max_steps > 0 \
        else None
    # Replicas step together: the chief's progress tells for all.
    progress = _progress.Progress(max_steps, enabled=self.chief)
    previous = self._install_signal_handlers()
    try:
      with _validation.data_errors():
        self._train(training, evaluation, checkpoints, summaries, progress,
                    max_steps)
        step = int(training.global_step.numpy())
        checkpoints.save()
        metrics = (self._evaluate(evaluation, step, summaries, progress)
                   if self.evaluate else {})
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
    record.write(status='completed', global_step=step, metrics=metrics,
                 checkpoint=checkpoints.latest, model=model_dir)
    from tensorfx.prediction import Model  # pylint: disable=g-import-not-at-top
    return Model.load(model_dir)

  def _analyze(self, dataset):
    analysis_dir = self.paths['analysis']
    # A previous run's complete analysis of the same job is reused.
    if dataset.use_analysis(analysis_dir):
      logger.info('Using the analysis in %s', analysis_dir)
      return
    logger.info('No analysis given (--data-metadata): analyzing the training '
                 'data into %s', analysis_dir)
    dataset.analyze(analysis_dir)

  def _train(self, training, evaluation, checkpoints, summaries, progress,
             max_steps):
    args = self.args
    global_step = training.global_step
    step = int(global_step.numpy())
    if max_steps is not None and step >= max_steps:
      logger.info('Already trained to step %d (--max-steps %d)', step,
                   max_steps)
      return
    log_every = max(1, args.log_interval_steps)
    per_call = max(1, getattr(args, 'steps_per_loop', 0) or log_every)
    checkpoint_steps = getattr(args, 'checkpoint_interval_steps', None)
    checkpoint_secs = args.checkpoint_interval_secs
    iterator = iter(training.dataset)
    logger.info('Training from step %d%s, %d examples per step', step,
                 f' to {max_steps}' if max_steps else '', training.batch_size)
    last_checkpoint = time.monotonic()
    window_start, window_step = time.monotonic(), step
    graph_written = False
    while True:
      # Run up to the next log, checkpoint or final step in one call.
      bounds = [per_call, log_every - step % log_every]
      if max_steps is not None:
        bounds.append(max_steps - step)
      if checkpoint_steps:
        bounds.append(checkpoint_steps - step % checkpoint_steps)
      loss, ran = training.loop(iterator, tf.constant(min(bounds), tf.int64))
      if not graph_written:
        if hasattr(training.loop, 'get_concrete_function'):
          summaries.graph('train', training.loop.get_concrete_function(
              iterator, tf.constant(1, tf.int64)).graph)
        graph_written = True
      # Read back: parameter-server steps run at least once, maybe twice.
      step = int(global_step.numpy())
      exhausted = int(ran) < min(bounds)
      if ran and (step % log_every == 0 or exhausted):
        loss = float(loss)
        now = time.monotonic()
        rate = ((step - window_step) * training.batch_size /
                max(now - window_start, 1e-9))
        window_start, window_step = now, step
        if not math.isfinite(loss):
          raise TrainingError(
              f'The training loss is {loss} at step {step}; stopping rather '
              'than training on. Lower the learning rate or check the data. '
              f'The last checkpoint is {checkpoints.latest}.')
        summaries.scalars('train', step, {'loss': loss,
                                          'examples_per_sec': rate})
        progress.update(step, loss, rate)
      else:
        progress.update(step)
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
        checkpoints.save()
        last_checkpoint = time.monotonic()
        if self.evaluate:
          self._evaluate(evaluation, step, summaries, progress)

  def _agree(self, flag):
    """True when any replica says so (always just `flag` off multi-worker)."""
    strategy = self.builder.strategy
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
      return bool(flag)
    votes = strategy.run(lambda: tf.constant(1 if flag else 0))
    return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, votes,
                                axis=None) > 0)

  def _evaluate(self, evaluation, step, summaries, progress):
    if evaluation is None:
      return {}
    for metric in evaluation.metrics.values():
      metric.reset_state()
    start = time.monotonic()
    count = int(evaluation.loop(evaluation.dataset()))
    results = {name: float(metric.result())
               for name, metric in evaluation.metrics.items()}
    summaries.scalars('eval', step, results)
    summaries.flush()
    # In a tuning trial, the tuning service reads these.
    cloud.report_metrics(results, step)
    shown = '  '.join(f'{k} {v:.4g}' for k, v in results.items())
    progress.message(f'Evaluation at step {step} on {count} examples '
                     f'({time.monotonic() - start:.1f}s): {shown}')
    return results

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
