"""CPU time of a local cluster's processes, by role, over a measured span.

On a machine with fewer cores than a cluster has tasks, a distributed
benchmark's rate is CPU work per example: every task's idle time is spent
by another task. Sampling each process's CPU time (`/proc/PID/stat`)
while it trains separates the two: how many cores each role used during
the measured steps, and the CPU seconds a thousand examples cost, a
figure that moves far less from run to run than the wall-clock rate.

  sampler = CpuSampler(lambda: {'chief': 123, 'worker-0': 124})
  sampler.start()
  ...  # the cluster trains; the span is [began, ended] (time.time())
  sampler.stop()
  sampler.split(began, ended)  # {'chief': 0.02, 'worker-0': 0.5, ...}

Linux only (`/proc`); elsewhere every figure is None.
"""

import os
import threading
import time
from typing import Callable

_TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def cpu_seconds(pid: int) -> float | None:
  """User + system CPU seconds of a process so far (None: gone, or no /proc)."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      stat = f.read()
  except OSError:
    return None
  # The command name (field 2) may hold spaces: count fields after it.
  fields = stat[stat.rindex(')') + 2 :].split()
  return (int(fields[11]) + int(fields[12])) / _TICKS


class CpuSampler(threading.Thread):
  """Samples the CPU seconds of each role's process every `interval`.

  Args:
    pids: returns `{role: pid}` of the processes to sample now; called at
      every sample (a launcher names its tasks' PIDs only once they run).
    interval: seconds between samples.
  """

  def __init__(
    self, pids: Callable[[], dict[str, int]], interval: float = 0.5
  ) -> None:
    super().__init__(daemon=True)
    self._pids = pids
    self._interval = interval
    self._done = threading.Event()
    # [(time.time(), {role: cpu seconds})]
    self.samples: list[tuple[float, dict[str, float]]] = []

  def run(self) -> None:
    while not self._done.is_set():
      now = time.time()
      seconds = {}
      for role, pid in self._pids().items():
        value = cpu_seconds(pid)
        if value is not None:
          seconds[role] = value
      self.samples.append((now, seconds))
      self._done.wait(self._interval)

  def stop(self) -> None:
    self._done.set()
    self.join()

  def split(self, began: float, ended: float) -> dict[str, float] | None:
    """Cores each role used over `[began, ended]` (None: no samples around).

    The span is narrowed to the samples inside it; a role must appear in
    both the first and the last. A span with fewer than two samples inside
    (a short one, or a sampler the machine's load delayed) is measured
    between the samples around it instead.
    """
    inside = [s for s in self.samples if began <= s[0] <= ended]
    if len(inside) < 2:
      before = [s for s in self.samples if s[0] <= began]
      after = [s for s in self.samples if s[0] >= ended]
      if not before or not after:
        return None
      inside = [before[-1], after[0]]
    (start, first), (end, last) = inside[0], inside[-1]
    if end - start <= 0:
      return None
    return {
      role: (last[role] - first[role]) / (end - start)
      for role in sorted(first)
      if role in last
    }


def summary(split: dict[str, float] | None, rate: float) -> dict[str, float]:
  """Total cores and CPU seconds a thousand examples cost, at `rate`."""
  if not split or not rate:
    return {}
  cores = sum(split.values())
  return {'cores': cores, 'cpu_seconds_per_1k': 1000 * cores / rate}
