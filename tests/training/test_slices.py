"""Sliced evaluation (`--eval-slices`): every metric per value of a raw field.

The iris job is trained a few steps with slices by `species` (its
discrete label) and `petal_length` (numeric: equal-width buckets of the
analyzed range); the chief's validation, `tensorfx evaluate` and
`evaluate --follow` each report the slices beside the overall numbers.
"""

import json
import os
import subprocess
import sys
import types

import pytest

from conftest import IRIS
from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._evaluation import slices as _slices
from tensorfx.training._run import evaluator as _evaluator
from tensorfx.training._settings.validation import parse_slices
from test_trainer import _scalars

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_slices')

_SLICES = [
  '--eval-slices',
  'species,petal_length',
  '--eval-slice-min-examples',
  '8',
]


def _builder(output, dataset, *flags):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', '--seed', '2', *flags),
    parse_job=True,
  )
  return nn.FeedForwardClassification(args, dataset), job


@pytest.fixture(scope='module')
def trained(tmp_path_factory, iris_dataset_factory):
  """A job trained 20 steps with slices, checkpoints at 10 and 20."""
  output = tmp_path_factory.mktemp('slices') / 'job'
  builder, job = _builder(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '20',
    '--checkpoint-interval-steps',
    '10',
    '--learning-rate',
    '0.05',
    *_SLICES,
  )
  training.ModelTrainer().train(builder, job)
  return output


def _by_field(slices, field):
  return {
    label: entry
    for label, entry in slices.items()
    if label.split('=')[0] == field and '*' not in label
  }


def test_parse_fields_and_crosses():
  assert parse_slices(['species', 'a*b,species']) == [('species',), ('a', 'b')]
  with pytest.raises(ConfigurationError, match='FIELD1\\*FIELD2'):
    parse_slices(['species,*b'])


def test_numeric_buckets_follow_the_bucketize_boundaries():
  from tensorfx.data import Feature

  stats = {'min': 0.0, 'max': 8.0}
  explicit = types.SimpleNamespace(
    features=[
      Feature(
        'size',
        'bucketize',
        fields='petal_length',
        params={'boundaries': [2.5, 4.8]},
      )
    ]
  )
  assert _slices.boundaries(explicit, 'petal_length', stats) == [2.5, 4.8]
  # Quantile buckets (or none): equal width over the analyzed range.
  quantiles = types.SimpleNamespace(
    features=[
      Feature('size', 'bucketize', fields='petal_length', params={'buckets': 2})
    ]
  )
  assert _slices.boundaries(quantiles, 'petal_length', stats) == [4.0]
  assert _slices.boundaries(
    types.SimpleNamespace(features=None), 'petal_length', stats
  ) == [2.0, 4.0, 6.0]


@pytest.mark.slow
def test_the_chief_writes_slices_to_tensorboard(trained):
  scalars = _scalars(trained / 'summaries' / 'eval')
  for species in ('setosa', 'versicolor', 'virginica'):
    tag = f'eval/slice/species={species}/accuracy'
    assert [step for step, _ in scalars[tag]] == [10, 20]
    assert dict(scalars[f'eval/slice/species={species}/examples'])[20] == 10
  buckets = [
    tag
    for tag in scalars
    if tag.startswith('eval/slice/petal_length=') and tag.endswith('/loss')
  ]
  assert len(buckets) >= 2


@pytest.mark.slow
def test_evaluate_reports_slices_that_add_up(trained, iris_dataset_factory):
  builder, job = _builder(trained, iris_dataset_factory(), *_SLICES)
  summary = training.ModelTrainer().evaluate(builder, job)
  slices = summary['slices']['eval']
  written = json.loads((trained / 'evaluations' / 'ckpt-20.json').read_text())
  assert written['slices'] == summary['slices']
  total = 30  # samples/iris/data/eval.csv
  for field in ('species', 'petal_length'):
    per_field = _by_field(slices, field)
    assert sum(e['examples'] for e in per_field.values()) == total
    for entry in per_field.values():
      assert entry['flagged'] == (entry['examples'] < 8)
      assert set(entry['metrics']) == set(summary['results']['eval'])
  species = _by_field(slices, 'species')
  assert sorted(species) == [
    'species=setosa',
    'species=versicolor',
    'species=virginica',
  ]
  # The slices' losses differ, and weighted by size make the overall one.
  losses = [e['metrics']['loss'] for e in species.values()]
  assert len({round(v, 6) for v in losses}) > 1
  weighted = (
    sum(e['metrics']['loss'] * e['examples'] for e in species.values()) / total
  )
  assert weighted == pytest.approx(summary['results']['eval']['loss'], rel=1e-4)
  assert any(e['flagged'] for e in _by_field(slices, 'petal_length').values())


