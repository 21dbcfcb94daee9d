"""The iris sample, run exactly as the README says."""

import ast

import pytest
import yaml

pytestmark = pytest.mark.slow


def test_iris_sample_trains_and_predicts(iris_sample_run):
  output, result = iris_sample_run
  assert result.returncode == 0, result.stderr[-3000:]
  predictions = ast.literal_eval(result.stdout.strip().splitlines()[-1])
  assert [p['label'] for p in predictions] == ['virginica', 'setosa',
                                               'versicolor']
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] >= 0.93
  assert (output / 'model' / 'saved_model.pb').exists()
  # Progress went to the log while not on a terminal.
  assert 'step 1000/1000' in result.stderr
