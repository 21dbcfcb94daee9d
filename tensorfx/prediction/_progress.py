"""Progress of a batch prediction: a bar on a terminal, log lines elsewhere."""

from tensorfx import _progress
from tensorfx._logging import logger

# Seconds between log lines off a terminal.
_LOG_SECS = 10.0


class RecordProgress:
  """Reports records predicted, their rate and, when known, the share done.

  On a terminal it redraws one line in place (`[=====.....] 45%  12,345
  records  3,210/s  eta 0:12`: `tensorfx._progress.StatusLine`, the line
  training draws too, which log records clear first); elsewhere it logs a
  line every 10 seconds. The share is the bytes of the input read so far
  out of their total, known for uncompressed files (not for stdin or
  compressed TFRecord files).

  Args:
    total_bytes: the size of the input, or None when unknown.
    stream: where the bar is drawn (default: stderr).
    enabled: False reports nothing.
  """

  def __init__(self, total_bytes=None, stream=None, enabled=True):
    self._total = total_bytes or None
    self._enabled = enabled
    self._line = _progress.StatusLine(stream, enabled)
    self._live = self._line.live
    self._logged = 0.0
    self.records = 0
    self.bytes = 0

  def update(self, records, size):
    """Counts `records` more records, `size` more bytes of the input."""
    self.records += records
    self.bytes += size
    if not self._enabled:
      return
    if self._live:
      if self._line.due():
        self._line.draw(self._text())
    elif self._line.elapsed - self._logged >= _LOG_SECS:
      self._logged = self._line.elapsed
      logger.info('Predicted %s records%s', f'{self.records:,}', self._share())

  def close(self):
    """Draws the final state and ends the bar's line."""
    if self._live:
      self._line.close(self._text(final=True))

  def _rate(self):
    return self.records / max(self._line.elapsed, 1e-9)

  def _fraction(self):
    if not self._total:
      return None
    return min(self.bytes / self._total, 1.0)

  def _share(self):
    fraction = self._fraction()
    return '' if fraction is None else f' ({fraction:.0%})'

  def _text(self, final=False):
    fraction = 1.0 if final and self._total else self._fraction()
    parts = []
    if fraction is not None:
      parts.append(f'{_progress.bar(fraction)} {fraction:4.0%}')
    parts.append(f'{self.records:,} records')
    parts.append(f'{_progress.rate(self._rate())}/s')
    text = '  '.join(parts)
    if fraction and not final:
      text += _progress.eta(self._line.elapsed, fraction)
    return text
