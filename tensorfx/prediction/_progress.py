"""Progress of a batch prediction: a bar on a terminal, log lines elsewhere."""

import sys
import time

from tensorfx._logging import logger

# Seconds between redraws of the bar, and between log lines off a terminal.
_DRAW_SECS = 0.1
_LOG_SECS = 10.0


class RecordProgress:
  """Reports records predicted, their rate and, when known, the share done.

  On a terminal it redraws one line in place (`[=====.....] 45%  12,345
  records  3,210/s  eta 0:12`); elsewhere it logs a line every 10 seconds.
  The share is the bytes of the input read so far out of their total, known
  for uncompressed files (not for stdin or compressed TFRecord files).

  Args:
    total_bytes: the size of the input, or None when unknown.
    stream: where the bar is drawn (default: stderr).
    enabled: False reports nothing.
  """

  def __init__(self, total_bytes=None, stream=None, enabled=True):
    self._total = total_bytes or None
    self._stream = stream or sys.stderr
    self._enabled = enabled
    self._live = enabled and bool(
        getattr(self._stream, 'isatty', lambda: False)())
    self._start = time.monotonic()
    self._last = 0.0
    self._drawn = False
    self.records = 0
    self.bytes = 0

  def update(self, records, size):
    """Counts `records` more records, `size` more bytes of the input."""
    self.records += records
    self.bytes += size
    if not self._enabled:
      return
    now = time.monotonic()
    if self._live and now - self._last >= _DRAW_SECS:
      self._draw()
      self._last = now
    elif not self._live and now - self._last >= _LOG_SECS:
      if self._last:
        logger.info('Predicted %s records%s', f'{self.records:,}',
                    self._share())
      self._last = now

  def close(self):
    """Draws the final state and ends the bar's line."""
    if self._live:
      self._draw(final=True)
      self._stream.write('\n')
      self._stream.flush()

  def _rate(self):
    seconds = max(time.monotonic() - self._start, 1e-9)
    return self.records / seconds

  def _fraction(self):
    if not self._total:
      return None
    return min(self.bytes / self._total, 1.0)

  def _share(self):
    fraction = self._fraction()
    return '' if fraction is None else f' ({fraction:.0%})'

  def _draw(self, final=False):
    fraction = 1.0 if final and self._total else self._fraction()
    width = 24
    parts = []
    if fraction is not None:
      filled = int(fraction * width)
      parts.append(f'[{"=" * filled}{"." * (width - filled)}] '
                   f'{fraction:4.0%}')
    parts.append(f'{self.records:,} records')
    parts.append(f'{self._rate():,.0f}/s')
    if fraction and not final:
      elapsed = time.monotonic() - self._start
      left = elapsed / fraction * (1 - fraction)
      parts.append(f'eta {int(left // 60)}:{int(left % 60):02d}')
    self._stream.write('\r\033[K' + '  '.join(parts))
    self._stream.flush()
    self._drawn = True
