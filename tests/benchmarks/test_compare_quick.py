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
  assert set(training['medians']) == {
      'tensorfx', 'tensorfx-nocache', 'tensorfx-xla', 'tensorfx-xla-cache',
      'keras-naive', 'keras-tuned', 'loop', 'loop-xla', 'loop-cache',
      'loop-xla-cache', 'ceiling'}
  assert all(rate > 0 for rate in training['medians'].values())
  # Measured after the first epoch of the training shard.
  assert training['warmup'] > training['epoch_steps']
  assert training['best_hand_written'] in training['medians']
  assert set(training['like_for_like']) == {
      'tensorfx-nocache / loop', 'tensorfx / loop-cache',
      'tensorfx-xla / loop-xla', 'tensorfx-xla-cache / loop-xla-cache'}
  assert report['input']['rows'] == 8000
  assert report['startup']['help_imports_tensorflow'] is False
  assert report['startup']['medians']['tensorfx'] > 0
  assert report['startup']['cpu_medians']['hand-written'] > 0
  assert report['memory']['all']['rows'] == 8000
  assert set(report['serving']) == {'1', '1024'}
  table = (tmp_path / 'results' / 'compare.md').read_text()
  assert report['load']['start'] and report['load']['end']
  for heading in ('**Training**', '**Training ratios**', '**Input only**',
                  '**Start-up**',
                  '**Peak RSS of a full pass**', '**Serving**'):
    assert heading in table
