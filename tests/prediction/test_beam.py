"""Batch prediction as a Beam pipeline: the same records out as `predict`."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import IRIS
from iris_examples import eval_rows
from iris_examples import example
from iris_examples import read_examples
from iris_examples import values
from iris_examples import write_records
from tensorfx import ConfigurationError
from tensorfx import DataError
from tensorfx.prediction import predict_beam
from tensorfx.prediction import predict_files
from tensorfx.prediction._beam import pipeline_options

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_beam')


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
  """The iris eval rows as CSV, JSON lines and GZIP TFRecord.

  One bad CSV line is among them.
  """
  folder = tmp_path_factory.mktemp('beam-inputs')
  rows = eval_rows()
  with open(folder / 'part1.csv', 'w') as f:
    for row in rows[:10]:
      f.write(','.join(row) + '\n')
    f.write('setosa,5.1,not-a-number,1.4,0.2\n')
  with open(folder / 'part2.jsonl', 'w') as f:
    for row in rows[10:20]:
      f.write(
        json.dumps(
          {
            'sepal_length': float(row[1]),
            'sepal_width': float(row[2]),
            'petal_length': float(row[3]),
            'petal_width': float(row[4]),
          }
        )
        + '\n'
      )
  write_records(
    folder / 'part3.tfrecord.gz', [example(r) for r in rows[20:]], 'GZIP'
  )
  return [
    str(folder / 'part1.csv'),
    str(folder / 'part2.jsonl'),
    str(folder / 'part3.tfrecord.gz'),
  ]


def _canonical(row):
  """A JSON row with its outputs rounded, for order-free comparison."""
  rounded = {
    k: (np.round(v, 4).tolist() if k == 'scores' else v) for k, v in row.items()
  }
  return json.dumps(rounded, sort_keys=True)


@pytest.mark.release
@pytest.mark.slow
def test_several_direct_workers_predict_what_local_predict_does(
  iris_model, inputs, tmp_path
):
  output, model = iris_model
  local = predict_files(
    model,
    inputs,
    str(tmp_path / 'local.jsonl'),
    skip_bad_records=True,
    progress=False,
  )
  assert (local.predicted, local.skipped) == (30, 1)
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'predict',
      '--model',
      os.path.join(output, 'model'),
      '--input',
      *inputs,
      '--output',
      str(tmp_path / 'beam.jsonl'),
      '--skip-bad-records',
      '--batch-size',
      '8',
      '--runner',
      'DirectRunner',
      '--direct_num_workers',
      '2',
      '--direct_running_mode',
      'multi_processing',
    ],
    capture_output=True,
    text=True,
    cwd=IRIS,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Predicted 30 records' in result.stderr
  assert '(1 bad record skipped)' in result.stderr
  # Logged by a worker (its log lines quote the message).
  assert 'part1.csv: the line' in result.stderr
  assert 'setosa,5.1,not-a-number' in result.stderr
  with open(tmp_path / 'local.jsonl') as f:
    want = sorted(_canonical(json.loads(line)) for line in f)
  with open(tmp_path / 'beam.jsonl') as f:
    got = sorted(_canonical(json.loads(line)) for line in f)
  assert got == want


@pytest.mark.slow
def test_tfrecord_output_and_a_bad_record_fails_by_default(
  iris_model, inputs, tmp_path
):
  output, model = iris_model
  model_dir = os.path.join(output, 'model')
  counts = predict_beam(
    model_dir,
    inputs[2],
    str(tmp_path / 'out.tfrecord'),
    ['--runner=DirectRunner'],
  )
  assert counts == {'predicted': 10, 'bad_records': 0}
  rows = eval_rows()[20:]
  want = model.predict([','.join(r[1:]) for r in rows])
  got = {
    tuple(
      values(e.features.feature['sepal_length'])
      + values(e.features.feature['petal_width'])
    ): e
    for e in read_examples(tmp_path / 'out.tfrecord')
  }
  assert len(got) == 10
  for row, expected in zip(rows, want):
    key = (np.float32(row[1]), np.float32(row[4]))
    features = got[key].features.feature
    assert values(features['label']) == [expected['label'].encode()]
    np.testing.assert_allclose(
      values(features['scores']), expected['scores'], rtol=1e-4, atol=1e-7
    )
  with pytest.raises(
    DataError,
    match=r'part1\.csv: the line '
    r"'setosa,5\.1,not-a-number.*sepal_width",
  ):
    predict_beam(
      model_dir,
      inputs[0],
      str(tmp_path / 'bad.jsonl'),
      ['--runner=DirectRunner'],
    )
  assert not os.path.exists(tmp_path / 'bad.jsonl')


def test_dataflow_options_are_checked_before_anything_runs():
  with pytest.raises(
    ConfigurationError,
    match='Unknown Beam pipeline '
    r'option\(s\): --num_wrokers',
  ):
    pipeline_options(['--runner=DirectRunner', '--num_wrokers=3'])
  with pytest.raises(
    ConfigurationError, match='DataflowRunner needs --project'
  ):
    pipeline_options(['--runner=DataflowRunner', '--region=us-central1'])
  with pytest.raises(ConfigurationError, match='temp_location'):
    pipeline_options(
      ['--runner=DataflowRunner', '--project=p', '--region=us-central1']
    )
  with pytest.raises(ConfigurationError, match='gs:// path'):
    pipeline_options(
      [
        '--runner=DataflowRunner',
        '--project=p',
        '--region=us-central1',
        '--temp_location=/tmp/x',
      ]
    )
  options = pipeline_options(
    [
      '--runner=DataflowRunner',
      '--project=my-project',
      '--region=us-central1',
      '--temp_location=gs://my-bucket/tmp',
      '--num_workers=4',
    ]
  )
  assert options.get_all_options()['num_workers'] == 4


def test_stdin_and_a_checkpoint_are_refused(tmp_path):
  with pytest.raises(ConfigurationError, match='not - for stdin'):
    predict_beam(str(tmp_path), '-', 'out.jsonl')
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'predict',
      '--module',
      'trainer',
      '--job-dir',
      str(tmp_path),
      '--input',
      'x.csv',
      '--output',
      'y.jsonl',
      '--runner',
      'DirectRunner',
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 1
  assert 'predicts with an exported model' in result.stderr
