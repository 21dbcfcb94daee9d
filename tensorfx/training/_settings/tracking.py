"""Tracking settings: the MLflow experiment a run is recorded in."""

import dataclasses
import importlib.util
from typing import Any, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

# MLflow's client and its SQL store are dependencies of tensorfx; an
# environment that lacks them (installed with --no-deps) gets them from the
# package index by their own names.
INSTALL = 'pip install "mlflow-skinny>=2.10" "sqlalchemy>=2.0" "alembic>=1.12"'


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
    help='record the run in this MLflow experiment',
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
      require_mlflow()


def require_mlflow() -> None:
  """Fails clearly when MLflow (a dependency of tensorfx) is not installed.

  Raises:
    ConfigurationError: naming the install command.
  """
  if importlib.util.find_spec('mlflow') is None:
    raise ConfigurationError(
      'Experiment tracking (--experiment, --tracking-uri) records runs '
      f'with MLflow, which is not installed: {INSTALL}'
    )
