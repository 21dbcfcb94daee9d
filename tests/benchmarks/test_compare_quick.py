"""CI's benchmark step: the quick comparison and the step's parts still run.

They assert that every section or part measured something and that the
results were written; never a timing (performance is reported, in
benchmarks/README.md, not tested).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_compare_quick'),
  pytest.mark.release,
]


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  """The generated data and its analysis, shared by both scripts."""
  return tmp_path_factory.mktemp('benchmark-data')


def test_quick_comparison_runs_every_section(tmp_path, data_dir):
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'compare.py'),
      '--quick',
      '--rows',
      '8000',
      '--data',
      str(data_dir),
      '--output',
      str(tmp_path / 'results'),
    ],
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads((tmp_path / 'results' / 'compare.json').read_text())
  (training,) = report['training']
  assert set(training['medians']) == {
    'tensorfx',
    'tensorfx-nocache',
    'tensorfx-xla',
    'tensorfx-xla-cache',
    'keras-naive',
    'keras-tuned',
    'loop',
    'loop-xla',
    'loop-cache',
    'loop-xla-cache',
    'ceiling',
  }
  assert all(rate > 0 for rate in training['medians'].values())
  # Measured after the first epoch of the training shard.
  assert training['warmup'] > training['epoch_steps']
  assert training['best_hand_written'] in training['medians']
  # Every ratio is paired: one per-round ratio per round, with its spread.
  for name, paired in training['paired'].items():
    assert paired['pairs'] == report['rounds'] == len(paired['ratios']), name
    assert paired['q1'] <= paired['median'] <= paired['q3'], name
  assert 'tensorfx / loop-cache' in training['paired']
  assert 'n=1' in (tmp_path / 'results' / 'compare.md').read_text()
  assert set(training['like_for_like']) == {
    'tensorfx-nocache / loop',
    'tensorfx / loop-cache',
    'tensorfx-xla / loop-xla',
    'tensorfx-xla-cache / loop-xla-cache',
  }
  assert report['input']['rows'] == 8000
  assert report['startup']['help_imports_tensorflow'] is False
  assert report['startup']['medians']['tensorfx'] > 0
  assert report['startup']['cpu_medians']['hand-written'] > 0
  assert report['memory']['all']['rows'] == 8000
  assert set(report['serving']) == {'1', '1024'}
  table = (tmp_path / 'results' / 'compare.md').read_text()
  assert report['load']['start'] and report['load']['end']
  for heading in (
    '**Training**',
    '**Training ratios**',
    '**Input only**',
    '**Start-up**',
    '**Peak RSS of a full pass**',
    '**Serving**',
  ):
    assert heading in table


def test_step_parts_measures_every_part(tmp_path, data_dir):
  output = tmp_path / 'parts.json'
  result = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, 'benchmarks', 'step_parts.py'),
      '--rows',
      '8000',
      '--shards',
      '4',
      '--batch',
      '256',
      '--window',
      '5',
      '--rounds',
      '1',
      '--data',
      str(data_dir),
      '--output',
      str(output),
    ],
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(output.read_text())
  assert set(report['medians']) == {
    'loop cached',
    'loop XLA cached',
    "loop on tensorfx's cached pipeline",
    "loop in the engine's loop form",
    'tensorfx default',
    'tensorfx --jit-compile',
  }
  # One rate of each part per round (the smallest run of every path).
  assert all(len(rates) == 1 for rates in report['rates'].values())
  assert all(rate > 0 for rate in report['medians'].values())
  assert report['best_hand_written'] in ('loop cached', 'loop XLA cached')
  assert report['ratios'][report['best_hand_written']] == 1.0
  assert 'tensorfx default' in result.stdout
