"""Actions besides training: evaluate a checkpoint, export a checkpoint.

`ModelTrainer.evaluate` is tfutils' `test_from_params`: the same builder
and arguments as training, a checkpoint (the latest by default), every
validation target, no training; the same evaluation engine and callbacks
as the chief's validation. `ModelTrainer.export` writes the SavedModel of
any checkpoint. Both run in this process, on its default device.
"""

import json
import os

import tensorflow as tf

from tensorfx import _atomic
from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.data import _validation
from tensorfx.training._checkpoints import export as _export
from tensorfx.training._checkpoints import restore as _restore
from tensorfx.training._cluster.config import Configuration
from tensorfx.training._run import jobinfo as _jobinfo
from tensorfx.training._run import skeleton as _skeleton
from tensorfx.training._run import tracking as _tracking


class Prepared(_skeleton.Run):
  """A run of an action: the builder built and restored from a checkpoint.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the job's latest.
    callbacks: the user's callbacks (`evaluate` calls them).
  """

  def __init__(self, builder, output, checkpoint, callbacks=()):
    super().__init__(
      builder, output, Configuration.local(), 'evaluate', callbacks
    )
    layout = self.layout
    self.ready_data(skip_bad_records=False)
    self.targets, training, self.interface, self.prediction = (
      self.build_graphs()
    )
    self.path = _restore.resolve_checkpoint(
      checkpoint or layout.checkpoints,
      what='--checkpoint',
      move_damaged=_own(layout, checkpoint),
    )
    self.checkpoints = self.open_checkpoints(training.global_step)
    self.checkpoints.restore(self.path, partial=True)
    self.step = int(training.global_step.numpy())
    logger.info('Restored %s (step %d)', self.path, self.step)


def evaluate(builder, output, checkpoint=None, callbacks=()):
  """Evaluates a checkpoint on every validation target, without training.

  The results are written to `OUTPUT/evaluations/CHECKPOINT.json` and, with
  `--experiment`, recorded as an MLflow run (tag `tensorfx.action:
  evaluate`).

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the latest of
      `OUTPUT/checkpoints`.
    callbacks: the user's callbacks (their `on_evaluate_end` runs).

  Returns:
    A dict: `checkpoint` (the prefix evaluated), `step`, and `results` (a
    dict from target name to its metric values).
  """
  prepared = Prepared(builder, output, checkpoint, callbacks)
  if prepared.interface is None or not prepared.targets:
    raise ConfigurationError(
      'Nothing to evaluate: give --data-eval or --eval-target.'
    )
  evaluation = prepared.evaluation(prepared.interface, prepared.targets)
  callback_list = prepared.callback_list(
    _tracking.create(prepared.settings.tracking, output),
    prepared.context(
      checkpoints=prepared.checkpoints, prediction=prepared.prediction
    ),
    source=_jobinfo.source(),
    arguments=prepared.arguments(),
  )
  path, step = prepared.path, prepared.step
  logs = dict(_skeleton.new_logs(), step=step)
  callback_list.on_train_begin(
    {
      'step': step,
      'max_steps': None,
      'batch_size': prepared.settings.validation.batch_size,
    }
  )
  try:
    with _validation.data_errors():
      results = evaluation.evaluate(step, checkpoint=path)
    callback_list.on_evaluate_end(step, results)
    logs.update(status='completed', metrics=results.primary)
  except BaseException as e:
    logs['error'] = f'{type(e).__name__}: {e}'
    raise
  finally:
    callback_list.on_train_end(logs)
  summary = write_evaluation(prepared.layout.evaluations, path, step, results)
  for name, values in summary['results'].items():
    logger.info(
      'Evaluated %s at step %d on %s: %s',
      path,
      step,
      name,
      '  '.join(
        f'{k} {v:.4g}' for k, v in values.items() if isinstance(v, (int, float))
      ),
    )
  return summary


def write_evaluation(directory, checkpoint, step, results):
  """Writes a checkpoint's evaluation to `DIRECTORY/CHECKPOINT.json`, whole.

  What `tensorfx evaluate` and each checkpoint of `--follow` write (and
  print): `{"checkpoint", "step", "results": {TARGET: {METRIC: value}}}`,
  with `"slices": {TARGET: {LABEL: {"examples", "flagged", "metrics"}}}`
  under `--eval-slices`.

  Example:
    >>> write_evaluation('/tmp/job/evaluations',
    ...     '/tmp/job/checkpoints/ckpt-9', 9, {'eval': {'loss': 0.2}})
    {'checkpoint': '/tmp/job/checkpoints/ckpt-9', 'step': 9, 'results': ...}

  Returns:
    The summary written.
  """
  summary = {
    'checkpoint': checkpoint,
    'step': step,
    'results': {target: dict(values) for target, values in results.items()},
  }
  if getattr(results, 'slices', None):
    summary['slices'] = results.slices
  tf.io.gfile.makedirs(directory)
  name = os.path.basename(str(checkpoint)) + '.json'
  _atomic.write_text(
    os.path.join(directory, name), json.dumps(summary, indent=1) + '\n'
  )
  return summary


def export(builder, output, checkpoint=None, directory=None):
  """Exports a checkpoint as the SavedModel over raw instances.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the latest of
      `OUTPUT/checkpoints` (`AIP_CHECKPOINT_DIR` on Vertex AI).
    directory: where to write the model; None for `OUTPUT/model`
      (`AIP_MODEL_DIR` on Vertex AI).

  Returns:
    The exported `tensorfx.prediction.Model`.
  """
  prepared = Prepared(builder, output, checkpoint)
  directory = directory or prepared.layout.model
  _export.export(prepared.prediction, builder.dataset.schema, directory)
  logger.info('Exported %s to %s', prepared.path, directory)
  from tensorfx.prediction import Model

  return Model.load(directory)


def _own(layout, checkpoint):
  """Whether `checkpoint` is the job's own (damage moved aside)."""
  if not checkpoint:
    return True
  path = os.path.abspath(str(checkpoint))
  return any(
    path.startswith(os.path.abspath(str(d)).rstrip('/') + '/')
    for d in (layout.output, layout.checkpoints)
  )
