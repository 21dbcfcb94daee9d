"""The iris sample, run exactly as the README says."""

import ast
import os
import re

import pytest
import yaml

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_iris_sample_trains_and_predicts(iris_sample_run):
  output, result = iris_sample_run
  assert result.returncode == 0, result.stderr[-3000:]
  predictions = ast.literal_eval(result.stdout.strip().splitlines()[-1])
  assert [p['label'] for p in predictions] == [
    'virginica',
    'setosa',
    'versicolor',
  ]
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] >= 0.93
  assert (output / 'model' / 'saved_model.pb').exists()
  # Progress went to the log while not on a terminal.
  assert 'step 1000/1000' in result.stderr


def _shape(line, output):
  """A line with its timings, counts and values as '#', its output dir named."""
  line = line.replace(str(output), '/tmp/tensorfx-iris')
  return re.sub(r'\d[\d,]*(\.\d+)?(e-?\d+)?', '#', line)


def test_the_readme_shows_what_the_command_prints(iris_sample_run):
  output, result = iris_sample_run
  assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(ROOT, 'README.md')) as f:
    text = f.read()
  shown = re.search(
    r'The first command above prints \(timings vary\):\n\n'
    r'```\n(.*?)\n```',
    text,
    re.S,
  )[1].splitlines()
  printed = [
    _shape(line, output)
    for line in (result.stderr + result.stdout).splitlines()
  ]
  # Every line the README shows, in order, as the run printed it (but for
  # times, rates, losses and scores); the predictions keys in their order.
  at = 0
  for line in shown:
    assert _shape(line, output) in printed[at:], (line, printed)
    at = printed.index(_shape(line, output), at) + 1
  predictions = ast.literal_eval(result.stdout.strip().splitlines()[-1])
  assert [list(p) for p in predictions] == [['classes', 'label', 'scores']] * 3
