"""Visible progress: a live line on a terminal, log lines otherwise."""

import sys
import time

from tensorfx._logging import logger


class Progress:
  """Reports training progress.

  On a terminal it redraws one status line (step, loss, examples/s, ETA) in
  place; elsewhere (a file, a cloud log) it writes a log line at each
  logging interval instead.

  Args:
    max_steps: the step training stops at, or None when unbounded.
    stream: where to draw; defaults to stderr.
    enabled: False reports nothing (a replica that is not the chief).
  """

  def __init__(self, max_steps=None, stream=None, enabled=True):
    self._enabled = enabled
    self._max_steps = max_steps
    self._stream = stream or sys.stderr
    self._live = bool(getattr(self._stream, 'isatty', lambda: False)())
    self._drawn = False
    self._last_draw = 0.0
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
        logger.info('step %s%s  loss %.4g  %s examples/s%s', step,
                     f'/{self._max_steps}' if self._max_steps else '', loss,
                     _format_rate(examples_per_sec), self._eta(step))
    if self._live:
      now = time.monotonic()
      if loss is not None or now - self._last_draw > 0.1:
        self._draw(step)
        self._last_draw = now

  def message(self, text):
    """Prints a line (e.g. evaluation results) without breaking the bar."""
    if not self._enabled:
      return
    if self._live and self._drawn:
      self._stream.write('\r\033[K')
      self._drawn = False
    logger.info('%s', text)

  def close(self):
    if self._live and self._drawn:
      self._stream.write('\n')
      self._stream.flush()
      self._drawn = False

  def _eta(self, step):
    if not self._max_steps or step <= self._start_step:
      return ''
    elapsed = time.monotonic() - self._start
    left = elapsed / (step - self._start_step) * (self._max_steps - step)
    return f'  eta {int(left // 60)}:{int(left % 60):02d}'

  def _draw(self, step):
    width = 24
    if self._max_steps:
      done = min(step / self._max_steps, 1.0)
      filled = int(done * width)
      bar = f'[{"=" * filled}{"." * (width - filled)}] {step}/{self._max_steps}'
    else:
      bar = f'step {step}'
    loss = f'  loss {self.loss:.4g}' if self.loss is not None else ''
    rate = f'  {_format_rate(self.rate)} ex/s' if self.rate else ''
    self._stream.write(f'\r\033[K{bar}{loss}{rate}{self._eta(step)}')
    self._stream.flush()
    self._drawn = True


def _format_rate(rate):
  if rate is None:
    return '-'
  return f'{rate:,.0f}'
