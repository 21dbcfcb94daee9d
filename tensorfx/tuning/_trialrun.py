"""One trial: a normal tensorfx run in its own process and output directory.

The process gets what a Vertex AI trial gets: the study's parameters as
`--NAME=VALUE` flags after the fixed trainer arguments, `CLOUD_ML_TRIAL_ID`,
`CLOUD_ML_HP_METRIC_TAG` and `CLOUD_ML_HP_METRIC_FILE` (here a file in the
trial's directory). Its measurements are read back from that file, the way
the tuning service reads them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
from typing import IO, Any

from tensorfx import _hypertune
from tensorfx import _trainercommand

METRICS_FILE = 'hypertune.metrics'
LOG_FILE = 'trial.log'


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


class TrialRun:
  """A running trial process.

  Attributes:
    number: the trial's number in the study (its directory's name).
    directory: its output directory (`--output`).
    parameters: name -> value, as passed.
  """

  def __init__(
    self,
    number: int,
    directory: str,
    module: str,
    trainer_args: list[str],
    parameters: dict[str, Any],
    flags: list[str],
    metric: str,
  ) -> None:
    self.number = number
    self.directory = directory
    self.parameters = parameters
    self._metric = metric
    self._last_step = -1
    os.makedirs(directory, exist_ok=True)
    self.metrics_file = os.path.join(directory, METRICS_FILE)
    env = dict(os.environ)
    env[_hypertune.TRIAL_ID] = str(number)
    env[_hypertune.METRIC_TAG] = metric
    env[_hypertune.METRIC_FILE] = self.metrics_file
    command = _trainercommand.train_command(
      module, directory, [*trainer_args, *flags]
    )
    # Open while the trial runs; closed when it ends (poll).
    self._log: IO[bytes] = open(  # noqa: SIM115
      os.path.join(directory, LOG_FILE), 'ab'
    )
    self._log.write(('$ ' + ' '.join(command) + '\n').encode())
    self._log.flush()
    # Its own process group, so stopping it stops whatever it started.
    self._process = subprocess.Popen(
      command,
      env=env,
      stdout=self._log,
      stderr=subprocess.STDOUT,
      start_new_session=True,
    )

  def poll(self) -> int | None:
    """The exit code, or None while it runs."""
    code = self._process.poll()
    if code is not None and not self._log.closed:
      self._log.close()
    return code

  def new_measurements(self) -> list[tuple[int, float]]:
    """The (step, value) measurements of the study's metric not yet read."""
    # By step, not by line: the file keeps only its last 100 lines.
    new = [
      (step, value)
      for step, value in measurements(self.metrics_file, self._metric)
      if step > self._last_step
    ]
    if new:
      self._last_step = new[-1][0]
    return new

  def stop(self, wait_seconds: float = 60.0) -> int:
    """Stops the trial (SIGTERM: the trainer saves and exits); its code."""
    if self._process.poll() is None:
      try:
        os.killpg(self._process.pid, signal.SIGTERM)
      except ProcessLookupError:
        pass
      try:
        self._process.wait(wait_seconds)
      except subprocess.TimeoutExpired:
        os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
    return self.poll() or 0


def measurements(path: str, metric: str) -> list[tuple[int, float]]:
  """The (step, value) lines of `metric` in a hypertune metrics file."""
  try:
    with open(path) as f:
      lines = f.read().splitlines()
  except OSError:
    return []
  found = []
  for line in lines:
    try:
      entry = json.loads(line)
      if metric in entry:
        found.append(
          (int(float(entry.get('global_step') or 0)), float(entry[metric]))
        )
    except (ValueError, TypeError):
      continue  # A line another writer left; the service skips it too.
  return found
