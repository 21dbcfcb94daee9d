"""The original tensorfx's census sample layout trains unchanged.

Its files as the original wrote them: `data/schema.yaml` with `numeric`
fields, `features.yaml` with a concat of `one-hot`, `log`, `scale` and
`bucketize` (`transform: {boundaries: '18,35,55,65'}`), a `metadata.json` of
field statistics passed as `--data-metadata`, data with empty cells, and a
trainer module written against the original API, run by its `run.sh`.
"""

import csv
import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from tensorfx.data import Metadata

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_original_census'),
  pytest.mark.release,
]

SAMPLES = os.path.join(ROOT, 'samples')
SAMPLE = os.path.join(SAMPLES, 'original_census')


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """`sh original_census/run.sh`, as the original ran it: (output, stderr).

  Only the output directory and a seed (the run repeats) are added.
  """
  output = tmp_path_factory.mktemp('original') / 'output'
  result = subprocess.run(
    ['sh', 'original_census/run.sh', '--output', str(output), '--seed', '1'],
    cwd=SAMPLES,
    capture_output=True,
    text=True,
    timeout=900,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return output, result.stderr


def _rows(name):
  with open(os.path.join(SAMPLE, 'data', name)) as f:
    return [row for row in csv.reader(f) if row]


def test_the_sample_data_has_holes_where_the_census_has_them():
  rows = _rows('train.csv')
  holed = [r for r in rows if '' in r]
  assert 0.04 < len(holed) / len(rows) < 0.12
  columns = {i for r in holed for i, v in enumerate(r) if v == ''}
  assert columns <= {2, 5, 12}  # workclass, occupation, native_country.


def test_its_metadata_json_reads_as_metadata():
  metadata = Metadata.load(os.path.join(SAMPLE, 'data', 'metadata.json'))
  assert metadata.instances == 0  # The original did not count them.
  assert metadata.vocabulary('income_bracket') == ['<=50K', '>50K']
  assert metadata.field('age')['min'] == 17.0
  assert 'mean' in metadata.field('age')
  assert 'mean' not in metadata.field('education_num')


def test_it_trains_unchanged_analyzing_instead_of_the_legacy_metadata(run):
  output, log = run
  legacy = [
    line
    for line in log.splitlines()
    if "holds the original tensorfx's statistics" in line
  ]
  assert len(legacy) == 1, log[-3000:]
  assert 'original_census/data/metadata.json' in legacy[0]
  assert 'Traceback' not in log
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  labels = [row[0] for row in _rows('eval.csv')]
  majority = max(labels.count(v) for v in set(labels)) / len(labels)
  assert job['metrics']['accuracy'] > majority + 0.03, (
    job['metrics'],
    majority,
  )


def test_the_model_predicts_raw_lines_with_empty_cells(run):
  output, _ = run
  lines = [','.join(row) for row in _rows('eval.csv') if '' in row][:6]
  unlabeled = [line.split(',', 1)[1] for line in lines]
  instance = dict(
    zip(
      [
        'age',
        'workclass',
        'education_num',
        'marital_status',
        'occupation',
        'relationship',
        'race',
        'gender',
        'capital_gain',
        'capital_loss',
        'hours_per_week',
        'native_country',
      ],
      [
        45,
        None,
        13,
        'Married-civ-spouse',
        None,
        'Husband',
        'White',
        'Male',
        0,
        0.0,
        40.0,
        None,
      ],
    )
  )
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'predict',
      '--model',
      str(output / 'model'),
    ],
    input='\n'.join(lines + unlabeled + [json.dumps(instance)]) + '\n',
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  outputs = [json.loads(line) for line in result.stdout.splitlines()]
  assert len(outputs) == 2 * len(lines) + 1
  # With or without the label column: the same prediction (the records
  # come back with their predictions added, the label only where given).
  predicted = [(o['label'], o['scores']) for o in outputs]
  labeled, unlabeled = predicted[: len(lines)], predicted[len(lines) : -1]
  assert [p[0] for p in labeled] == [p[0] for p in unlabeled]
  # Equal up to float rounding: the instances share batches differently.
  for (_, given), (_, without) in zip(labeled, unlabeled):
    assert given == pytest.approx(without, rel=1e-5)
  assert 'income_bracket' in outputs[0]
  assert 'income_bracket' not in outputs[len(lines)]
  assert {o['label'] for o in outputs} <= {'<=50K', '>50K'}
