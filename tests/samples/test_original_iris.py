"""The original tensorfx's three iris trainers, at its last version, train.

`samples/original_iris` holds them as that version's users wrote them: CSV
files through `python -m tensorfx.tools.tfx train` with `--hidden-layers:N`
flags, TFRecord files of tf.Example with the original's `metadata.json`,
and a programmatic client of pandas DataFrames. Each trains on data of
tensorfx's own (generate.py) and its model predicts.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from tensorfx import prediction
from tensorfx.tools import tfx

SAMPLE = os.path.join(ROOT, 'samples', 'original_iris')
# Instances in the original's column order, without the species.
INSTANCES = ['6.0,2.5,6.3,3.3', '1.3,0.2,4.4,3.0', '4.7,1.2,6.1,2.8']
EXPECTED = ['virginica', 'setosa', 'versicolor']

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_original_iris')]


def _tfx_train(module, suffix, output, *extra, max_steps='600'):
  """Runs the sample's run script's command line: (returncode, log)."""
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx.tools.tfx',
      'train',
      '--module',
      module,
      '--output',
      str(output),
      *extra,
      '--data-train',
      f'data/train.{suffix}',
      '--data-eval',
      f'data/eval.{suffix}',
      '--data-schema',
      'data/schema.yaml',
      '--data-metadata',
      'data/metadata.json',
      '--data-features',
      'trainer/features.yaml',
      '--log-level-tensorflow',
      'ERROR',
      '--log-level',
      'INFO',
      '--batch-size',
      '5',
      '--max-steps',
      max_steps,
      '--checkpoint-interval-secs',
      '30',
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
    ],
    cwd=SAMPLE,
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  return result.returncode, result.stderr + result.stdout


def _job(output):
  return yaml.safe_load((output / 'job.yaml').read_text())


@pytest.fixture(scope='module')
def csv_job(tmp_path_factory):
  output = tmp_path_factory.mktemp('original-iris') / 'csv'
  code, log = _tfx_train('trainer.csv', 'csv', output)
  assert code == 0, log[-3000:]
  return output, log


def test_the_csv_trainer_trains_through_the_tfx_tool(csv_job):
  output, log = csv_job
  job = _job(output)
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] >= 0.85, job['metrics']
  # The original's metadata.json is recognized, and the data analyzed.
  assert "holds the original tensorfx's statistics" in log
  # --hidden-layers:N built the layers given.
  assert job['arguments']['hidden_layers'] == [20, 10]


def test_tfx_predict_writes_a_json_line_per_instance(csv_job, tmp_path, capsys):
  output, _ = csv_job
  instances = tmp_path / 'instances.csv'
  instances.write_text('\n'.join(INSTANCES) + '\n')
  predictions = tmp_path / 'predictions.json'
  assert (
    tfx.main(
      [
        'predict',
        '--model',
        str(output / 'model'),
        '--input',
        str(instances),
        '--output',
        str(predictions),
      ]
    )
    == 0
  )
  lines = [json.loads(line) for line in predictions.read_text().splitlines()]
  assert [line['label'] for line in lines] == EXPECTED
  capsys.readouterr()


@pytest.mark.release
def test_the_examples_trainer_reads_the_original_tfrecords(tmp_path):
  output = tmp_path / 'examples'
  code, log = _tfx_train('trainer.examples', 'tfrecord', output)
  assert code == 0, log[-3000:]
  job = _job(output)
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] >= 0.85, job['metrics']
  model = prediction.Model.load(str(output / 'model'))
  assert [p['label'] for p in model.predict(INSTANCES)] == EXPECTED


@pytest.mark.release
def test_the_dataframe_client_trains_and_predicts_in_process(tmp_path):
  spec = importlib.util.spec_from_file_location(
    'original_iris_df', os.path.join(SAMPLE, 'trainer', 'df.py')
  )
  client = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(client)
  predictions = client.main(str(tmp_path / 'df'), max_steps=600)
  assert [p['label'] for p in predictions] == EXPECTED
  job = _job(tmp_path / 'df')
  assert job['metrics']['accuracy'] >= 0.85, job['metrics']


@pytest.mark.release
@pytest.mark.cluster
def test_distributed_trains_on_a_local_master_worker_and_ps(tmp_path):
  output = tmp_path / 'distributed'
  code, log = _tfx_train(
    'trainer.csv', 'csv', output, '--distributed', max_steps='40'
  )
  assert code == 0, log[-3000:]
  for role in ('[chief   ]', '[worker-0]', '[ps-0    ]'):
    assert role in log, role
  assert _job(output)['status'] == 'completed'
