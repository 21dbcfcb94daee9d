"""ModelTrainer: runs a ModelBuilder as whatever role this process has."""

import math
import os
import signal
import time

import tensorflow as tf

from tensorfx import _logging
from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx._errors import TrainingError
from tensorfx.data import _validation
from tensorfx.training import _checkpoints
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
      On the chief, the trained `tensorfx.prediction.Model`; elsewhere None.
    """
    output = getattr(output, 'output', output)
    if not output or not isinstance(output, str):
      raise ConfigurationError('train() needs the output directory (a path). '
                               f'Received: output={output!r}')
    config = self._config
    _configure_logging(model_builder.args)
    if config.param_server or (config.worker and
                               config.strategy_kind == 'parameter_server'):
      server = config.create_server()
      logger.info('Serving as %s', config.device)
      server.join()
      return None
    if config.evaluator:
      raise ConfigurationError(
          'This version of tensorfx trains on the chief only; run the '
          'evaluator role with a distributed-capable version. '
          f'Received: task={config.task}')
    return _ChiefRun(model_builder, output, config).run()


class _ChiefRun:
  """One training run on the chief: the outer loop and its collaborators."""

  def __init__(self, builder, output, config):
    self.builder = builder
    self.args = builder.args
    self.config = config
    self.output = output
    self.paths = {
        'checkpoints': os.path.join(output, 'checkpoints'),
        'model': os.path.join(output, 'model'),
        'summaries': os.path.join(output, 'summaries'),
        'analysis': os.path.join(output, 'analysis'),
        'job': os.path.join(output, 'job.yaml'),
    }
    self._stop_signal = None

  def run(self):
    tf.io.gfile.makedirs(self.output)
    args_dict = (self.args.to_dict() if hasattr(self.args, 'to_dict')
                 else dict(vars(self.args)))
    record = _jobinfo.JobRecord(self.paths['job'], args_dict,
                                self.config.to_dict())
    record.write()
    try:
      result = self._run(record)
    except KeyboardInterrupt:
      record.write(status='interrupted')
      raise
    except BaseException as e:
      record.write(status='failed', error=f'{type(e).__name__}: {e}')
      raise
    return result

  def _run(self, record):
    builder, args = self.builder, self.args
    dataset = builder.dataset
    if not dataset.analyzed:
      self._analyze(dataset)
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
    progress = _progress.Progress(max_steps)
    previous = self._install_signal_handlers()
    try:
      with _validation.data_errors():
        self._train(training, evaluation, checkpoints, summaries, progress,
                    max_steps)
        step = int(training.global_step.numpy())
        checkpoints.save()
        metrics = self._evaluate(evaluation, step, summaries, progress)
    finally:
      progress.close()
      summaries.close()
      self._restore_signal_handlers(previous)
    if self._stop_signal is not None:
      record.write(status='interrupted', global_step=step)
      raise SystemExit(128 + self._stop_signal)
    model_dir = _export.export(prediction, dataset.schema, self.paths['model'])
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
        summaries.graph('train', training.loop.get_concrete_function(
            iterator, tf.constant(1, tf.int64)).graph)
        graph_written = True
      ran = int(ran)
      step += ran
      exhausted = ran < min(bounds)
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
      if done or self._stop_signal is not None:
        if exhausted:
          logger.info('The training data ended at step %d', step)
        return
      due = (time.monotonic() - last_checkpoint >= checkpoint_secs or
             (checkpoint_steps and step % checkpoint_steps == 0))
      if due:
        checkpoints.save()
        last_checkpoint = time.monotonic()
        self._evaluate(evaluation, step, summaries, progress)

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


def _configure_logging(args):
  _logging.configure(getattr(args, 'log_level', 'info'),
                     getattr(args, 'log_level_tensorflow', 'warning'))
