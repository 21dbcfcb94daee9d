"""What every run does: data ready, graphs built, callbacks composed, ended.

Training (`run.py`), the evaluator task and `evaluate --follow`
(`evaluator.py`, `follow.py`) and the actions (`actions.py`) differ in
their loops; these are the steps they share, in the order they take them.
"""

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from tensorfx._errors import DataError
from tensorfx.data import _validation
from tensorfx.training import _callbacks
from tensorfx.training._arguments import batch_size as _batch_size
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._evaluation import evaluation as _evaluation


def ready_data(
  builder: Any,
  engine: Any,
  analysis: str,
  *,
  skip_bad_records: bool,
  count_bad_records: bool = True,
  analyze: Optional[Callable[[Any], None]] = None,
  wait_secs: Optional[float] = None,
) -> Any:
  """Makes the builder's dataset ready to read, and the run's settings.

  The dataset is analyzed and its bad records policy set; then the job's
  settings are resolved, once for the run: `--batch-size all` and
  `--eval-batch-size all` become the training data's size. Everything the
  run makes after this (graphs, callbacks, logs) reads those settings, as
  `builder.settings` does from here on.

  Args:
    builder: the run's `ModelBuilder`.
    engine: its `EngineState`, which keeps the resolved settings.
    analysis: the job's analysis directory (`JobLayout.analysis`).
    skip_bad_records: `--skip-bad-records`.
    count_bad_records: whether this process counts the skipped records
      (parameter-server workers read in their own processes).
    analyze: the chief analyzes an unanalyzed dataset with this.
    wait_secs: other tasks wait this long for the chief's analysis; None
      (the actions) requires an analysis already there.

  Returns:
    The resolved `Settings`.

  Raises:
    DataError: no analysis to use, and none coming.
  """
  dataset = builder.dataset
  if skip_bad_records:
    dataset.skip_bad_records(count=count_bad_records)
  if not dataset.analyzed:
    _analysis(dataset, analysis, analyze, wait_secs)
  engine.settings = _batch_size.resolve(builder.settings, dataset)
  return engine.settings


def _analysis(dataset, analysis, analyze, wait_secs):
  if analyze is not None:
    analyze(dataset)
  elif wait_secs is not None:
    _cluster.wait_for_analysis(dataset, analysis, wait_secs)
  elif not dataset.use_analysis(analysis):
    raise DataError(
      'The dataset has not been analyzed: give --data-metadata, or '
      f'train first (training writes its analysis to {analysis}).'
    )


def build_graphs(builder: Any, config: Any) -> Tuple[Any, Any, Any, Any]:
  """The validation targets and the three graph interfaces.

  Returns:
    `(targets, training, evaluation, prediction)`; a data error while the
    graphs are built names the file and record.
  """
  targets = _evaluation.prepare_targets(
    builder.settings.validation, builder.dataset
  )
  with _validation.data_errors():
    training, evaluation, prediction = builder.build_graph_interfaces(config)
  return targets, training, evaluation, prediction


def callback_list(
  builder: Any,
  tracker: Any,
  context: Any,
  user: Sequence[Any],
  *,
  role: str,
  extra: Sequence[Any] = (),
  **builtin: Any,
) -> Any:
  """The run's callbacks, in the order they are called.

  The built-in ones for `role` (`_callbacks.builtin`, given `builtin`'s
  keywords), then `extra` (the run's own), then the trainer's, then the
  builder's `build_callbacks()`.
  """
  return _callbacks.CallbackList(
    _callbacks.builtin(builder.settings, tracker, role=role, **builtin)
    + list(extra)
    + list(user)
    + list(builder.build_callbacks()),
    context,
  )


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
