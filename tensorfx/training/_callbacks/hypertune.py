"""Tuning: each validation's results reported to the tuning service."""

from typing import Any

from tensorfx import _hypertune
from tensorfx.training._callbacks import base


class HypertuneCallback(base.Callback):
  """Reports the first target's results as Vertex AI's tuning reads them.

  Writes nothing outside a tuning trial (no `CLOUD_ML_TRIAL_ID`).
  """

  def on_evaluate_end(self, step: int, results: Any) -> None:
    if self.context.chief:
      _hypertune.report_metrics(
        results.primary, step, checkpoint_path=results.checkpoint or ''
      )
