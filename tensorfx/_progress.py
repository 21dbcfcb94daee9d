r"""One live status line on a terminal, that log records never share.

Training (steps, loss, examples/s) and batch prediction (records, share of
the input) show their progress through one `StatusLine`: on a terminal it
redraws a line in place (`\r`, then erase to the end of the line); off a
terminal it draws nothing and the caller logs instead.

A log record written while the line is up would land after it on the same
terminal line (`... eta 0:00 12:01:07 INFO Saved checkpoint`). While a line
is shown, every log record first clears it: a hook on the logging module's
record factory, which runs before any handler (tensorfx's, the root's, the
program's own) writes anything. The next update draws the line again below
the record. A closed line is done and draws nothing more: a caller closes
it as soon as its last state is known (training's bar at its last step,
above the final checkpoint's and evaluation's lines).

This module must not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import sys
import threading
import time
from typing import Any, TextIO

# Seconds between redraws: the eye needs no more, the terminal no less.
DRAW_SECS = 0.1
_BAR_WIDTH = 24


def bar(fraction: float) -> str:
  """`[=====...]` for a share done in [0, 1].

  Example:
    >>> bar(0.5)
    '[============............]'
  """
  filled = int(min(max(fraction, 0.0), 1.0) * _BAR_WIDTH)
  return f'[{"=" * filled}{"." * (_BAR_WIDTH - filled)}]'


def eta(elapsed: float, fraction: float | None) -> str:
  """`'  eta M:SS'`, from the time a share took, or '' when unknown.

  Example:
    >>> eta(30.0, 0.25)
    '  eta 1:30'
  """
  if not fraction or fraction <= 0 or fraction >= 1:
    return '' if fraction is None or fraction <= 0 else '  eta 0:00'
  left = elapsed / fraction * (1 - fraction)
  return f'  eta {int(left // 60)}:{int(left % 60):02d}'


def rate(value: float | None) -> str:
  """A rate with thousands separators, '-' when unknown."""
  return '-' if value is None else f'{value:,.0f}'


class StatusLine:
  """A line redrawn in place on a terminal; log records clear it first.

  Example:
    >>> line = StatusLine()
    >>> if line.live:
    ...   line.draw('[====....] 50/100')
    >>> line.close()

  Args:
    stream: the terminal (default: stderr when the line is drawn).
    enabled: False draws nothing (a replica that is not the chief).
  """

  def __init__(
    self, stream: TextIO | None = None, enabled: bool = True
  ) -> None:
    self._stream = stream
    isatty: Callable[[], bool] = getattr(self._out(), 'isatty', lambda: False)
    self.live = bool(enabled and isatty())
    self._shown = False
    self._closed = False
    self._text: str | None = None
    self._last = 0.0
    self._lock = threading.RLock()
    self._start = time.monotonic()

  @property
  def elapsed(self) -> float:
    """Seconds since the line was made."""
    return time.monotonic() - self._start

  def due(self) -> bool:
    """Whether a redraw is due (at most one every `DRAW_SECS`)."""
    return self.live and time.monotonic() - self._last >= DRAW_SECS

  def draw(self, text: str) -> None:
    """Shows `text` in place of the line's last text (not once closed)."""
    if not self.live or self._closed:
      return
    with self._lock:
      stream = self._out()
      stream.write('\r\033[K' + text)
      stream.flush()
      self._text = text
      self._last = time.monotonic()
      if not self._shown:
        self._shown = True
        _hook.add(self)

  def clear(self) -> None:
    """Erases the line (it is drawn again at the next `draw`)."""
    with self._lock:
      if not self._shown:
        return
      self._shown = False
      _hook.remove(self)
      try:
        stream = self._out()
        stream.write('\r\033[K')
        stream.flush()
      except (OSError, ValueError):  # The stream is gone: nothing shows.
        pass

  def close(self, final: str | None = None) -> None:
    """Ends the line, leaving its last text (or `final`) shown.

    A line a log record cleared is drawn again, below the records. Closing
    a closed line does nothing.
    """
    final = final if final is not None else self._text
    if final is not None:
      self.draw(final)
    with self._lock:
      self._closed = True
      if not self._shown:
        return
      self._shown = False
      _hook.remove(self)
      stream = self._out()
      stream.write('\n')
      stream.flush()

  def _out(self) -> TextIO:
    # sys.stderr by default, as it is now (it may have been replaced).
    return self._stream or sys.stderr


class _RecordHook:
  """Clears every shown `StatusLine` when a log record is made."""

  def __init__(self) -> None:
    self._lines: list[StatusLine] = []
    self._saved: Callable[..., logging.LogRecord] | None = None
    self._lock = threading.Lock()

  def add(self, line: StatusLine) -> None:
    with self._lock:
      if not self._lines:
        self._saved = logging.getLogRecordFactory()
        logging.setLogRecordFactory(self._make)
      self._lines.append(line)

  def remove(self, line: StatusLine) -> None:
    with self._lock:
      if line in self._lines:
        self._lines.remove(line)
      if not self._lines and self._saved is not None:
        # Another factory set on top of ours stays; ours then passes on.
        if logging.getLogRecordFactory() == self._make:
          logging.setLogRecordFactory(self._saved)
        self._saved = None

  def _make(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
    saved = self._saved or logging.LogRecord
    record = saved(*args, **kwargs)
    for line in list(self._lines):
      line.clear()
    return record


_hook = _RecordHook()
