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


# The profiler server's port in this process: TensorFlow starts one server
# per process and cannot stop it, so a second run reuses it.
_server_port: Optional[int] = None


class ProfilerServerCallback(base.Callback):
  """Starts a profiler server in each training process (`--profiler-port`).

  Gematria's `--gematria_run_tf_profiler`: TensorBoard's Profile tab
  ("Capture profile", `HOST:PORT`) or `tf.profiler.experimental.client.
  trace` then records a profile of whatever the process runs, on demand.
  It starts when training begins, once per process (every task of a
  cluster listens on the same port of its own host), and lives as long as
  the process: TensorFlow has no way to stop it.

  Args:
    port: the TCP port to listen on.
  """

  def __init__(self, port: int) -> None:
    super().__init__()
    self.port = int(port)

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    global _server_port  # noqa: PLW0603  (one server per process)
    if _server_port is None:
      try:
        tf.profiler.experimental.server.start(self.port)
      except (tf.errors.OpError, RuntimeError) as e:
        # The port is taken (another job's server?): the run goes on.
        logger.warning(
          'Cannot start the profiler server on port %d: %s', self.port, e
        )
        return
      _server_port = self.port
    elif _server_port != self.port:
      logger.warning(
        'The profiler server of this process listens on port %d, not %d: '
        'TensorFlow starts one per process',
        _server_port,
        self.port,
      )
    logger.info(
      "Profiler server on port %d: TensorBoard's Profile tab captures a "
      'profile from localhost:%d (Capture profile)',
      _server_port,
      _server_port,
    )
