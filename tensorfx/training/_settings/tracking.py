"""Tracking settings: the MLflow experiment a run is recorded in."""

import argparse
import dataclasses
from typing import Any, Optional, Self

from tensorfx.training._run import tracking as _tracking
from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  tracking = _section.group(parser, 'tracking')
  tracking.add_argument(
    '--experiment',
    metavar='NAME',
    help='record the run in this MLflow experiment '
    f'(needs {_tracking.INSTALL})',
  )
  tracking.add_argument(
    '--tracking-uri',
    metavar='URI',
    help='the MLflow tracking store (default: '
    'MLFLOW_TRACKING_URI, else sqlite:////OUTPUT/'
    'mlruns.db)',
  )


def check(args: Any) -> None:
  if TrackingSettings.from_args(args).enabled:
    _tracking.require_mlflow()


@dataclasses.dataclass(frozen=True)
class TrackingSettings:
  """Where the run is recorded.

  Attributes:
    experiment: the MLflow experiment (`--experiment`); None without one.
    uri: the tracking store (`--tracking-uri`); None for the environment's
      `MLFLOW_TRACKING_URI` or the job's own SQLite store.
  """

  experiment: Optional[str] = None
  uri: Optional[str] = None

  @property
  def enabled(self) -> bool:
    """Whether tracking is asked for (either flag)."""
    return bool(self.experiment or self.uri)

  @classmethod
  def from_args(cls, args: Any) -> Self:
    return cls(
      experiment=_section.read(args, 'experiment') or None,
      uri=_section.read(args, 'tracking_uri') or None,
    )
