"""The evaluator role: evaluate each new checkpoint once, keep the best.

The same evaluation engine and callbacks as the chief's validation: every
validation target (`--data-eval`, `--eval-batches`, `--eval-target`...),
`--eval-interval-steps` (the checkpoints of those steps, and the last),
`--validate-first` (the chief writes a checkpoint of step 0 for it),
`--best-metric` and `--keep-best-checkpoints` (in `checkpoints/best/`),
early stopping (it asks the chief to stop), TensorBoard, tuning reports
and MLflow records (into the chief's run).

`--action evaluate --follow` (`follow`) is the same engine run as a
command: Gematria runs continuous evaluation as its own binary beside
training (`--gematria_action=eval`); `tensorfx evaluate --follow` prints
each evaluation as one JSON line, until the job records its end in
`job.yaml` (completed, failed or interrupted).
"""

import contextlib
import json
import os
import re
import signal
import threading
from typing import Any

import tensorflow as tf

from tensorfx import _atomic
from tensorfx._errors import ConfigurationError
from tensorfx._errors import TrainingError
from tensorfx._logging import logger
from tensorfx.data import _validation
from tensorfx.training import _callbacks
from tensorfx.training._checkpoints import damaged as _damaged
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._cluster.config import Configuration
from tensorfx.training._run import actions as _actions
from tensorfx.training._run import jobinfo as _jobinfo
from tensorfx.training._run import skeleton as _skeleton
from tensorfx.training._run import summaries as _summaries
from tensorfx.training._run import tracking as _tracking

_STEP = re.compile(r'-(\d+)$')


def _step(path):
  """The step a checkpoint path ends in (`model-200`: 200)."""
  match = _STEP.search(path)
  if match is None:
    raise ValueError(f'Not a checkpoint path of a step. Received: {path!r}')
  return int(match.group(1))


