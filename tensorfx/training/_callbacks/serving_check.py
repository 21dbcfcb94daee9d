"""Serving check: the serving signatures are traced once training runs."""

from typing import Any

from tensorfx.training._callbacks import base


class ServingCheck(base.Callback):
  """Traces the exported model's signatures after the first steps.

  At the first log interval rather than at export: a model that cannot be
  served fails within the first minute of training, not after hours, and
  without delaying the first step.
  """

  def __init__(self) -> None:
    super().__init__()
    self._done = False

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    if not self._done and self.context.prediction is not None:
      self._done = True
      _ = self.context.prediction.signatures
