"""Multi-task regression: one output per task, losses summed, metrics per task.

Gematria trains one model on several tasks (`--gematria_task_names`, one
throughput source filter each): the model has one output per task, the
training loss is the sum of the tasks' losses, and evaluation reports each
metric per task (`mape_hsw`, `abs_error_p90_skl`). Here a task is a target
feature; a block that has no measurement for a task (a missing target,
NaN) is left out of that task's loss and metrics, as Gematria masks it.

`FeedForwardRegression` trains several targets this way; a builder of its
own uses `task_loss` in `build_training` and `TaskMetrics` in
`build_evaluation` (see `samples/gematria/trainer.py`).
"""

from collections.abc import Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from tensorfx._errors import ConfigurationError
from tensorfx.training._evaluation import percentiles as _percentiles
from tensorfx.training._objectives import losses as _losses


def present(targets: Any) -> tuple[Any, Any]:
  """`(targets with 0 where missing, 1.0 where present else 0.0)`.

  A missing target is NaN (a schema default of `.nan`): it carries no
  weight, and 0 stands in so that no NaN reaches a loss or a metric.
  """
  targets = tf.cast(targets, tf.float32)
  known = tf.math.is_finite(targets)
  return (
    tf.where(known, targets, tf.zeros_like(targets)),
    tf.cast(known, tf.float32),
  )


def task_loss(
  predictions: Any, targets: Any, loss: Any, weights: Any | None = None
) -> Any:
  """The sum over tasks of each task's mean regression loss.

  Example:
    >>> def build_training(self, global_steps, inputs, inferences):
    ...   targets = tf.stack([inputs['y_hsw'], inputs['y_skl']], axis=1)
    ...   return (tensorfx.training.task_loss(inferences, targets,
    ...                                       self.settings.loss),
    ...           self.optimizer)

  Args:
    predictions: [B, T] predictions, one column per task.
    targets: [B, T] targets; NaN where an example has none for a task.
    loss: the loss type, or the job's `LossSettings` (see
      `tensorfx.training.regression_loss`).
    weights: optional [B] per-example weights.

  Returns:
    The scalar loss: each task's loss averaged over the examples that have
    its target, summed over the tasks.

  Raises:
    ConfigurationError: predictions and targets differ in shape.
  """
  predictions = tf.convert_to_tensor(predictions)
  targets = tf.cast(targets, predictions.dtype)
  if predictions.shape.rank != 2 or not predictions.shape.is_compatible_with(
    targets.shape
  ):
    raise ConfigurationError(
      'task_loss expects [batch, tasks] predictions and targets of the '
      f'same shape. Received: predictions.shape={predictions.shape}, '
      f'targets.shape={targets.shape}'
    )
  values, known = present(targets)
  if weights is not None:
    known *= tf.cast(weights, tf.float32)[:, tf.newaxis]
  losses = []
  for task in range(predictions.shape[1]):
    losses.append(
      _losses.regression_loss(
        predictions[:, task], values[:, task], loss, weights=known[:, task]
      )
    )
  return tf.add_n(losses)


class TaskMetrics:
  """Regression metrics per task, and over every task's examples together.

  For each task `T`: `rmse_T`, `mae_T`, `mape_T`, then the error
  percentiles of `ranks` (`abs_error_p90_T`, `rel_error_p90_T`); and
  `rmse`, `mae`, `mape` over all the (example, task) pairs that have a
  target. Examples without a task's target are left out of its metrics.

  Example:
    >>> def build_evaluation(self, inputs, outputs):
    ...   if not hasattr(self, '_tasks'):
    ...     self._tasks = TaskMetrics(['hsw', 'skl'],
    ...                               self.args.percentile_ranks)
    ...   targets = tf.stack([inputs['y_hsw'], inputs['y_skl']], axis=1)
    ...   values = tf.stack([outputs['value_hsw'], outputs['value_skl']],
    ...                     axis=1)
    ...   return self._tasks.update(targets, values)

  Args:
    names: the tasks' names, in the order of the columns.
    ranks: percentile ranks of the errors to report per task (Gematria's
      `--gematria_collected_percentile_ranks`); none by default.
    overall: whether to report the metrics over all tasks too.
  """

  def __init__(
    self,
    names: Sequence[str],
    ranks: Sequence[int] | None = (),
    overall: bool = True,
  ):
    self.names = list(names)
    if not self.names:
      raise ConfigurationError(
        f'TaskMetrics needs at least one task name. Received: names={names!r}'
      )
    self.per_task: list[list[Any]] = []
    for name in self.names:
      metrics = _base(f'_{name}') + [
        _percentiles.ErrorPercentile(
          rank,
          relative=relative,
          name=f'{"rel" if relative else "abs"}_error_p{rank:g}_{name}',
        )
        for relative in (False, True)
        for rank in ranks or ()
      ]
      self.per_task.append(metrics)
    self.overall = _base('') if overall else []

  def update(self, targets: Any, values: Any) -> dict[str, Any]:
    """Updates the metrics with a batch; returns them by name.

    Args:
      targets: [B, T] targets, NaN where a task has none.
      values: [B, T] predictions.
    """
    targets, known = present(targets)
    values = tf.cast(values, tf.float32)
    for task, metrics in enumerate(self.per_task):
      # [B, 1]: Keras' mean metrics weigh each example, not each batch.
      target = targets[:, task : task + 1]
      value = values[:, task : task + 1]
      for metric in metrics:
        metric.update_state(target, value, sample_weight=known[:, task])
    flat = [tf.reshape(t, [-1, 1]) for t in (targets, values)]
    for metric in self.overall:
      metric.update_state(*flat, sample_weight=tf.reshape(known, [-1]))
    return self.metrics

  @property
  def metrics(self) -> dict[str, Any]:
    """Every metric, by name: the overall ones first."""
    return {
      metric.name: metric
      for metric in self.overall + [m for ms in self.per_task for m in ms]
    }


def _base(suffix: str) -> list[Any]:
  return [
    tf_keras.metrics.RootMeanSquaredError(name=f'rmse{suffix}'),
    tf_keras.metrics.MeanAbsoluteError(name=f'mae{suffix}'),
    tf_keras.metrics.MeanAbsolutePercentageError(name=f'mape{suffix}'),
  ]
