"""The parameter-server profile's quick mode takes both steps apart.

`benchmarks/ps_profile.py --quick` builds tensorfx's parameter-server loop
and the hand-written one on one in-process cluster (servers on free ports
of 127.0.0.1, in the script's own process), times them in turns and
profiles each. The test asserts what the report holds: both rates, and
operation counts per part of the step that tell the two sides apart (the
admission counts and the gradient norm only on tensorfx's side, the same
model on both); never a timing.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.release


@pytest.mark.slow
@pytest.mark.cluster
def test_quick_profile_counts_each_part_of_both_steps(tmp_path):
  results = tmp_path / 'results'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'ps_profile.py'),
      '--quick',
      '--data',
      str(tmp_path / 'data'),
      '--output',
      str(results),
    ],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  report = json.loads((results / 'ps_profile.json').read_text())
  for side in ('tensorfx', 'hand-written'):
    assert len(report['rates'][side]) == report['rounds'] == 1
    assert report['medians']['rates'][side] > 0
    # Every profiled step was seen, on both sides.
    assert report['profile'][side]['steps'] == 10
  assert report['ratios']['rates']['pairs'] == 1
  ours = report['profile']['tensorfx']['operations']
  theirs = report['profile']['hand-written']['operations']
  # What only tensorfx's step does.
  for part in ('admission counts', 'gradient norm'):
    assert ours[part] > 0 and part not in theirs, part
  # The same model: the MLP's operations match one for one.
  assert ours['forward MLP and loss'] == theirs['forward MLP and loss']
  assert ours['sent: lookups'] > 0 and theirs['sent: lookups'] > 0
  text = (results / 'ps_profile.md').read_text()
  assert '| admission counts |' in text and '| **all** |' in text
