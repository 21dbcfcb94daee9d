"""The table-reduction benchmark still runs, on a tiny table.

`benchmarks/table_reduction.py` trains one embedding table on two workers
(127.0.0.1) with the tables' gradients summed as slices and as dense
tensors, and prints steps/s of each and their ratio. The test checks that
both sides ran and the ratio was printed; never a timing.
"""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.release


@pytest.mark.slow
@pytest.mark.cluster
def test_both_reductions_are_measured():
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'table_reduction.py'),
      '--capacity',
      '1000',
      '--steps',
      '20',
      '--batch',
      '16',
    ],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  rates = dict(
    re.findall(r'^(sparse|dense) .*?([\d.]+) steps/s$', result.stdout, re.M)
  )
  assert float(rates['sparse']) > 0 and float(rates['dense']) > 0, result.stdout
  assert re.search(r'^sparse / dense: \d+\.\d\d$', result.stdout, re.M)
