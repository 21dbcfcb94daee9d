"""Progress: the training line (or bar) and the validation results."""

import time
from typing import Any, Mapping, Optional, TextIO

from tensorfx import _progress
from tensorfx._logging import logger
from tensorfx.training._callbacks import base


class ProgressCallback(base.Callback):
  """Shows progress: a live bar on a terminal, log lines elsewhere.

  Args:
    stream: where a live bar is drawn (default: stderr).
  """

  def __init__(self, stream: Optional[TextIO] = None) -> None:
    super().__init__()
    self._stream = stream
    self._progress: Any = None

  @property
  def _enabled(self) -> bool:
    # Replicas step together: the chief's progress tells for all.
    return self.context.chief

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    self._progress = Progress(
      logs.get('max_steps'), stream=self._stream, enabled=self._enabled
    )
    if self._enabled and self.context.role == 'train':
      max_steps = logs.get('max_steps')
      logger.info(
        'Training from step %d%s, %d examples per step',
        logs['step'],
        f' to {max_steps}' if max_steps else '',
        logs['batch_size'],
      )

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    self._progress.update(step, logs.get('loss'), logs.get('examples_per_sec'))

  def on_evaluate_end(self, step: int, results: Any) -> None:
    for name, values in results.items():
      shown = '  '.join(f'{k} {v:.4g}' for k, v in _numbers(values).items())
      label = 'Evaluation' if name == results.default else f'Validation {name}'
      self._progress.message(
        f'{label} at step {step} on {results.examples[name]} examples '
        f'({results.seconds[name]:.1f}s): {shown}'
      )

  def on_train_end(self, logs: dict[str, Any]) -> None:
    if self._progress is not None:
      self._progress.close()


def _numbers(values: Mapping[str, Any]) -> dict[str, int | float]:
  return {k: v for k, v in values.items() if isinstance(v, (int, float))}


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

  def __init__(
    self,
    max_steps: Optional[int] = None,
    stream: Optional[TextIO] = None,
    enabled: bool = True,
  ) -> None:
    self._enabled = enabled
    self._max_steps = max_steps
    self._line = _progress.StatusLine(stream, enabled)
    self._live = self._line.live
    self._start = time.monotonic()
    self._start_step: Optional[int] = None
    self.loss: Optional[float] = None
    self.rate: Optional[float] = None

  def update(
    self,
    step: int,
    loss: Optional[float] = None,
    examples_per_sec: Optional[float] = None,
  ) -> None:
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
    if self._max_steps and step >= self._max_steps:
      # The bar is full: it ends here, above the final checkpoint's and
      # evaluation's lines.
      self.close()

  def message(self, text: str) -> None:
    """Logs a line (e.g. evaluation results); the bar is drawn again below."""
    if self._enabled:
      logger.info('%s', text)

  def close(self) -> None:
    """Ends the bar's line, leaving its last state shown (once)."""
    self._line.close()

  def _eta(self, step: int) -> str:
    if (
      not self._max_steps
      or self._start_step is None
      or step <= self._start_step
    ):
      return ''
    done = (step - self._start_step) / (self._max_steps - self._start_step)
    return _progress.eta(time.monotonic() - self._start, done)

  def _text(self, step: int) -> str:
    if self._max_steps:
      done = min(step / self._max_steps, 1.0)
      bar = f'{_progress.bar(done)} {step}/{self._max_steps}'
    else:
      bar = f'step {step}'
    loss = f'  loss {self.loss:.4g}' if self.loss is not None else ''
    rate = f'  {_progress.rate(self.rate)} ex/s' if self.rate else ''
    return f'{bar}{loss}{rate}{self._eta(step)}'