@pytest.mark.slow
def test_crossed_slices(trained, iris_dataset_factory):
  builder, job = _builder(
    trained, iris_dataset_factory(), '--eval-slices', 'species*petal_length'
  )
  slices = training.ModelTrainer().evaluate(builder, job)['slices']['eval']
  assert all(
    label.startswith('species=') and '*petal_length=' in label
    for label in slices
  )
  assert sum(e['examples'] for e in slices.values()) == 30
  assert len(slices) >= 3


@pytest.mark.slow
def test_slices_read_the_same_batches_as_the_target(
  trained, iris_dataset_factory
):
  builder, job = _builder(
    trained,
    iris_dataset_factory(),
    '--eval-slices',
    'species',
    '--eval-batches',
    '2',
    '--eval-batch-size',
    '7',
  )
  slices = training.ModelTrainer().evaluate(builder, job)['slices']['eval']
  # The first 2 batches of 7 records, not 2 batches of each slice.
  assert sum(e['examples'] for e in slices.values()) == 14


@pytest.mark.slow
def test_follow_a_finished_job_reports_slices(
  trained, iris_dataset_factory, capsys
):
  builder, _ = _builder(trained, iris_dataset_factory(), *_SLICES)
  state = _evaluator.follow(builder, str(trained), poll_secs=0.1)
  assert state['evaluated'] == [10, 20]
  lines = [
    json.loads(line)
    for line in capsys.readouterr().out.splitlines()
    if line.startswith('{')
  ]
  assert [line['step'] for line in lines] == [10, 20]
  for line in lines:
    species = _by_field(line['slices']['eval'], 'species')
    assert sum(e['examples'] for e in species.values()) == 30
  written = json.loads((trained / 'evaluations' / 'ckpt-10.json').read_text())
  assert set(written['slices']['eval']) == set(lines[0]['slices']['eval'])


@pytest.mark.slow
def test_a_bad_field_is_named_with_the_closest(trained, iris_dataset_factory):
  builder, job = _builder(
    trained, iris_dataset_factory(), '--eval-slices', 'specis'
  )
  with pytest.raises(
    ConfigurationError, match="'specis'.*Did you mean 'species'"
  ):
    training.ModelTrainer().evaluate(builder, job)


@pytest.mark.slow
def test_evaluate_records_slices_in_mlflow(trained, iris_dataset_factory):
  pytest.importorskip('mlflow', reason='the tracking extra is not installed')
  from mlflow.tracking import MlflowClient

  builder, job = _builder(
    trained,
    iris_dataset_factory(),
    '--eval-slices',
    'species',
    '--experiment',
    'slices',
  )
  summary = training.ModelTrainer().evaluate(builder, job)
  client = MlflowClient(tracking_uri='sqlite:///' + str(trained / 'mlruns.db'))
  experiment = client.get_experiment_by_name('slices')
  [run] = client.search_runs([experiment.experiment_id])
  metrics = run.data.metrics
  setosa = summary['slices']['eval']['species=setosa']
  # `=` is not allowed in an MLflow metric name.
  assert metrics['eval/slice/species_setosa/accuracy'] == pytest.approx(
    setosa['metrics']['accuracy']
  )
  assert metrics['eval/slice/species_setosa/examples'] == 10
  assert 'eval/accuracy' in metrics


@pytest.mark.slow
def test_the_evaluate_command_prints_the_slices(trained, iris_analysis):
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'evaluate',
      '--module',
      'trainer',
      '--output',
      str(trained),
      *iris_args(trained)[2:],
      '--data-metadata',
      iris_analysis,
      '--hidden-layers:1',
      '8',
      '--eval-slices',
      'species*petal_length',
    ],
    cwd=IRIS,
    capture_output=True,
    text=True,
    timeout=300,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  [line] = [
    json.loads(line)
    for line in result.stdout.splitlines()
    if line.startswith('{')
  ]
  slices = line['slices']['eval']
  assert all('*petal_length=' in label for label in slices)
  assert sum(e['examples'] for e in slices.values()) == 30
