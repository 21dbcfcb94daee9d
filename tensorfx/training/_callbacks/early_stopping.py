"""EarlyStopping: stop when the best metric stops improving."""

import math
import os
from typing import Any, Optional

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.training._callbacks import base

# Where the best state is kept, under the job's checkpoints/.
SNAPSHOT = 'early_stopping'


class EarlyStopping(base.Callback):
  """Stops training when a validation metric has stopped improving.

  After each validation it compares the metric with the best value so
  far; after `patience` validations in a row without an improvement of
  more than `min_delta` it asks the run to stop. The best state is kept
  (in `checkpoints/early_stopping/`) and, with `restore_best`, put back
  into the model at the end, so the exported model is the best one, not
  the last. `--early-stopping-patience N` adds one with the defaults.

  With an `evaluator` task the evaluator decides: it asks the chief to
  stop (the chief stops at its next log interval), and its `best_model/`
  is the best model.

  Example:
    >>> ModelTrainer(callbacks=[EarlyStopping(metric='accuracy',
    ...                                       patience=5)])

  Args:
    metric: `[TARGET/]NAME[:min|max]` as for `--best-metric`; None for
      `--best-metric` (by default the model's `evaluation_metric`).
    patience: validations without improvement before stopping (>= 1).
    min_delta: the least change that counts as an improvement (>= 0).
    restore_best: whether the best state is restored before export.
  """

  def __init__(
    self,
    metric: Optional[str] = None,
    patience: int = 3,
    min_delta: float = 0.0,
    restore_best: bool = True,
  ) -> None:
    super().__init__()
    if (
      isinstance(patience, bool)
      or not isinstance(patience, int)
      or patience < 1
    ):
      raise ValueError(
        f'patience must be a positive integer. Received: patience={patience!r}'
      )
    if not isinstance(min_delta, (int, float)) or not min_delta >= 0:
      raise ValueError(
        f'min_delta must be a number >= 0. Received: min_delta={min_delta!r}'
      )
    if metric is not None and not isinstance(metric, str):
      raise ValueError(
        'metric must be "[TARGET/]NAME[:min|max]" or None. '
        f'Received: metric={metric!r}'
      )
    self.metric = metric
    self.patience = patience
    self.min_delta = float(min_delta)
    self.restore_best = restore_best
    self.best: Optional[float] = None
    self.best_step: Optional[int] = None
    self.wait = 0
    self.stopped = False

  def on_evaluate_end(self, step: int, results: Any) -> None:
    target, name, mode = results.parse_best(self.metric)
    value = results.value(target, name)
    if math.isnan(value):
      improved = False
    elif self.best is None:
      improved = True
    elif mode == 'max':
      improved = value > self.best + self.min_delta
    else:
      improved = value < self.best - self.min_delta
    if improved:
      self.best, self.best_step, self.wait = value, step, 0
      self._snapshot(step)
      return
    self.wait += 1
    if self.wait >= self.patience and not self.stopped:
      self.stopped = True
      self.context.stop(
        f'early stopping: {name} has not improved for {self.wait} '
        f'validations (best {self.best:.6g} at step {self.best_step})'
      )
      logger.info(
        'Early stopping at step %d: %s has not improved for %d '
        'validations; the best is %.6g at step %d',
        step,
        name,
        self.wait,
        self.best,
        self.best_step,
      )

  def on_train_end(self, logs: dict[str, Any]) -> None:
    if not (
      self.stopped
      and self.restore_best
      and self._path()
      and self.context.role == 'train'
    ):
      return
    path = tf.train.latest_checkpoint(self._path())
    if path:
      self.context.checkpoints.restore(path, partial=True)
      logger.info(
        'Restored the best state (step %d) from %s for export',
        self.best_step,
        path,
      )

  def _path(self) -> Optional[str]:
    checkpoints = self.context.checkpoints
    if checkpoints is None or self.context.role != 'train':
      return None
    return os.path.join(checkpoints.directory, SNAPSHOT)

  def _snapshot(self, step: int) -> None:
    directory = self._path()
    if directory is None or not self.restore_best:
      return
    self.context.checkpoints.snapshot(directory, step)
