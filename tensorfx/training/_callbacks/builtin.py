"""The built-in callbacks of each kind of run, in calling order."""

from typing import Any, Optional

from tensorfx.training._callbacks import bad_records
from tensorfx.training._callbacks import early_stopping
from tensorfx.training._callbacks import evaluator_stop
from tensorfx.training._callbacks import hparams
from tensorfx.training._callbacks import hypertune
from tensorfx.training._callbacks import keep_best
from tensorfx.training._callbacks import loss_guard
from tensorfx.training._callbacks import model_summary
from tensorfx.training._callbacks import profiler
from tensorfx.training._callbacks import progress
from tensorfx.training._callbacks import serving_check
from tensorfx.training._callbacks import signals
from tensorfx.training._callbacks import table_fill
from tensorfx.training._callbacks import tensorboard
from tensorfx.training._callbacks import tracking
from tensorfx.training._callbacks.base import Callback


def builtin(
  settings: Any,
  tracker: Any,
  role: str,
  source: Optional[dict[str, Any]] = None,
  arguments: Optional[dict[str, Any]] = None,
  evaluator_task: bool = False,
) -> list[Callback]:
  """The built-in callbacks of a run, in the order they are called.

  Guards and signals come first (they decide whether training goes on),
  then what reports (the model summary, progress, TensorBoard and its
  hyperparameters, the profiler), what keeps (best checkpoints), what
  records (MLflow, tuning, bad records), and what decides to stop (early
  stopping).

  Args:
    settings: the job's `Settings`.
    tracker: the experiment `Tracker`.
    role: 'train', 'evaluator' or 'evaluate' (see `RunContext.role`).
    source: git provenance of the trainer, for the experiment record.
    arguments: the resolved arguments, for the experiment record.
    evaluator_task: whether an evaluator task validates (then the chief
      watches for its request to stop).

  Returns:
    A list of callbacks.
  """
  callbacks: list[Callback] = []
  if role == 'train':
    callbacks += [
      loss_guard.LossGuardCallback(settings.guards),
      signals.SignalStop(),
      model_summary.ModelSummaryCallback(),
    ]
  callbacks.append(progress.ProgressCallback())
  if role != 'evaluate':
    callbacks.append(tensorboard.TensorBoardCallback())
  if role == 'train':
    callbacks.append(table_fill.TableFillCallback())
  if role == 'train':
    callbacks.append(hparams.HParamsCallback(arguments or {}))
    if settings.summaries.profiler_port is not None:
      callbacks.append(
        profiler.ProfilerServerCallback(settings.summaries.profiler_port)
      )
    if settings.summaries.profile_steps:
      callbacks.append(
        profiler.ProfilerCallback(*settings.summaries.profile_steps)
      )
  if role != 'evaluate':
    callbacks.append(keep_best.KeepBestCallback())
  callbacks.append(
    tracking.TrackingCallback(
      tracker,
      arguments or {},
      source or {},
      action='evaluate' if role == 'evaluate' else 'train',
      owner=role != 'evaluator',
      resume=settings.restore.resume or role != 'train',
    )
  )
  if role != 'evaluate':
    callbacks += [
      hypertune.HypertuneCallback(),
      bad_records.BadRecordsCallback(),
    ]
    patience = settings.validation.early_stopping_patience
    if patience:
      callbacks.append(
        early_stopping.EarlyStopping(
          patience=patience,
          min_delta=settings.validation.early_stopping_min_delta,
        )
      )
  if role == 'train':
    if evaluator_task:
      callbacks.append(evaluator_stop.EvaluatorStopWatch())
    callbacks.append(serving_check.ServingCheck())
  return callbacks
