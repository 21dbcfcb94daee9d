"""Best checkpoints: the K best by the best metric, kept apart."""

from typing import Any

from tensorfx.training._callbacks import base


class KeepBestCallback(base.Callback):
  """Keeps the state in `checkpoints/best/` when it ranks among the best.

  After each validation, the value of `--best-metric` (default: the
  model's `evaluation_metric` on the first target) decides; the
  `--keep-best-checkpoints` best are kept, the others deleted.
  """

  def on_evaluate_end(self, step: int, results: Any) -> None:
    checkpoints = self.context.checkpoints
    if checkpoints is None or not checkpoints.keep_best_count:
      return
    checkpoints.keep_best(results.best_value())
