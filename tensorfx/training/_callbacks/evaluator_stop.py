"""An evaluator task's request to stop the chief (early stopping)."""

import json
import os
from typing import Any, Optional

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.training._callbacks import base

_FILE = 'evaluator_stop.json'


def request_stop(output: str, step: int, reason: Optional[str]) -> None:
  """Asks the chief of the job in `output` to stop (from the evaluator)."""
  path = os.path.join(output, _FILE)
  with tf.io.gfile.GFile(path + '.tmp', 'w') as f:
    json.dump({'step': step, 'reason': reason}, f)
  tf.io.gfile.rename(path + '.tmp', path, overwrite=True)


class EvaluatorStopWatch(base.Callback):
  """Stops the chief when the evaluator task asks (at log intervals).

  A request left by an earlier run of the same job is removed when this
  run begins, so a restarted job trains on.
  """

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    path = self._path()
    if tf.io.gfile.exists(path):
      tf.io.gfile.remove(path)

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    path = self._path()
    if self.context.stop_requested or not tf.io.gfile.exists(path):
      return
    with tf.io.gfile.GFile(path) as f:
      request = json.load(f)
    logger.info(
      'The evaluator asks to stop (at its step %s): %s',
      request.get('step'),
      request.get('reason'),
    )
    self.context.stop(f'evaluator: {request.get("reason")}')

  def _path(self) -> str:
    return os.path.join(self.context.output, _FILE)
