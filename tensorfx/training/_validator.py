"""Validation during training: every target, summaries, records, best kept."""

import time

from tensorfx import cloud
from tensorfx._errors import ConfigurationError
from tensorfx.training import _targets


def prepare_targets(args, dataset):
  """The validation targets of the arguments, their sources in `dataset`.

  A target that brings its own files (`data=`) becomes a source of the
  dataset, read like its `eval` source.

  Returns:
    The `ValidationTarget`s, the default (`eval`) first when the dataset
    has an `eval` source.

  Raises:
    ConfigurationError: a target reads a source the dataset does not have.
  """
  targets = _targets.from_args(args, has_eval='eval' in dataset)
  for target in targets:
    if target.data:
      dataset.add_source(target.source_name, list(target.data))
    elif target.source_name not in dataset:
      raise ConfigurationError(
          f'Validation target {target.name!r} reads the source '
          f'{target.source_name!r}, which the dataset does not have (it has '
          f'{", ".join(dataset.sources)}); give the target data=PATHS.')
  return targets


class Validator:
  """Runs the validation targets at a step and reports their results.

  Results go to TensorBoard (`summaries/eval` for the default target,
  `summaries/eval_NAME` for the others), to the tracker, to the progress
  line, and (the first target's) to a tuning service; the metric that ranks
  checkpoints decides whether the state is kept among the best.

  Args:
    evaluation: the `EvaluationInterface`.
    targets: the `ValidationTarget`s, the primary one first.
    summaries: the `Summaries` writer (or None).
    progress: the `Progress` reporter (or None).
    tracker: the experiment `Tracker` (or None).
    checkpoints: the `Checkpoints` keeping the best (or None).
    best: `(target, name, mode)` ranking checkpoints; target None is the
      first target.
  """

  def __init__(self, evaluation, targets, summaries=None, progress=None,
               tracker=None, checkpoints=None, best=(None, 'loss', 'min')):
    self.evaluation = evaluation
    self.targets = list(targets)
    self.summaries = summaries
    self.progress = progress
    self.tracker = tracker
    self.checkpoints = checkpoints
    self.best = best
    self.last_step = None
    self.results = {}
    if evaluation is not None and self.targets and best[0] is not None and \
        best[0] not in {t.name for t in self.targets}:
      raise ConfigurationError(
          f'--best-metric names the validation target {best[0]!r}; the '
          f'targets are {", ".join(t.name for t in self.targets)}.')

  @property
  def enabled(self):
    return self.evaluation is not None and bool(self.targets)

  @property
  def primary(self):
    """The first target's latest results ({} before any validation)."""
    if not self.targets:
      return {}
    return self.results.get(self.targets[0].name, {})

  def validate(self, step):
    """Validates every target at `step` (once per step).

    Returns:
      A dict from target name to its results (metric name to value).
    """
    if not self.enabled:
      return {}
    if step == self.last_step:
      return self.results
    results = {}
    for target in self.targets:
      start = time.monotonic()
      values, count = _targets.evaluate(self.evaluation, target)
      results[target.name] = values
      scalars = {k: v for k, v in values.items()
                 if isinstance(v, (int, float))}
      if self.summaries is not None:
        self.summaries.scalars(target.summaries, step, scalars)
      if self.tracker is not None:
        self.tracker.log_validation(step, target.name, scalars)
      if self.progress is not None:
        shown = '  '.join(f'{k} {v:.4g}' for k, v in scalars.items())
        label = ('Evaluation' if target.name == _targets.DEFAULT
                 else f'Validation {target.name}')
        self.progress.message(
            f'{label} at step {step} on {count} examples '
            f'({time.monotonic() - start:.1f}s): {shown}')
    if self.summaries is not None:
      self.summaries.flush()
    self.last_step = step
    self.results = results
    # In a tuning trial, the tuning service reads these.
    cloud.report_metrics(self.primary, step)
    self._keep_best()
    return results

  def _keep_best(self):
    checkpoints = self.checkpoints
    if checkpoints is None or not checkpoints.keep_best_count:
      return
    target, name, _ = self.best
    target = target or self.targets[0].name
    values = self.results.get(target, {})
    if name not in values:
      raise ConfigurationError(
          f'--best-metric {name!r} is not among the results of validation '
          f'target {target!r}: {", ".join(sorted(values))}.')
    path = checkpoints.keep_best(values[name])
    if path and self.tracker is not None:
      self.tracker.set_tags(**{'checkpoints.best': [
          e['path'] for e in checkpoints.best]})
