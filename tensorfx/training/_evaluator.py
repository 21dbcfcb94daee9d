"""The evaluator role: evaluate each new checkpoint once, keep the best."""

import json
import os
import re
import time

import tensorflow as tf

from tensorfx import cloud
from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.training import _cluster
from tensorfx.training import _export
from tensorfx.training import _summaries

_STEP = re.compile(r'-(\d+)$')


class EvaluatorRun:
  """Follows the chief's checkpoints until the job ends.

  Each checkpoint is evaluated exactly once (the steps done are kept in
  `summaries/eval/evaluated.json`, so a restarted evaluator carries on);
  results go to `summaries/eval`; the best model by the builder's
  `evaluation_metric` is exported to `best_model/` beside `model/`.
  """

  def __init__(self, builder, output, config, poll_secs=1.0,
               timeout_secs=600.0):
    self.builder = builder
    self.output = output
    self.config = config
    self.poll_secs = poll_secs
    self.timeout_secs = timeout_secs
    dirs = cloud.output_dirs(output)
    self.checkpoints = dirs['checkpoints']
    self.summaries = dirs['summaries']
    self.best_dir = os.path.join(os.path.dirname(dirs['model']), 'best_model')
    self.state_path = os.path.join(dirs['summaries'], 'eval',
                                   'evaluated.json')

  def run(self):
    builder, dataset = self.builder, self.builder.dataset
    start = time.time()
    if getattr(builder.args, 'skip_bad_records', False):
      dataset.skip_bad_records()
    if not dataset.analyzed:
      _cluster.wait_for_analysis(dataset, os.path.join(self.output,
                                                       'analysis'),
                                 self.timeout_secs)
    _, evaluation, prediction = builder.build_graph_interfaces(self.config)
    if evaluation is None:
      raise ConfigurationError('The evaluator needs an eval source '
                               '(--data-eval).')
    checkpoint = tf.train.Checkpoint(global_step=builder.global_step,
                                     model=builder)
    summaries = _summaries.Summaries(self.summaries)
    name, mode = builder.evaluation_metric
    state = self._load_state()
    logger.info('Evaluator following %s (best by %s, %s)', self.checkpoints,
                name, mode)
    try:
      while True:
        finished = _cluster.job_finished(self.output, start)
        for path in self._new_checkpoints(state):
          step = int(_STEP.search(path).group(1))
          try:
            checkpoint.restore(path).expect_partial()
          except (tf.errors.NotFoundError, ValueError):
            logger.info('Checkpoint %s went away before evaluation', path)
            continue
          results = _evaluate(evaluation)
          summaries.scalars('eval', step, results)
          if dataset['eval'].bad_records:
            summaries.scalars('eval', step,
                              {'bad_records': dataset['eval'].bad_records})
          summaries.flush()
          cloud.report_metrics(results, step, checkpoint_path=path)
          state['evaluated'].append(step)
          logger.info('Evaluated step %d: %s', step, '  '.join(
              f'{k} {v:.4g}' for k, v in results.items()))
          if name not in results:
            raise ConfigurationError(
                f'evaluation_metric {name!r} is not among the evaluation '
                f'results {sorted(results)}.')
          if _better(results[name], state.get('best'), mode):
            _export.export(prediction, dataset.schema, self.best_dir)
            state['best'] = results[name]
            state['best_step'] = step
            logger.info('New best model at step %d: %s %.4g', step, name,
                        results[name])
          self._save_state(state)
        if finished:
          break
        time.sleep(self.poll_secs)
    finally:
      summaries.close()
    logger.info('The job has ended; the evaluator evaluated %d checkpoints',
                len(state['evaluated']))
    return state

  def _new_checkpoints(self, state):
    status = tf.train.get_checkpoint_state(self.checkpoints)
    if status is None:
      return []
    done = set(state['evaluated'])
    paths = [p for p in status.all_model_checkpoint_paths
             if _STEP.search(p) and int(_STEP.search(p).group(1)) not in done]
    return sorted(paths, key=lambda p: int(_STEP.search(p).group(1)))

  def _load_state(self):
    if tf.io.gfile.exists(self.state_path):
      with tf.io.gfile.GFile(self.state_path) as f:
        return json.load(f)
    return {'evaluated': []}

  def _save_state(self, state):
    tf.io.gfile.makedirs(os.path.dirname(self.state_path))
    with tf.io.gfile.GFile(self.state_path, 'w') as f:
      json.dump(state, f)


def _evaluate(evaluation):
  for metric in evaluation.metrics.values():
    metric.reset_state()
  evaluation.loop(evaluation.dataset())
  return {name: float(metric.result())
          for name, metric in evaluation.metrics.items()}


def _better(value, best, mode):
  if best is None:
    return True
  return value > best if mode == 'max' else value < best
