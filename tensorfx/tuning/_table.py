"""The results table `tune` prints as trials finish."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from tensorfx.cloud import StudySpec
from tensorfx.tuning import _space

if TYPE_CHECKING:
  from tensorfx.tuning._trialrun import TrialResult


class Table:
  """Prints a header once, then one row per finished trial.

  Example (printed):

    trial  state     accuracy  learning-rate  hidden-layers:1
    1      COMPLETE  0.9333    0.0123         17
  """

  def __init__(self, study: StudySpec, out: IO[str]) -> None:
    self._out = out
    self._columns = [
      'trial',
      'state',
      study.metric,
      *(p.name for p in study.parameters),
    ]
    self._widths = [
      max(len(c), w)
      for c, w in zip(self._columns, [5, 8, 8] + [8] * len(study.parameters))
    ]
    self._header = False

  def row(self, trial: TrialResult) -> None:
    if not self._header:
      self._print(self._columns)
      self._header = True
    value = '-' if trial.value is None else f'{trial.value:.6g}'
    cells = [
      str(trial.trial),
      trial.state,
      value,
      *(_cell(trial.parameters.get(name)) for name in self._columns[3:]),
    ]
    self._print(cells)

  def _print(self, cells: list[str]) -> None:
    line = '  '.join(c.ljust(w) for c, w in zip(cells, self._widths))
    print(line.rstrip(), file=self._out, flush=True)


def _cell(value: object) -> str:
  if value is None:
    return '-'
  if isinstance(value, float) and not value.is_integer():
    return f'{value:.6g}'
  return _space.flag_value(value)
