"""The status line: drawn in place on a terminal, never sharing a log line.

Training and batch prediction draw their progress through one status line
(`tensorfx._progress`); these tests run them under a real pseudo-terminal.
"""

import os
import pty
import subprocess
import sys

from conftest import ROOT
from tensorfx import _progress

# Training's bar, a log record while it is up, an evaluation message, then
# prediction's bar and a bad record logged while it is up.
_SCRIPT = """
import time
from tensorfx import _logging
from tensorfx.prediction._progress import RecordProgress
from tensorfx.training._callbacks.progress import Progress
_logging.configure('info')
progress = Progress(max_steps=100)
progress.update(10)
progress.update(50, loss=0.25, examples_per_sec=1234.0)
_logging.logger.info('Saved checkpoint for step 50')
progress.update(100, loss=0.125, examples_per_sec=1000.0)
progress.message('Evaluation at step 100: accuracy 1')
progress.close()
records = RecordProgress(total_bytes=1000)
records.update(10, 500)
_logging.logger.warning('Skipping a bad record: x.csv line 3: bad')
time.sleep(0.15)
records.update(10, 500)
records.close()
_logging.logger.info('Predicted 20 records')
"""


def _screen(text):
  r"""The lines a terminal shows for `text` (\r, erase-to-end, newlines)."""
  lines, line, column = [], [], 0
  index = 0
  while index < len(text):
    if text.startswith('\033[K', index):
      del line[column:]
      index += 3
      continue
    char = text[index]
    index += 1
    if char == '\r':
      column = 0
    elif char == '\n':
      lines.append(''.join(line))
      line, column = [], 0
    else:
      line[column : column + 1] = [char]
      column += 1
  if line:
    lines.append(''.join(line))
  return lines


def _on_a_terminal(code):
  """Runs `code` with stderr on a pseudo-terminal; returns what it showed."""
  leader, follower = pty.openpty()
  env = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
  )
  process = subprocess.Popen(
    [sys.executable, '-c', code],
    stderr=follower,
    stdout=subprocess.DEVNULL,
    env=env,
    cwd=ROOT,
  )
  os.close(follower)
  chunks = []
  while True:
    try:
      chunk = os.read(leader, 65536)
    except OSError:  # The follower side closed: the process has ended.
      break
    if not chunk:
      break
    chunks.append(chunk)
  os.close(leader)
  assert process.wait(timeout=120) == 0, b''.join(chunks).decode()[-3000:]
  return b''.join(chunks).decode('utf-8', 'replace')


def test_log_records_never_share_the_bars_line():
  screen = _screen(_on_a_terminal(_SCRIPT))
  logged = [row for row in screen if ' INFO ' in row or ' WARNING ' in row]
  # Every record alone on its line, from its first column.
  assert [row[8:] for row in logged] == [
    ' INFO Saved checkpoint for step 50',
    ' INFO Evaluation at step 100: accuracy 1',
    ' WARNING Skipping a bad record: x.csv line 3: bad',
    ' INFO Predicted 20 records',
  ], screen
  # Each bar ends shown in its final state, on its own line; training's
  # closes at its last step, above the lines of what follows it.
  (full,) = [
    index
    for index, row in enumerate(screen)
    if row.startswith('[========================] 100/100  loss 0.125')
  ]
  assert screen[full + 1].endswith(' INFO Evaluation at step 100: accuracy 1')
  assert any(
    row.startswith('[========================] 100%  20 records')
    for row in screen
  ), screen


def test_the_status_line_parts():
  assert _progress.bar(0.5) == '[============............]'
  assert _progress.bar(2) == '[========================]'
  assert _progress.eta(30.0, 0.25) == '  eta 1:30'
  assert _progress.eta(30.0, None) == ''
  assert _progress.rate(12345.6) == '12,346'
  assert _progress.rate(None) == '-'


def test_off_a_terminal_nothing_is_drawn():
  with open(os.devnull, 'w') as stream:
    line = _progress.StatusLine(stream=stream)
    assert not line.live
    line.draw('x')
    line.close()
