"""The exact-resume benchmark still runs, on a small CSV.

`benchmarks/exact_resume.py` measures what carrying the input's position
costs: the step function and checkpoint saves with it and without, the
resume's pass over the data read, and tf.data's iterator checkpoint for
comparison. The test checks that every part was measured for every
workload; never a timing.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.release, pytest.mark.slow]


def test_every_part_is_measured_for_every_workload(tmp_path):
  figures = tmp_path / 'figures.json'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'exact_resume.py'),
      '--rows',
      '2000',
      '--rounds',
      '2',
      '--window',
      '50',
      '--data',
      str(tmp_path / 'data'),
      '--output',
      str(figures),
    ],
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  measured = json.loads(figures.read_text())
  assert [f['workload'] for f in measured] == [
    'iris, --cache auto',
    'iris, --cache none',
    '2,000 rows, --cache auto',
    '2,000 rows, --cache none',
  ]
  for figure in measured:
    # The position is in the checkpoint: a few bytes more, not megabytes.
    sizes = figure['checkpoint_bytes']
    assert 0 < sizes['on'] - sizes['off'] < 1000, figure
    assert figure['step_ratio']['n'] == 2 and figure['step_ratio']['median'] > 0
    assert set(figure['resume_s']) == {
      'skip 0 epochs',
      'skip 1 epochs',
      'skip 2 epochs',
    }
    assert figure['iterator_checkpoint']['bytes'] > sizes['on'] - sizes['off']
  assert 'tf.data iterator checkpoint instead' in result.stdout
