"""Profiling: a TensorBoard profile of the training steps asked for."""

import os
from typing import Any, Optional

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.training._callbacks import base


class ProfilerCallback(base.Callback):
  """Profiles training steps `first` to `last` (`--profile-steps`).

  The loop ends a call at global step `first - 1` and at `last`; the
  profiler starts right before the call that runs step `first` (after the
  log line, checkpoint and validation due before it) and stops right after
  the call that ran step `last` (before those due at it), so the profile
  holds training steps only. It is written by the chief to
  `summaries/train/plugins/profile/<time>/<host>.xplane.pb`, where
  TensorBoard's Profile tab (the `profile` extra) finds it. The other
  workers of a multi-worker cluster split their calls alike but do not
  profile; under parameter servers the profile shows the chief, which
  schedules the steps, not the workers that run them.

  Args:
    first: the first step profiled (from 1).
    last: the last step profiled (>= first).
  """

  def __init__(self, first: int, last: int) -> None:
    super().__init__()
    self.first = int(first)
    self.last = int(last)
    self._active = False
    self.directory: Any = None

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    step = logs['step']
    if step >= self.last:
      if self.context.chief:
        logger.info(
          'Not profiling: --profile-steps %d,%d are behind step %d',
          self.first,
          self.last,
          step,
        )
      return
    self.context.at_step(self.first - 1, self._start, when='before')
    self.context.at_step(self.last, self._stop, when='after')

  def on_train_end(self, logs: dict[str, Any]) -> None:
    # The data ended (or the run stopped) before the last step.
    self._stop(None)

  def _start(self, step: Optional[int]) -> None:
    del step
    if not self.context.chief:
      return
    self.directory = os.path.join(self.context.paths['summaries'], 'train')
    try:
      tf.profiler.experimental.start(self.directory)
    except tf.errors.OpError as e:
      # Another profiler session (the user's?) is running: the run goes on.
      logger.warning(
        'Cannot profile steps %d to %d: %s',
        self.first,
        self.last,
        e.message.splitlines()[0],
      )
      return
    self._active = True
    logger.info(
      'Profiling steps %d to %d', self.context.global_step + 1, self.last
    )

  def _stop(self, step: Optional[int]) -> None:
    del step
    if not self._active:
      return
    self._active = False
    tf.profiler.experimental.stop()
    logger.info(
      "Wrote the profile of steps %d to %d to %s (TensorBoard's Profile tab)",
      self.first,
      min(self.last, self.context.global_step),
      os.path.join(self.directory, 'plugins', 'profile'),
    )
