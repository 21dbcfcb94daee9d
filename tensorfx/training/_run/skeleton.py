"""Run: one run of a builder in any mode, and what every mode does first.

`ModelTrainer` runs a builder as training (`run.TrainingRun`), as the
evaluator task or `evaluate --follow` (`evaluator.EvaluatorRun`), or as an
action (`actions`: `evaluate`, `export`, and `predict` through them). Each
is a `Run`: it holds the builder, the engine's state of it, the job's
layout and the settings, and takes the same first steps in the same order
(data ready and settings resolved, graphs built, evaluation, checkpoints,
context, callbacks); each mode adds only its loop.
"""

from typing import Any, Dict, Optional, Sequence, Tuple

from tensorfx._errors import DataError
from tensorfx.data import _validation
from tensorfx.training import _builder
from tensorfx.training import _builderbase
from tensorfx.training import _callbacks
from tensorfx.training import _state as _engine_state
from tensorfx.training._arguments import batch_size as _batch_size
from tensorfx.training._checkpoints import checkpoints as _checkpoints
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._evaluation import evaluation as _evaluation
from tensorfx.training._evaluation import slices as _slices
from tensorfx.training._run import layout as _layout


class Run:
  """What a run of `builder` into `output` shares across its modes.

  Args:
    builder: the `ModelBuilder`.
    output: the job's output directory.
    config: the `Configuration` of this process.
    role: the callbacks' `context.role`: 'train', 'evaluator' or
      'evaluate'.
    callbacks: the user's callbacks (`ModelTrainer(callbacks=...)`).
    worker: a non-chief training worker's name; its outputs go to scratch.
  """

  def __init__(
    self,
    builder: Any,
    output: str,
    config: Any,
    role: str,
    callbacks: Sequence[Any] = (),
    worker: Optional[str] = None,
  ) -> None:
    self.builder = builder
    self.engine = _builderbase.engine_of(builder)
    self.output = output
    self.config = config
    self.role = role
    self.user_callbacks = list(callbacks)
    self.layout = _layout.JobLayout.of(output, worker=worker)
    self.paths = self.layout.paths()

  @property
  def settings(self) -> Any:
    """The job's settings: as parsed, then resolved (`ready_data`)."""
    return self.builder.settings

  def ready_data(
    self,
    *,
    skip_bad_records: bool,
    count_bad_records: bool = True,
    analyze: Optional[Any] = None,
    wait_secs: Optional[float] = None,
  ) -> Any:
    """Makes the dataset ready to read, then resolves the run's settings.

    The dataset is analyzed (or its analysis found) and its bad records
    policy set; then the settings are resolved, once for the run:
    `--batch-size all` and `--eval-batch-size all` become the training
    data's size. Everything made after this (graphs, callbacks, logs)
    reads those settings, as `builder.settings` does from here on.

    Args:
      skip_bad_records: `--skip-bad-records`.
      count_bad_records: whether this process counts the skipped records
        (parameter-server workers read in their own processes).
      analyze: the chief analyzes an unanalyzed dataset with this.
      wait_secs: other tasks wait this long for the chief's analysis; None
        (the actions) requires an analysis already there.

    Returns:
      The resolved `Settings` (also `self.settings`).

    Raises:
      DataError: no analysis to use, and none coming.
    """
    dataset = self.builder.dataset
    if skip_bad_records:
      dataset.skip_bad_records(count=count_bad_records)
    if not dataset.analyzed:
      self._find_analysis(dataset, analyze, wait_secs)
    self.engine.settings = _batch_size.resolve(self.builder.settings, dataset)
    return self.settings

  def _find_analysis(self, dataset: Any, analyze: Any, wait_secs: Any) -> None:
    analysis = self.layout.analysis
    if analyze is not None:
      analyze(dataset)
    elif wait_secs is not None:
      _cluster.wait_for_analysis(dataset, analysis, wait_secs)
    elif not dataset.use_analysis(analysis):
      raise DataError(
        'The dataset has not been analyzed: give --data-metadata, or '
        f'train first (training writes its analysis to {analysis}).'
      )

  def build_graphs(self) -> Tuple[Any, Any, Any, Any]:
    """The validation targets and the three graph interfaces.

    Returns:
      `(targets, training, evaluation, prediction)`; a data error while
      the graphs are built names the file and record.
    """
    builder = self.builder
    targets = _evaluation.prepare_targets(
      self.settings.validation, builder.dataset
    )
    self.engine.overrides = _builder.overrides(builder)
    with _validation.data_errors():
      training, evaluation, prediction = self.engine.call(
        builder, 'build_graph_interfaces', self.config
      )
    return targets, training, evaluation, prediction

  def best(self) -> Any:
    """`(target, metric, mode)` that ranks checkpoints (`--best-metric`)."""
    return self.settings.checkpoints.best(self.builder.evaluation_metric)

  def evaluation(
    self, interface: Any, targets: Any, sliced: bool = True
  ) -> Any:
    """The run's `Evaluation` of `targets` (with `--eval-slices`)."""
    return _evaluation.Evaluation(
      interface,
      targets,
      self.best(),
      slicer=_slices.create(self.builder, self.engine) if sliced else None,
    )

  def open_checkpoints(self, global_step: Any, **options: Any) -> Any:
    """The job's `Checkpoints`: the builder with the engine's state."""
    return _checkpoints.Checkpoints(
      self.paths['checkpoints'],
      global_step,
      model=_engine_state.checkpointed(self.builder, self.engine),
      **options,
    )

  def context(self, **fields: Any) -> Any:
    """The `RunContext` the callbacks are given."""
    return _callbacks.RunContext(
      builder=self.builder,
      engine=self.engine,
      output=self.output,
      role=self.role,
      paths=self.paths,
      **fields,
    )

  def callback_list(
    self,
    tracker: Any,
    context: Any,
    *,
    extra: Sequence[Any] = (),
    **builtin: Any,
  ) -> Any:
    """The run's callbacks, in the order they are called.

    The built-in ones for the run's role (`_callbacks.builtin`, given
    `builtin`'s keywords), then `extra` (the mode's own), then the
    trainer's, then the builder's `build_callbacks()`.
    """
    return _callbacks.CallbackList(
      _callbacks.builtin(self.settings, tracker, role=self.role, **builtin)
      + list(extra)
      + self.user_callbacks
      + list(self.builder.build_callbacks()),
      context,
    )

  def arguments(self) -> Dict[str, Any]:
    """The job's arguments as a dict (for job.yaml and MLflow)."""
    args = self.builder.args
    return args.to_dict() if hasattr(args, 'to_dict') else dict(vars(args))


def new_logs() -> Dict[str, Any]:
  """The logs `on_train_end` receives, before the run says how it ended."""
  return {
    'status': 'failed',
    'step': None,
    'reason': None,
    'error': None,
    'metrics': {},
    'model': None,
  }


def end(callbacks: Any, summaries: Any, logs: Dict[str, Any]) -> None:
  """Ends the run's callbacks with `logs`; the summaries close whatever."""
  try:
    callbacks.on_train_end(logs)
  finally:
    summaries.close()
