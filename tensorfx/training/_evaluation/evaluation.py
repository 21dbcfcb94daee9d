"""The evaluation engine: every validation target, results by target.

One engine serves the chief's validation during training, `tensorfx
evaluate` (`ModelTrainer.evaluate`) and the `evaluator` task: the same
targets (`--data-eval` with `--eval-batches`/`--eval-online-agg`/
`--eval-agg`, each `--eval-target`), the same best metric
(`--best-metric`), the same results handed to the callbacks'
`on_evaluate_end`.
"""

import collections.abc
import time

from tensorfx._errors import ConfigurationError
from tensorfx.training._evaluation import aggregation as _aggregation
from tensorfx.training._settings import checkpoints as checkpoint_settings


def prepare_targets(settings, dataset):
  """The validation targets of the settings, their sources in `dataset`.

  A target that brings its own files (`data=`) becomes a source of the
  dataset, read like its `eval` source.

  Args:
    settings: the `ValidationSettings`.
    dataset: the `DataSet`.

  Returns:
    The `ValidationTarget`s, the default (`eval`) first when the dataset
    has an `eval` source.

  Raises:
    ConfigurationError: a target reads a source the dataset does not have.
  """
  targets = settings.all_targets(has_eval='eval' in dataset)
  for target in targets:
    if target.data:
      dataset.add_source(target.source_name, list(target.data))
    elif target.source_name not in dataset:
      raise ConfigurationError(
        f'Validation target {target.name!r} reads the source '
        f'{target.source_name!r}, which the dataset does not have (it has '
        f'{", ".join(dataset.sources)}); give the target data=PATHS.'
      )
  return targets


class EvaluationResults(collections.abc.Mapping):
  """The results of one evaluation: target name -> {metric: value}.

  Attributes:
    step: the global step of the model evaluated.
    examples: target name -> examples read.
    seconds: target name -> seconds taken.
    checkpoint: the checkpoint evaluated, when one was restored for it.
    best: `(target, name, mode)` of the metric ranking models
      (`--best-metric`); target None is the first target.
    slices: target name -> slice label -> `{'examples', 'flagged',
      'metrics'}` (`--eval-slices`); {} without slices.
  """

  def __init__(
    self, step, results, examples, seconds, best, checkpoint=None, slices=None
  ):
    self.step = step
    self.slices = dict(slices or {})
    self._results = dict(results)
    self.examples = dict(examples)
    self.seconds = dict(seconds)
    self.best = best
    self.checkpoint = checkpoint

  def __getitem__(self, name):
    return self._results[name]

  def __iter__(self):
    return iter(self._results)

  def __len__(self):
    return len(self._results)

  def __repr__(self):
    return f'EvaluationResults(step={self.step}, {self._results!r})'

  @property
  def default(self):
    """The name of the first target (`eval` when there is one)."""
    return next(iter(self._results), None)

  @property
  def primary(self):
    """The first target's metrics ({} without targets)."""
    return dict(self._results.get(self.default, {}))

  def parse_best(self, spec=None):
    """`(target, name, mode)` of `spec` (`[TARGET/]NAME[:min|max]`).

    None means the run's best metric. The target is resolved: never None.
    """
    if spec is None:
      target, name, mode = self.best
    else:
      target, name, mode = checkpoint_settings.parse_best_metric(
        spec, default=self.best[1:]
      )
    return target or self.default, name, mode

  def value(self, target, name):
    """The value of metric `name` of `target`.

    Raises:
      ConfigurationError: naming what the results hold instead.
    """
    values = self._results.get(target, {})
    if name not in values:
      raise ConfigurationError(
        f'--best-metric {name!r} is not among the results of validation '
        f'target {target!r}: {", ".join(sorted(values))}.'
      )
    return float(values[name])

  def best_value(self):
    """The value of the best metric (`--best-metric`)."""
    target, name, _ = self.parse_best()
    return self.value(target, name)


class Evaluation:
  """Evaluates every validation target at a step, once per step.

  Example:
    >>> evaluation = Evaluation(interface, targets, ('holdout', 'auc', 'max'))
    >>> evaluation.evaluate(1000)['holdout']['auc']
    0.91

  Args:
    interface: the `EvaluationInterface` (None: nothing to evaluate).
    targets: the `ValidationTarget`s, the primary one first.
    best: `(target, name, mode)` ranking models; target None is the first
      target.
    slicer: the `Slicer` evaluating each target per slice as well
      (`--eval-slices`), or None.

  Raises:
    ConfigurationError: the best metric names a target that is not among
      `targets`.
  """

  def __init__(
    self, interface, targets, best=(None, 'loss', 'min'), slicer=None
  ):
    self.interface = interface
    self.slicer = slicer
    self.targets = list(targets)
    self.best = tuple(best)
    self.last = None
    if (
      self.enabled
      and best[0] is not None
      and best[0] not in {t.name for t in self.targets}
    ):
      raise ConfigurationError(
        f'--best-metric names the validation target {best[0]!r}; the '
        f'targets are {", ".join(t.name for t in self.targets)}.'
      )

  @property
  def enabled(self):
    """Whether there is anything to evaluate."""
    return self.interface is not None and bool(self.targets)

  def evaluate(self, step, checkpoint=None):
    """Evaluates every target; the results of `step` are computed once.

    Returns:
      The `EvaluationResults`, or None when nothing is evaluated.
    """
    if not self.enabled:
      return None
    if (
      self.last is not None
      and self.last.step == step
      and self.last.checkpoint == checkpoint
    ):
      return self.last
    results, examples, seconds, slices = {}, {}, {}, {}
    for target in self.targets:
      start = time.monotonic()
      results[target.name], examples[target.name] = _aggregation.evaluate(
        self.interface, target
      )
      if self.slicer is not None:
        slices[target.name] = self.slicer.evaluate(self.interface, target)
      seconds[target.name] = time.monotonic() - start
    self.last = EvaluationResults(
      step,
      results,
      examples,
      seconds,
      self.best,
      checkpoint=checkpoint,
      slices=slices,
    )
    return self.last
