"""The evaluator's best model: exported to `best_model/` when it improves."""

from typing import Any, Optional

from tensorfx._logging import logger
from tensorfx.training._callbacks import base
from tensorfx.training._checkpoints import export as _export


class BestModelExport(base.Callback):
  """Exports the model evaluated when it is the best so far.

  The evaluator task's way of keeping the best model: its variables hold
  the checkpoint just evaluated, so exporting them writes that model.

  Args:
    directory: where the best model goes (`best_model/` beside `model/`).
    best: the best value so far (a restarted evaluator's), or None.
  """

  def __init__(
    self,
    directory: str,
    best: Optional[float] = None,
    best_step: Optional[int] = None,
  ) -> None:
    super().__init__()
    self.directory = directory
    self.best = best
    self.best_step = best_step

  def on_evaluate_end(self, step: int, results: Any) -> None:
    value = results.best_value()
    _, name, mode = results.best
    if self.best is None or (
      value > self.best if mode == 'max' else value < self.best
    ):
      _export.export(
        self.context.prediction,
        self.context.builder.dataset.schema,
        self.directory,
      )
      self.best, self.best_step = value, step
      logger.info('New best model at step %d: %s %.4g', step, name, value)
