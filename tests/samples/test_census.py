"""The census sample, run as its README says: generate, analyze, train, predict.

Smaller than the README's run (2,000 training rows, 600 steps); analysis
reads the CSV files, training the GZIP TFRecord shards, so both sources and
every feature type go through one model.
"""

import csv
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_census'),
  pytest.mark.release,
]

CENSUS = os.path.join(ROOT, 'samples', 'census')


def _tensorfx(*args, stdin=None):
  result = subprocess.run(
    [sys.executable, '-m', 'tensorfx', *args],
    cwd=CENSUS,
    input=stdin,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """The sample's four steps, once: (data dir, output dir, train result)."""
  root = tmp_path_factory.mktemp('census')
  data, analysis, output = root / 'data', root / 'analysis', root / 'output'
  result = subprocess.run(
    [
      sys.executable,
      'generate.py',
      '--train',
      '2000',
      '--eval',
      '500',
      '--output',
      str(data),
    ],
    cwd=CENSUS,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  _tensorfx(
    'analyze',
    '--data-train',
    str(data / 'train.csv'),
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    '--output',
    str(analysis),
  )
  trained = _tensorfx(
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--data-train',
    str(data / 'train-*.tfrecord.gz'),
    '--data-eval',
    str(data / 'eval.tfrecord.gz'),
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    '--data-metadata',
    str(analysis),
    '--hidden-layers:1',
    '32',
    '--hidden-layers:2',
    '16',
    '--max-steps',
    '600',
    '--seed',
    '1',
  )
  return data, analysis, output, trained


def _rows(path):
  with open(path) as f:
    return [row for row in csv.reader(f) if row]


def test_generate_writes_csv_and_tfrecord_shards(run):
  data = run[0]
  assert len(_rows(data / 'train.csv')) == 2000
  assert len(_rows(data / 'eval.csv')) == 500
  assert sorted(p.name for p in data.glob('*.tfrecord.gz')) == [
    'eval.tfrecord.gz'
  ] + [f'train-0000{i}-of-00004.tfrecord.gz' for i in range(4)]


def test_analysis_of_the_csv_data(run):
  analysis = run[1]
  metadata = json.loads((analysis / 'metadata.json').read_text())
  assert metadata['instances'] == 2000
  assert set(metadata['fields']['income']['vocabulary']) == {'>50K', '<=50K'}
  assert (analysis / 'transform_fn' / 'assets' / 'job').exists()


def test_training_beats_the_majority_class(run):
  data, _, output, _ = run
  labels = [row[-1] for row in _rows(data / 'eval.csv')]
  majority = max(labels.count(v) for v in set(labels)) / len(labels)
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['metrics']['accuracy'] > majority + 0.03, (
    job['metrics'],
    majority,
  )


def test_the_trainer_predicts_with_the_key_passed_through(run):
  data, _, _, trained = run
  ids = [int(row[0]) for row in _rows(data / 'predict.csv')]
  predictions = eval(trained.stdout.strip().splitlines()[-1])
  assert [p['person'] for p in predictions] == ids
  assert {p['label'] for p in predictions} <= {'>50K', '<=50K'}
  assert all(sum(p['scores']) == pytest.approx(1.0) for p in predictions)


def test_predict_takes_csv_lines_and_json_instances(run):
  data, _, output, _ = run
  lines = (data / 'predict.csv').read_text().splitlines()
  instance = dict(
    zip(
      [
        'id',
        'age',
        'workclass',
        'education',
        'education_num',
        'marital_status',
        'occupation',
        'sex',
        'hours_per_week',
        'capital_gain',
        'native_country',
      ],
      [
        424242,
        45,
        'Private',
        'Doctorate',
        16,
        'Married',
        'Prof-specialty',
        'Female',
        50,
        0.0,
        'Atlantis',
      ],
    )
  )  # An unseen country: hashed anyway.
  result = _tensorfx(
    'predict',
    '--model',
    str(output / 'model'),
    stdin='\n'.join(lines + [json.dumps(instance)]) + '\n',
  )
  outputs = [json.loads(line) for line in result.stdout.splitlines()]
  assert [o['person'] for o in outputs] == [
    int(line.split(',')[0]) for line in lines
  ] + [424242]
