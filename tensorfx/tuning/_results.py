"""What a tuning study returns: each trial's result, and the study's."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tensorfx.cloud import StudySpec


@dataclasses.dataclass(frozen=True)
class TrialResult:
  """One trial of a study.

  Attributes:
    trial: its id (1, 2, ...; its directory's name under the output).
    state: 'COMPLETE', 'STOPPED' (early stopping), 'FAILED' or 'RUNNING'.
    parameters: name -> value, as the trainer got them.
    value: the study's metric (its last measurement, or its best with
      `measurementSelectionType: BEST_MEASUREMENT`); None if none.
    directory: the trial's output directory.
  """

  trial: int
  state: str
  parameters: dict[str, Any]
  value: float | None
  directory: str


@dataclasses.dataclass(frozen=True)
class TuningResult:
  """What `tune` did.

  Attributes:
    study: the `StudySpec` run.
    trials: every trial, in order.
    best: the best completed trial, or None.
  """

  study: StudySpec
  trials: tuple[TrialResult, ...]
  best: TrialResult | None

  def best_json(self) -> str:
    """The best trial as one JSON object (the last line `tune` prints)."""
    if self.best is None:
      return json.dumps({'trial': None})
    return json.dumps(
      {
        'trial': self.best.trial,
        'metric': self.study.metric,
        'value': self.best.value,
        'parameters': self.best.parameters,
      }
    )
