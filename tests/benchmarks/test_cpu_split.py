"""The CPU sampler of the distributed benchmark reads each process's time.

It samples `/proc/PID/stat` (Linux) while a cluster trains, so that a
benchmark can report the cores each task used over the measured steps.
"""

import os
import sys
import time

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import cpu_split  # noqa: E402

pytestmark = pytest.mark.skipif(
  not os.path.exists('/proc/self/stat'), reason='reads /proc (Linux)'
)


def _burn(seconds):
  end = time.time() + seconds
  while time.time() < end:
    sum(i * i for i in range(1000))


def test_a_busy_process_shows_cpu_time_over_the_span():
  sampler = cpu_split.CpuSampler(lambda: {'me': os.getpid()}, interval=0.05)
  sampler.start()
  began = time.time()
  _burn(0.6)
  ended = time.time()
  sampler.stop()
  split = sampler.split(began, ended)
  assert set(split) == {'me'}
  assert split['me'] > 0
  summary = cpu_split.summary(split, rate=2000.0)
  assert summary['cores'] == split['me']
  assert summary['cpu_seconds_per_1k'] == pytest.approx(split['me'] / 2)


def test_a_gone_process_and_a_span_without_samples_give_nothing():
  assert cpu_split.cpu_seconds(2**22 + 12345) is None
  sampler = cpu_split.CpuSampler(lambda: {'gone': 2**22 + 12345}, 0.05)
  sampler.start()
  time.sleep(0.2)
  sampler.stop()
  assert sampler.split(time.time() - 0.3, time.time()) == {}
  assert sampler.split(0.0, 1.0) is None
  assert cpu_split.summary(None, 100.0) == {}


def test_a_span_between_two_samples_is_measured_between_them():
  sampler = cpu_split.CpuSampler(lambda: {}, interval=10)
  sampler.samples = [(10.0, {'ps': 1.0}), (12.0, {'ps': 2.0})]
  # No sample inside [10.5, 11.5]: the two around it give 0.5 cores.
  assert sampler.split(10.5, 11.5) == {'ps': 0.5}
  # None before the span: nothing to measure from.
  assert sampler.split(5.0, 6.0) is None
