"""Preemption: SIGTERM and SIGINT save a checkpoint and stop the run."""

import signal
import types
from typing import Any, Optional

from tensorfx._logging import logger
from tensorfx.training._callbacks import base

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class SignalStop(base.Callback):
  """Turns SIGTERM (preemption) and SIGINT (Ctrl-C) into a clean stop.

  The first signal asks the loop to stop after the steps in flight; the
  run saves a checkpoint and exits with 128 + the signal (143, 130). A
  second signal interrupts at once (KeyboardInterrupt).
  """

  def __init__(self) -> None:
    super().__init__()
    self._previous: dict[signal.Signals, Any] = {}

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    try:
      self._previous = {s: signal.signal(s, self._stop) for s in _SIGNALS}
    except ValueError:  # Not the main thread: leave signals alone.
      self._previous = {}

  def on_train_end(self, logs: dict[str, Any]) -> None:
    for s, handler in self._previous.items():
      signal.signal(s, handler)
    self._previous = {}

  def _stop(self, signum: int, frame: Optional[types.FrameType]) -> None:
    del frame
    if self.context.exit_code is not None:
      raise KeyboardInterrupt
    self.context.stop(f'signal {signum}', exit_code=128 + signum)
    logger.warning(
      'Received signal %d: saving a checkpoint and stopping', signum
    )
