"""MLflow experiment records as a callback."""

import json
import re
from typing import Any, Mapping, Optional

from tensorfx.training._callbacks import base

_MLFLOW_UNSAFE = re.compile(r'[^\w./\- ]')

# on_train_end's status -> the tracker's.
_STATUS: dict[Optional[str], str] = {
  'completed': 'completed',
  'stopped': 'completed',
  'interrupted': 'interrupted',
  'failed': 'failed',
}


class TrackingCallback(base.Callback):
  """Records the run in an experiment store (`--experiment`).

  Args:
    tracker: the `Tracker` (`tensorfx.training._run.tracking.create`).
    arguments: the resolved arguments (a dict), recorded as parameters.
    source: git provenance of the trainer.
    action: what the run does: 'train' or 'evaluate'.
    owner: whether this run starts and ends the store's run; the
      evaluator task records into the chief's run without ending it.
    resume: whether training resumes the output's run (False with
      `--no-resume`: the checkpoints went aside, a new run starts).
  """

  def __init__(
    self,
    tracker: Any,
    arguments: Mapping[str, Any],
    source: Mapping[str, Any],
    action: str = 'train',
    owner: bool = True,
    resume: bool = True,
  ) -> None:
    super().__init__()
    self.tracker = tracker
    self._arguments = arguments
    self._source = source
    self._action = action
    self._owner = owner
    self._resume = resume
    self._tracked_checkpoint: Optional[int] = None

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    self.tracker.start(
      self._arguments,
      self._source,
      action=self._action,
      resume=self._action == 'train' and self._resume,
    )

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    self.tracker.log_train(
      step, {k: logs[k] for k in ('loss', 'examples_per_sec') if k in logs}
    )

  def on_checkpoint(self, step: int, path: str) -> None:
    if step == self._tracked_checkpoint:
      return
    self._tracked_checkpoint = step
    checkpoints = self.context.checkpoints
    self.tracker.log_checkpoint(
      step, path, recent=checkpoints.recent if checkpoints is not None else ()
    )

  def on_evaluate_end(self, step: int, results: Any) -> None:
    for name, values in results.items():
      self.tracker.log_validation(
        step,
        name,
        {k: v for k, v in values.items() if isinstance(v, (int, float))},
      )
    for name, slices in getattr(results, 'slices', {}).items():
      for label, entry in slices.items():
        # MLflow keys allow letters, digits and _-. /: the rest becomes _.
        self.tracker.log_validation(
          step,
          _MLFLOW_UNSAFE.sub('_', (f'{name}/slice/{label}')),
          {
            k: v
            for k, v in entry['metrics'].items()
            if isinstance(v, (int, float))
          }
          | {'examples': entry['examples']},
        )
    if results.checkpoint and self._action == 'evaluate':
      self.tracker.set_tags(checkpoint=results.checkpoint, global_step=step)
    checkpoints = self.context.checkpoints
    if checkpoints is not None and checkpoints.keep_best_count:
      self.tracker.set_tags(
        **{'checkpoints.best': [e['path'] for e in checkpoints.best]}
      )

  def on_train_end(self, logs: dict[str, Any]) -> None:
    if not self._owner:
      return
    tags: dict[str, Any] = {}
    if logs.get('error'):
      tags['error'] = logs['error']
    if logs.get('reason'):
      tags['stopped'] = logs['reason']
    if logs.get('model'):
      tags['model'] = logs['model']
    if logs.get('nan_restores'):
      tags['nan_restores'] = json.dumps(logs['nan_restores'])
    if tags:
      self.tracker.set_tags(**tags)
    self.tracker.finish(_STATUS.get(logs.get('status'), 'completed'))
