"""Typed settings of a training job, one frozen dataclass per concern.

Each concern's module defines its flags (`add_arguments`), the values they
may take (`check`) and its dataclass (`from_args`). `ModelArguments` builds
its parser from them; the trainer reads `Settings.from_args(args)` once and
hands each collaborator the section it needs.

Example:
  >>> settings = Settings.from_args(ModelArguments.parse(['--max-steps',
  ...                                                     '500']))
  >>> settings.loop.max_steps, settings.checkpoints.keep
  (500, 5)

This package must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import argparse
import dataclasses
from typing import Any, Self, Tuple, Type, cast

from tensorfx.training._settings import _section
from tensorfx.training._settings import data
from tensorfx.training._settings.checkpoints import CheckpointSettings
from tensorfx.training._settings.checkpoints import parse_best_metric
from tensorfx.training._settings.data import DataSettings
from tensorfx.training._settings.export import ExportSettings
from tensorfx.training._settings.guards import GuardSettings
from tensorfx.training._settings.job import JobSettings
from tensorfx.training._settings.logging import LoggingSettings
from tensorfx.training._settings.loop import LoopSettings
from tensorfx.training._settings.loss import LossSettings
from tensorfx.training._settings.optimizer import OptimizerSettings
from tensorfx.training._settings.prediction import PredictionSettings
from tensorfx.training._settings.restore import RestoreSettings
from tensorfx.training._settings.speed import SpeedSettings
from tensorfx.training._settings.summaries import SummarySettings
from tensorfx.training._settings.tasks import TaskSettings
from tensorfx.training._settings.tracking import TrackingSettings
from tensorfx.training._settings.validation import ValidationSettings
from tensorfx.training._settings.weights import WeightSettings

# In the order their flags appear in --help.
_SECTIONS: Tuple[Type[_section.Section], ...] = (
  DataSettings,
  JobSettings,
  LoopSettings,
  SpeedSettings,
  CheckpointSettings,
  OptimizerSettings,
  LossSettings,
  WeightSettings,
  ValidationSettings,
  GuardSettings,
  RestoreSettings,
  ExportSettings,
  TrackingSettings,
  PredictionSettings,
  LoggingSettings,
  SummarySettings,
  TaskSettings,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
  """Adds every section's flags to `parser`."""
  for section in _SECTIONS:
    section.add_arguments(parser)
    if section is JobSettings:
      data.add_filter_arguments(parser)


def check(args: Any) -> None:
  """Checks every section's values.

  Raises:
    ConfigurationError: naming the flag and the value received.
  """
  for section in _SECTIONS:
    section.check(args)


@dataclasses.dataclass(frozen=True)
class Settings:
  """Every concern's settings, built once from the parsed arguments."""

  data: DataSettings = DataSettings()
  job: JobSettings = JobSettings()
  loop: LoopSettings = LoopSettings()
  speed: SpeedSettings = SpeedSettings()
  checkpoints: CheckpointSettings = CheckpointSettings()
  optimizer: OptimizerSettings = OptimizerSettings()
  loss: LossSettings = LossSettings()
  validation: ValidationSettings = ValidationSettings()
  guards: GuardSettings = GuardSettings()
  restore: RestoreSettings = RestoreSettings()
  export: ExportSettings = ExportSettings()
  tracking: TrackingSettings = TrackingSettings()
  prediction: PredictionSettings = PredictionSettings()
  logging: LoggingSettings = LoggingSettings()
  summaries: SummarySettings = SummarySettings()
  weights: WeightSettings = WeightSettings()
  tasks: TaskSettings = TaskSettings()

  @classmethod
  def from_args(cls, args: Any) -> Self:
    """Reads every section from `args` (a `ModelArguments` or namespace)."""
    # Each field's type is a section class (not a string: no postponed
    # annotations here).
    return cls(
      **{
        field.name: cast(Any, field.type).from_args(args)
        for field in dataclasses.fields(cls)
      }
    )


__all__ = [
  'CheckpointSettings',
  'DataSettings',
  'ExportSettings',
  'GuardSettings',
  'JobSettings',
  'LoggingSettings',
  'LoopSettings',
  'LossSettings',
  'OptimizerSettings',
  'PredictionSettings',
  'RestoreSettings',
  'Settings',
  'SpeedSettings',
  'SummarySettings',
  'TaskSettings',
  'TrackingSettings',
  'ValidationSettings',
  'WeightSettings',
  'add_arguments',
  'check',
  'parse_best_metric',
]
