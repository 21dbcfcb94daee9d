"""The GPU comparison (`benchmarks/gpu.sh`) refuses a CPU, runs on a GPU.

It refuses a machine without a GPU by name, and on a machine with one
prints its table.

The run with a GPU is skipped here (no GPU on the CI machines); on a GPU
machine `python -m pytest tests/benchmarks/test_gpu.py` runs it. No timing
is asserted.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.release]

GPU_PY = os.path.join(ROOT, 'benchmarks', 'gpu.py')


def _has_gpu():
  probe = subprocess.run(
    [
      sys.executable,
      '-c',
      'import tensorflow as tf; '
      "print(len(tf.config.list_physical_devices('GPU')))",
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
    env={**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '3'},
  )
  return probe.stdout.strip() not in ('', '0')


def test_without_a_gpu_it_says_so_and_exits_2(tmp_path):
  if _has_gpu():
    pytest.skip('this machine has a GPU')
  result = subprocess.run(
    [sys.executable, GPU_PY, '--output', str(tmp_path)],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 2
  assert 'sees no GPU' in result.stderr and '--allow-cpu' in result.stderr
  assert not list(tmp_path.iterdir())


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_every_pair_and_serving_is_measured(tmp_path):
  if not _has_gpu():
    pytest.skip('needs a GPU that TensorFlow sees')
  result = subprocess.run(
    [
      'bash',
      os.path.join(ROOT, 'benchmarks', 'gpu.sh'),
      '--rows',
      '40000',
      '--rounds',
      '1',
      '--data',
      str(tmp_path / 'data'),
      '--output',
      str(tmp_path / 'out'),
    ],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((tmp_path / 'out' / 'gpu.json').read_text())
  assert [s['batch'] for s in report['training']] == [1024, 8192]
  for section in report['training']:
    assert set(section['pairs']) == {'default', 'mixed', 'xla'}
    for pair in section['pairs'].values():
      assert pair['ratios'] and all(r > 0 for r in pair['ratios'])
  assert set(report['serving']) == {'1', '1024'}
  assert '| batch | switches |' in result.stdout
