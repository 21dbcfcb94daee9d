"""The table-scaling benchmark's quick mode measures all three sides.

`benchmarks/table_scaling.py --quick` runs each configuration of a tiny
grid in a child process with a cluster of its own (parameter servers as
processes, two workers), tensorfx's exact-key tables, exact keys by hand
and hashed tables in turns. The test gives it a memory budget that the
larger tables exceed: those are skipped and named, the others report
every side's rate, the tensors its workers send a step and each server's
memory, and the figure is drawn. Never a timing.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.release

_SIDES = ('tensorfx', 'hand-exact', 'hashed')


@pytest.mark.slow
@pytest.mark.cluster
def test_quick_grid_reports_every_side_and_skips_what_does_not_fit(tmp_path):
  results = tmp_path / 'results'
  figure = tmp_path / 'scaling.png'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'table_scaling.py'),
      '--quick',
      # 2^10 rows x 2 tables x 3 sides take 0.75 MiB, 2^12 rows 3 MiB.
      '--memory-gib',
      '0.002',
      '--output',
      str(results),
      '--figure',
      str(figure),
    ],
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  report = json.loads((results / 'table_scaling.json').read_text())
  grid = [(c['rows'], c['ps']) for c in report['configurations']]
  assert grid == [(1024, 1), (4096, 1), (1024, 2), (4096, 2)]
  ran = [c for c in report['configurations'] if c['status'] == 'ran']
  skipped = [c for c in report['configurations'] if c['status'] != 'ran']
  assert [c['rows'] for c in ran] == [1024, 1024]
  assert [c['rows'] for c in skipped] == [4096, 4096]
  assert all('--memory-gib' in c['status'] for c in skipped)
  for c in ran:
    assert c['tables'] == 2
    # Every side a turn of as many closures, at least --closures (quick:
    # 2), a multiple of the two workers.
    turn = c['closures_per_turn']
    assert turn >= report['config']['closures'] == 2 and turn % 2 == 0
    servers = c['ps']
    assert len(c['servers_base_rss_mib']) == servers
    for side in _SIDES:
      figures = c['sides'][side]
      assert len(figures['rates']) == report['config']['rounds'] == 1
      assert figures['examples_per_s'] > 0
      # A server's memory with the side on it: at least the empty server.
      assert len(figures['peak_rss_mib']) == servers
      assert all(
        peak >= base
        for peak, base in zip(
          figures['peak_rss_mib'], c['servers_base_rss_mib']
        )
      )
    sent = {side: c['sides'][side]['tensors_sent_per_step'] for side in _SIDES}
    # Whole tensors a step; exact keys send their keys to the servers'
    # indexes besides the hashed step's tensors.
    assert all(float(n).is_integer() and n > 0 for n in sent.values()), sent
    assert sent['tensorfx'] > sent['hashed'] < sent['hand-exact'], sent
    for reference in _SIDES[1:]:
      assert c['ratios'][reference]['pairs'] == 1
  text = (results / 'table_scaling.md').read_text()
  assert (
    '| 2^10 | 2 | 2 |' in text and '2^12 rows, 2 tables, ps=2: skipped' in text
  )
  assert figure.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
