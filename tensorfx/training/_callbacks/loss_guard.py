"""The loss guards as a callback: stop, or go back, on a bad loss."""

from typing import Any

from tensorfx._logging import logger
from tensorfx.training._callbacks import base
from tensorfx.training._engine import guards as _guards


class LossGuardCallback(base.Callback):
  """Stops on a non-finite loss or one above `--thres-loss`, or restores.

  The loop stops on the device at the first bad step and reports it
  through `on_step_end`; this callback raises (`TrainingError`,
  `HighLossError`) or, with `--nan-restore N`, restores the last
  checkpoint and lets training go on, up to N times.

  Args:
    settings: the `GuardSettings`.
  """

  def __init__(self, settings: Any) -> None:
    super().__init__()
    self.guard = _guards.LossGuard(settings.thres_loss, settings.nan_restore)

  @property
  def restores(self) -> list[int]:
    """The steps at which a non-finite loss restored the last checkpoint."""
    return list(self.guard.restores)

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    checkpoints = self.context.checkpoints
    if (
      self.guard.nan_restores
      and checkpoints is not None
      and not checkpoints.latest
    ):
      # A non-finite loss before the first checkpoint needs one to go to.
      self.context.save_checkpoint()

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    loss = logs.get('loss')
    if loss is None:
      return
    checkpoints = self.context.checkpoints
    latest = checkpoints.latest if checkpoints is not None else None
    if self.guard.check_loss(loss, step, latest) == _guards.RESTORE:
      logger.warning(
        'The training loss is %s at step %d: restoring %s and training on '
        '(restore %d of %d, --nan-restore)',
        loss,
        step,
        latest,
        len(self.guard.restores),
        self.guard.nan_restores,
      )
      self.context.restore_latest()
