"""The cost-growth benchmark's quick mode measures both sections and draws.

`benchmarks/cost_growth.py --quick` analyzes two small census files and
trains a one-table model at two capacities, each in a fresh process; the
test checks that every size was measured, the tables were written and the
figure is a PNG. Never a timing.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.release


@pytest.mark.slow
def test_quick_cost_growth_measures_every_size_and_draws(tmp_path):
  figure = tmp_path / 'growth.png'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'cost_growth.py'),
      '--quick',
      '--data',
      str(tmp_path / 'data'),
      '--output',
      str(tmp_path / 'results'),
      '--figure',
      str(figure),
    ],
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  report = json.loads((tmp_path / 'results' / 'cost_growth.json').read_text())
  assert [r['rows'] for r in report['analysis']] == [3000, 10000]
  assert [r['capacity'] for r in report['tables']] == [1024, 4096]
  for run in report['analysis'] + report['tables']:
    assert run['seconds'] > 0 and run['peak_rss_mib'] > 100, run
  markdown = (tmp_path / 'results' / 'cost_growth.md').read_text()
  assert '| 2^12 (4,096) |' in markdown and '| 10,000 |' in markdown
  assert figure.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
