"""Training progress: a live line on a terminal, log lines otherwise."""

import time

from tensorfx import _progress
from tensorfx._logging import logger


class Progress:
  """Reports training progress.

  On a terminal it redraws one status line (step, loss, examples/s, ETA) in
  place (`tensorfx._progress.StatusLine`, which log records clear first);
  elsewhere (a file, a cloud log) it writes a log line at each logging
  interval instead.

  Args:
    max_steps: the step training stops at, or None when unbounded.
    stream: where to draw; defaults to stderr.
    enabled: False reports nothing (a replica that is not the chief).
  """

  def __init__(self, max_steps=None, stream=None, enabled=True):
    self._enabled = enabled
    self._max_steps = max_steps
    self._line = _progress.StatusLine(stream, enabled)
    self._live = self._line.live
    self._start = time.monotonic()
    self._start_step = None
    self.loss = None
    self.rate = None

  def update(self, step, loss=None, examples_per_sec=None):
    """Records progress at `step`; `loss`/rate are given at log intervals."""
    if not self._enabled:
      return
    if self._start_step is None:
      self._start_step = step
    if loss is not None:
      self.loss = loss
      self.rate = examples_per_sec
      if not self._live:
        logger.info(
          'step %s%s  loss %.4g  %s examples/s%s',
          step,
          f'/{self._max_steps}' if self._max_steps else '',
          loss,
          _progress.rate(examples_per_sec),
          self._eta(step),
        )
    if self._live and (loss is not None or self._line.due()):
      self._line.draw(self._text(step))

  def message(self, text):
    """Logs a line (e.g. evaluation results); the bar is drawn again below."""
    if self._enabled:
      logger.info('%s', text)

  def close(self):
    """Ends the bar's line, leaving its last state shown."""
    self._line.close()

  def _eta(self, step):
    if (
      not self._max_steps
      or self._start_step is None
      or step <= self._start_step
    ):
      return ''
    done = (step - self._start_step) / (self._max_steps - self._start_step)
    return _progress.eta(time.monotonic() - self._start, done)

  def _text(self, step):
    if self._max_steps:
      done = min(step / self._max_steps, 1.0)
      bar = f'{_progress.bar(done)} {step}/{self._max_steps}'
    else:
      bar = f'step {step}'
    loss = f'  loss {self.loss:.4g}' if self.loss is not None else ''
    rate = f'  {_progress.rate(self.rate)} ex/s' if self.rate else ''
    return f'{bar}{loss}{rate}{self._eta(step)}'