class EvaluatorRun(_skeleton.Run):
  """Follows the chief's checkpoints until the job ends.

  Each checkpoint is evaluated exactly once (the steps done are kept in
  `summaries/eval/evaluated.json`, so a restarted evaluator carries on);
  results go to `summaries/eval[_TARGET]`; the best model by
  `--best-metric` (default: the builder's `evaluation_metric`) is
  exported to `best_model/` beside `model/`.

  Args:
    builder: the `ModelBuilder`.
    output: the job's output directory.
    config: the `Configuration` (of the evaluator task).
    poll_secs: seconds between looks for new checkpoints.
    timeout_secs: how long to wait for the chief's analysis, and for a
      failed chief's restart before the job counts as ended.
    callbacks: the user's callbacks.
    since: the unix time after which an end recorded in `job.yaml` is the
      job's end; None for when `run()` starts (an end recorded earlier is
      a previous run's: the task starts with the chief). `tensorfx
      evaluate --follow` passes 0: a job that has ended ends the following.
  """

  def __init__(
    self,
    builder,
    output,
    config,
    poll_secs=1.0,
    timeout_secs=600.0,
    callbacks=(),
    since=None,
  ):
    super().__init__(builder, output, config, 'evaluator', callbacks)
    self.since = since
    self.poll_secs = poll_secs
    self.timeout_secs = timeout_secs
    self._skipped = set()

  def run(self):
    """Evaluates checkpoints until the chief records the end of the job.

    Returns:
      The evaluator's state: `evaluated` (steps), `best`, `best_step`.
    """
    builder = self.builder
    start = _cluster.job_started()
    settings = self.ready_data(
      skip_bad_records=self.settings.data.skip_bad_records,
      wait_secs=self.timeout_secs,
    )
    targets, _, interface, prediction = self.build_graphs()
    if interface is None or not targets:
      raise ConfigurationError(
        'The evaluator needs an eval source '
        '(--data-eval) or a validation target '
        '(--eval-target).'
      )
    best = self.best()
    evaluation = self.evaluation(interface, targets)
    checkpoints = self.open_checkpoints(
      builder.global_step,
      keep_best=settings.checkpoints.keep_best,
      best_mode=best[2],
    )
    state = self._load_state()
    summaries = _summaries.Summaries(self.paths['summaries'])
    context = self.context(
      checkpoints=checkpoints,
      summaries=summaries,
      prediction=prediction,
    )
    tracker = _tracking.create(settings.tracking, self.output)
    callbacks = self.callback_list(
      tracker,
      context,
      extra=[
        _callbacks.BestModelExport(
          self.layout.best_model, state.get('best'), state.get('best_step')
        )
      ],
      source=_jobinfo.source(),
    )
    exporter = callbacks.find(_callbacks.BestModelExport)
    logger.info(
      'Evaluator following %s (best by %s/%s, %s)',
      self.paths['checkpoints'],
      best[0] or targets[0].name,
      best[1],
      best[2],
    )
    logs = _skeleton.new_logs()
    callbacks.on_train_begin(
      {
        'step': int(builder.global_step.numpy()),
        'max_steps': settings.loop.max_steps,
        'batch_size': settings.validation.batch_size,
      }
    )
    asked_to_stop = False
    interrupted = threading.Event()
    with _interrupts_between_evaluations(interrupted):
      try:
        while True:
          if interrupted.is_set():
            raise KeyboardInterrupt
          # A follower (`since` given) stops at the run's end, whatever it
          # was; the evaluator task waits a while for a failed chief's
          # restart.
          finished = _cluster.job_finished(
            self.output,
            start if self.since is None else self.since,
            self.timeout_secs if self.since is None else 0,
          )
          for path in self._due(
            state, settings.validation.interval_steps, finished
          ):
            if interrupted.is_set():
              raise KeyboardInterrupt
            step = _step(path)
            if path in self._skipped:
              continue
            try:
              checkpoints.restore(path, partial=True)
            except (tf.errors.NotFoundError, ValueError, TrainingError) as e:
              if not self._skip(path, e):
                raise
              continue
            with _validation.data_errors():
              results = evaluation.evaluate(step, checkpoint=path)
            callbacks.on_evaluate_end(step, results)
            state['evaluated'].append(step)
            state['best'], state['best_step'] = (
              exporter.best,
              exporter.best_step,
            )
            self._save_state(state)
            logs.update(step=step, metrics=results.primary)
            if context.stop_requested and not asked_to_stop:
              asked_to_stop = True
              _callbacks.request_stop(self.output, step, context.stop_reason)
          if finished:
            break
          interrupted.wait(self.poll_secs)
        logs.update(status='completed', reason=context.stop_reason)
      except BaseException as e:
        logs['error'] = f'{type(e).__name__}: {e}'
        raise
      finally:
        _skeleton.end(callbacks, summaries, logs)
    count = len(state['evaluated'])
    logger.info(
      'The job has ended; the evaluator evaluated %d checkpoint%s',
      count,
      '' if count == 1 else 's',
    )
    return state

  def _skip(self, path, error):
    """Whether checkpoint `path`, which failed with `error`, is skipped.

    Skipped when gone (the chief's rotation deleted it), or damaged, then
    moved aside as the chief does on resume. Never tried again.
    """
    if _damaged.went_away(path):
      logger.info('Checkpoint %s went away before evaluation', path)
    elif isinstance(error, _damaged.Unreadable):
      moved = _damaged.move_checkpoint_aside(path)
      logger.warning(
        'The checkpoint %s is damaged (%s)%s; not evaluating it',
        path,
        error.reason,
        f': moved aside to {moved[0]}' if moved else '',
      )
    else:
      return False
    self._skipped.add(path)
    return True

  def _due(self, state, interval, finished):
    """The checkpoints to evaluate now, oldest first.

    With `--eval-interval-steps N` only those of steps that are multiples
    of N, and the last one once the job has finished.
    """
    status = tf.train.get_checkpoint_state(self.paths['checkpoints'])
    if status is None:
      return []
    done = set(state['evaluated'])
    paths = [
      p
      for p in status.all_model_checkpoint_paths
      if _STEP.search(p) and _step(p) not in done
    ]
    paths.sort(key=_step)
    if interval:
      last = status.model_checkpoint_path if finished else None
      paths = [p for p in paths if _step(p) % interval == 0 or p == last]
    return paths

  def _load_state(self):
    fresh: dict[str, Any] = {'evaluated': []}
    if not tf.io.gfile.exists(self.layout.evaluator_state):
      return fresh
    try:
      with tf.io.gfile.GFile(self.layout.evaluator_state) as f:
        state = json.load(f)
      if not isinstance(state.get('evaluated'), list):
        raise ValueError('no list of evaluated steps')
    except (ValueError, AttributeError, tf.errors.OpError) as e:
      # Written by rename, so only something else can have damaged it.
      logger.warning(
        '%s is unreadable (%s): evaluating every checkpoint again',
        self.layout.evaluator_state,
        e,
      )
      return fresh
    if state.get('best') is not None and _atomic.incomplete(
      self.layout.best_model
    ):
      # Its export was interrupted (gs://): the next evaluation exports.
      logger.warning(
        '%s is incomplete: the next checkpoint evaluated will '
        'be exported there',
        self.layout.best_model,
      )
      state['best'] = state['best_step'] = None
    return state

  def _save_state(self, state):
    tf.io.gfile.makedirs(os.path.dirname(self.layout.evaluator_state))
    _atomic.write_text(
      self.layout.evaluator_state, json.dumps(state), fault='evaluator.state'
    )


