"""Progress: a live bar on a terminal, log lines elsewhere."""

import io
import logging

from tensorfx.training._callbacks.progress import Progress


class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_terminal_gets_a_live_bar():
  stream = _Terminal()
  progress = Progress(max_steps=100, stream=stream)
  progress.update(10)
  progress.update(50, loss=0.25, examples_per_sec=1234.0)
  progress.close()
  text = stream.getvalue()
  assert '\r' in text
  assert '50/100' in text and 'loss 0.25' in text and '1,234 ex/s' in text
  assert text.endswith('\n')


def test_the_full_bar_closes_before_what_follows_the_last_step():
  stream = _Terminal()
  progress = Progress(max_steps=100, stream=stream)
  progress.update(50, loss=0.25, examples_per_sec=1234.0)
  progress.update(100, loss=0.125, examples_per_sec=1000.0)
  drawn = stream.getvalue()
  assert drawn.endswith('100/100  loss 0.125  1,000 ex/s  eta 0:00\n')
  # The final checkpoint's and evaluation's records neither clear it nor
  # bring it back below them; the end of the run draws nothing more.
  logging.getLogger('tensorfx').info('Saved checkpoint ckpt-100')
  progress.message('Evaluation at step 100: accuracy 1')
  progress.close()
  assert stream.getvalue() == drawn


def test_pipe_gets_log_lines(caplog):
  stream = io.StringIO()
  progress = Progress(max_steps=None, stream=stream)
  logger = logging.getLogger('tensorfx')
  # tensorfx's logger may not propagate to the root, where caplog listens.
  logger.addHandler(caplog.handler)
  try:
    with caplog.at_level(logging.INFO, logger='tensorfx'):
      progress.update(5)  # between log intervals: silent
      progress.update(10, loss=1.5, examples_per_sec=99.0)
  finally:
    logger.removeHandler(caplog.handler)
  assert stream.getvalue() == ''
  # Once, or twice where the logger also propagates to caplog's root.
  assert {r.getMessage() for r in caplog.records} == {
    'step 10  loss 1.5  99 examples/s'
  }
