"""CI's benchmark step: the quick comparison still runs end to end.

It asserts that every section measured something and that the table was
written; never a timing (performance is reported, in benchmarks/README.md,
not tested).
"""

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_quick_comparison_runs_every_section(tmp_path):
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, 'benchmarks', 'compare.py'),
       '--quick', '--rows', '8000', '--data', str(tmp_path / 'data'),
       '--output', str(tmp_path / 'results')],
      capture_output=True, text=True, timeout=900, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((tmp_path / 'results' / 'compare.json').read_text())
  training, = report['training']
  assert set(training['medians']) == {'tensorfx', 'keras-naive',
                                      'keras-tuned', 'loop', 'ceiling'}
  assert all(rate > 0 for rate in training['medians'].values())
  assert report['input']['rows'] == 8000
  assert report['startup']['help_imports_tensorflow'] is False
  assert report['startup']['medians']['tensorfx'] > 0
  assert report['startup']['cpu_medians']['hand-written'] > 0
  assert report['memory']['all']['rows'] == 8000
  assert set(report['serving']) == {'1', '1024'}
  table = (tmp_path / 'results' / 'compare.md').read_text()
  for heading in ('**Training**', '**Input only**', '**Start-up**',
                  '**Peak RSS of a full pass**', '**Serving**'):
    assert heading in table
