"""Actions besides training: evaluate a checkpoint, export a checkpoint.

`ModelTrainer.evaluate` is `002_*`'s `test_from_params`: the same builder
and arguments as training, a checkpoint (the latest by default), every
validation target, no training. `ModelTrainer.export` writes the SavedModel
of any checkpoint. Both run in this process, on its default device.
"""

import json
import os

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _validation
from tensorfx.training import _args
from tensorfx.training import _checkpoints
from tensorfx.training import _export
from tensorfx.training import _jobinfo
from tensorfx.training import _restore
from tensorfx.training import _tracking
from tensorfx.training import _validator
from tensorfx.training._config import Configuration


def _prepare(builder, output, checkpoint):
  """Builds the graphs and restores `checkpoint`; returns what evaluation needs."""
  args = builder.args
  dataset = builder.dataset
  if not dataset.analyzed:
    analysis = os.path.join(output, 'analysis')
    if not dataset.use_analysis(analysis):
      raise DataError(
          'The dataset has not been analyzed: give --data-metadata, or train '
          f'first (training writes its analysis to {analysis}).')
  targets = _validator.prepare_targets(args, dataset)
  with _validation.data_errors():
    training, evaluation, prediction = builder.build_graph_interfaces(
        Configuration.local())
  path = _restore.resolve_checkpoint(
      checkpoint or os.path.join(output, 'checkpoints'), what='--checkpoint')
  checkpoints = _checkpoints.Checkpoints(
      os.path.join(output, 'checkpoints'), training.global_step,
      model=builder)
  checkpoints.restore(path, partial=True)
  step = int(training.global_step.numpy())
  logger.info('Restored %s (step %d)', path, step)
  return targets, evaluation, prediction, path, step


def evaluate(builder, output, checkpoint=None):
  """Evaluates a checkpoint on every validation target, without training.

  The results are written to `OUTPUT/evaluations/CHECKPOINT.json` and, with
  `--experiment`, recorded as an MLflow run (tag `tensorfx.action:
  evaluate`).

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the latest of
      `OUTPUT/checkpoints`.

  Returns:
    A dict: `checkpoint` (the prefix evaluated), `step`, and `results` (a
    dict from target name to its metric values).
  """
  targets, evaluation, _, path, step = _prepare(builder, output, checkpoint)
  if evaluation is None or not targets:
    raise ConfigurationError(
        'Nothing to evaluate: give --data-eval or --eval-target.')
  tracker = _tracking.create(builder.args, output)
  tracker.start(_arguments(builder.args), _jobinfo.source(),
                action='evaluate', resume=False)
  tracker.set_tags(checkpoint=path, global_step=step)
  try:
    with _validation.data_errors():
      results = _validator.Validator(evaluation, targets,
                                     tracker=tracker).validate(step)
  except BaseException:
    tracker.finish('failed')
    raise
  tracker.finish('completed')
  for name, values in results.items():
    logger.info('Evaluated %s at step %d on %s: %s', path, step, name,
                '  '.join(f'{k} {v:.4g}' for k, v in values.items()))
  summary = {'checkpoint': path, 'step': step, 'results': results}
  directory = os.path.join(output, 'evaluations')
  tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(os.path.join(
      directory, os.path.basename(path) + '.json'), 'w') as f:
    f.write(json.dumps(summary, indent=1) + '\n')
  return summary


def export(builder, output, checkpoint=None, directory=None):
  """Exports a checkpoint as the SavedModel over raw instances.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the latest of
      `OUTPUT/checkpoints`.
    directory: where to write the model; None for `OUTPUT/model`.

  Returns:
    The exported `tensorfx.prediction.Model`.
  """
  _, _, prediction, path, _ = _prepare(builder, output, checkpoint)
  directory = directory or os.path.join(output, 'model')
  _export.export(prediction, builder.dataset.schema, directory)
  logger.info('Exported %s to %s', path, directory)
  from tensorfx.prediction import Model  # pylint: disable=g-import-not-at-top
  return Model.load(directory)


def best_metric(args, builder):
  """`(target, name, mode)` of `--best-metric`, or the model's default."""
  return _args.parse_best_metric(getattr(args, 'best_metric', None),
                                 tuple(builder.evaluation_metric))


def _arguments(args):
  return args.to_dict() if hasattr(args, 'to_dict') else dict(vars(args))
