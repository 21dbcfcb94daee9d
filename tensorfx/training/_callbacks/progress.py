"""Progress: the training line (or bar) and the validation results."""

from typing import Any

from tensorfx._logging import logger
from tensorfx.training._callbacks import base
from tensorfx.training._run import progress as _progress


class ProgressCallback(base.Callback):
  """Shows progress: a live bar on a terminal, log lines elsewhere.

  Args:
    stream: where a live bar is drawn (default: stderr).
  """

  def __init__(self, stream=None):
    super().__init__()
    self._stream = stream
    self._progress: Any = None

  @property
  def _enabled(self):
    # Replicas step together: the chief's progress tells for all.
    return self.context.chief

  def on_train_begin(self, logs):
    self._progress = _progress.Progress(
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

  def on_step_end(self, step, logs):
    self._progress.update(step, logs.get('loss'), logs.get('examples_per_sec'))

  def on_evaluate_end(self, step, results):
    for name, values in results.items():
      shown = '  '.join(f'{k} {v:.4g}' for k, v in _numbers(values).items())
      label = 'Evaluation' if name == results.default else f'Validation {name}'
      self._progress.message(
        f'{label} at step {step} on {results.examples[name]} examples '
        f'({results.seconds[name]:.1f}s): {shown}'
      )

  def on_train_end(self, logs):
    if self._progress is not None:
      self._progress.close()


def _numbers(values):
  return {k: v for k, v in values.items() if isinstance(v, (int, float))}
