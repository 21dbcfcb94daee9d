"""The distributed comparison's quick mode still runs every section.

`benchmarks/distributed.py --quick` trains the reference model on real
local clusters on 127.0.0.1 (parameter-server clusters, with Keras
embeddings and with tensorfx tables split over two servers, and a
multi-worker one), with `tensorfx train --cluster` and with hand-written
TensorFlow; exact-key tables also against exact keys by hand.
The test asserts that every section measured every side (their rates and
the CPU each task used), paired tensorfx with each reference, and wrote
its results; never a timing (performance is reported in
benchmarks/README.md, not tested).
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
def test_quick_distributed_comparison_measures_every_section(tmp_path):
  results = tmp_path / 'results'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'distributed.py'),
      '--quick',
      '--data',
      str(tmp_path / 'data'),
      '--output',
      str(results),
    ],
    capture_output=True,
    text=True,
    timeout=1500,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  report = json.loads((results / 'distributed.json').read_text())
  assert set(report['sections']) == {
    'parameter-servers',
    'multi-worker',
    'tables-hashed',
    'tables-exact',
  }
  assert report['sections']['parameter-servers']['cluster'] == 'ps=1,workers=2'
  # The embedding path: tables split over two parameter servers.
  assert report['sections']['tables-exact']['cluster'] == 'ps=2,workers=2'
  # Exact keys against exact keys by hand first, then against hashed.
  assert report['sections']['tables-exact']['references'] == [
    'hand-exact',
    'hand-written',
  ]
  for name, section in report['sections'].items():
    sides = ['tensorfx', *section['references']]
    assert set(section['rates']) == set(section['cpu']) == set(sides), name
    for side in sides:
      assert len(section['rates'][side]) == report['rounds'] == 1, name
      assert section['medians'][side] > 0, (name, side)
    # Also the rate tensorfx logs (its loop calls only), beside the wall one.
    assert section['tensorfx_in_loop'] > 0, name
    assert list(section['ratios']) == section['references'], name
    for reference, ratio in section['ratios'].items():
      assert ratio['pairs'] == 1 and ratio['median'] > 0, (name, reference)
      assert ratio['q1'] <= ratio['median'] <= ratio['q3'], (name, reference)
      # The ratio is the pair's: tensorfx's rate over the reference's.
      assert ratio['median'] == pytest.approx(
        section['rates']['tensorfx'][0] / section['rates'][reference][0]
      )
      assert section['cpu_ratios'][reference]['pairs'] == 1, name
    # The CPU each task used over the measured steps, by side.
    for side in sides:
      (cpu,) = section['cpu'][side]
      assert cpu['cores'] > 0 and cpu['cpu_seconds_per_1k'] > 0, (name, side)
      jobs = {task.rsplit('-', 1)[0] for task in cpu['tasks']}
      assert {'chief', 'worker'} <= jobs, (name, side, cpu['tasks'])
      if section['cluster'].startswith('ps='):
        assert 'ps' in jobs, (name, side)
    assert 'launcher' in section['cpu']['tensorfx'][0]['tasks'], name
  table = (results / 'distributed.md').read_text()
  for name in report['sections']:
    assert f'| {name} |' in table
  assert '| tables-exact | `ps=2,workers=2` | by hand, exact keys' in table
  assert '| tables-exact | `ps=2,workers=2` | by hand, hashed' in table
  assert 'n=1' in table
  assert 'CPU s / 1k examples' in table
