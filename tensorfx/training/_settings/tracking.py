"""Tracking settings: the MLflow experiment a run is recorded in."""

import dataclasses
from typing import Any, Optional

from tensorfx.training._run import tracking as _tracking
from tensorfx.training._settings import _section


@dataclasses.dataclass(frozen=True)
class TrackingSettings(_section.Section):
  """Where the run is recorded.

  Attributes:
    experiment: the MLflow experiment (`--experiment`); None without one.
    uri: the tracking store (`--tracking-uri`); None for the environment's
      `MLFLOW_TRACKING_URI` or the job's own SQLite store.
  """

  experiment: Optional[str] = _section.setting(
    '--experiment',
    group='tracking',
    metavar='NAME',
    convert=_section.or_none,
    help='record the run in this MLflow experiment '
    f'(needs {_tracking.INSTALL})',
  )
  uri: Optional[str] = _section.setting(
    '--tracking-uri',
    group='tracking',
    metavar='URI',
    convert=_section.or_none,
    help='the MLflow tracking store (default: '
    'MLFLOW_TRACKING_URI, else sqlite:////OUTPUT/'
    'mlruns.db)',
  )

  @property
  def enabled(self) -> bool:
    """Whether tracking is asked for (either flag)."""
    return bool(self.experiment or self.uri)

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the flags, and that MLflow is installed if either is given."""
    super().check(args)
    if cls.from_args(args).enabled:
      _tracking.require_mlflow()