@contextlib.contextmanager
def _interrupts_between_evaluations(interrupted):
  """Ctrl-C sets `interrupted`, which the loop acts on between evaluations.

  A KeyboardInterrupt raised anywhere (inside a checkpoint read, a summary
  write, a logging call) can leave a lock held and hang the cleanup; the
  loop raises it itself at a safe point instead. A second Ctrl-C
  interrupts at once.
  """

  def handler(signum, frame):
    del signum, frame
    if interrupted.is_set():
      raise KeyboardInterrupt
    interrupted.set()

  try:
    previous = signal.signal(signal.SIGINT, handler)
  except ValueError:  # Not the main thread: leave signals alone.
    yield
    return
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)


class PrintResults(_callbacks.Callback):
  """Prints each evaluation as a JSON line and writes it to `evaluations/`.

  Runs after each checkpoint is evaluated, in the following process; the
  line is what `tensorfx evaluate` prints for one checkpoint (see
  `actions.write_evaluation`).
  """

  def on_evaluate_end(self, step, results):
    paths = self.context.paths
    summary = _actions.write_evaluation(
      paths['evaluations'],
      os.path.join(paths['checkpoints'], f'ckpt-{step}'),
      step,
      results,
    )
    print(json.dumps(summary), flush=True)


def follow(builder, output, callbacks=(), poll_secs=1.0, timeout_secs=300.0):
  """Evaluates each new checkpoint of the job in `output` until it ends.

  A job that has already ended when this starts has its remaining
  checkpoints evaluated, then the call returns. Ctrl-C (KeyboardInterrupt)
  stops it; the checkpoints evaluated so far stay recorded.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    callbacks: the user's callbacks.
    poll_secs: seconds between looks for new checkpoints.
    timeout_secs: how long to wait for the job's analysis.

  Returns:
    The evaluator's state: `evaluated` (steps), `best`, `best_step`.
  """
  run = EvaluatorRun(
    builder,
    output,
    Configuration.local(),
    poll_secs=poll_secs,
    timeout_secs=timeout_secs,
    callbacks=[*callbacks, PrintResults()],
    since=0.0,
  )
  return run.run()
