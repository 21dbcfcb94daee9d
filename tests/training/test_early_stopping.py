"""Early stopping: a run that overfits stops, and its best model is exported."""

import csv
import os
import random

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from conftest import IRIS_INSTANCES
from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from test_trainer import _scalars

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_early_stopping')


@pytest.fixture(scope='module')
def noisy_train(tmp_path_factory):
  """Iris training rows with their labels shuffled: memorized, not learned."""
  with open(os.path.join(IRIS, 'data', 'train.csv')) as f:
    rows = list(csv.reader(f))
  # The species is the first column.
  labels = [row[0] for row in rows]
  random.Random(0).shuffle(labels)
  path = tmp_path_factory.mktemp('noisy') / 'train.csv'
  with open(path, 'w', newline='') as f:
    csv.writer(f).writerows(
      [label] + row[1:] for row, label in zip(rows, labels)
    )
  return str(path)


def _builder(output, dataset, *extra):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output,
      '--hidden-layers',
      '64',
      '64',
      '--learning-rate',
      '0.03',
      '--batch-size',
      '32',
      '--seed',
      '3',
      '--max-steps',
      '3000',
      '--eval-interval-steps',
      '50',
      '--log-interval-steps',
      '50',
      *extra,
    ),
    parse_job=True,
  )
  return nn.FeedForwardClassification(args, dataset), job


@pytest.mark.release
@pytest.mark.slow
def test_an_overfitting_run_stops_and_exports_its_best_model(
  tmp_path, iris_dataset_factory, noisy_train
):
  dataset = iris_dataset_factory(
    train=noisy_train, eval=os.path.join(IRIS, 'data', 'eval.csv')
  )
  builder, job = _builder(
    tmp_path / 'job',
    dataset,
    '--best-metric',
    'loss',
    '--early-stopping-patience',
    '3',
    '--export-versioned',
  )
  model = training.ModelTrainer().train(builder, job)
  record = yaml.safe_load((tmp_path / 'job' / 'job.yaml').read_text())
  assert record['status'] == 'completed'
  assert record['stopped'].startswith(
    'early stopping: loss has not improved for 3 validations'
  )
  final = record['global_step']
  assert final < 3000
  losses = dict(_scalars(str(tmp_path / 'job' / 'summaries' / 'eval'))['loss'])
  best_step = min(losses, key=losses.get)
  # Three validations after the best one, none better: then it stopped.
  assert final == best_step + 3 * 50
  assert all(losses[s] >= losses[best_step] for s in losses)
  # The best state is kept, and is what was exported.
  snapshot = tf.train.latest_checkpoint(
    str(tmp_path / 'job' / 'checkpoints' / 'early_stopping')
  )
  assert snapshot.endswith(f'ckpt-{best_step}')
  # Its version is named after the step of its weights, not the last step.
  assert os.listdir(tmp_path / 'job' / 'model') == [str(best_step)]
  args, _ = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path / 'job', '--hidden-layers', '64', '64'), parse_job=True
  )
  best = training.ModelTrainer().export(
    nn.FeedForwardClassification(args, iris_dataset_factory()),
    str(tmp_path / 'job'),
    snapshot,
    str(tmp_path / 'best'),
  )
  lines = IRIS_INSTANCES
  exported = [p['scores'] for p in model.predict(lines)]
  expected = [p['scores'] for p in best.predict(lines)]
  np.testing.assert_allclose(exported, expected, rtol=1e-6)
  # The resume point is the last state, not the best.
  assert tf.train.latest_checkpoint(
    str(tmp_path / 'job' / 'checkpoints')
  ).endswith(f'ckpt-{final}')


@pytest.mark.release
@pytest.mark.slow
def test_early_stopping_on_a_metric_of_another_target(
  tmp_path, iris_dataset_factory, noisy_train
):
  dataset = iris_dataset_factory(
    train=noisy_train, eval=os.path.join(IRIS, 'data', 'eval.csv')
  )
  builder, job = _builder(
    tmp_path,
    dataset,
    '--eval-target',
    'holdout',
    f'data={os.path.join(IRIS, "data", "eval.csv")}',
    'batches=1',
    'batch_size=10',
  )
  stop = training.EarlyStopping(metric='holdout/accuracy', patience=2)
  training.ModelTrainer(callbacks=[stop]).train(builder, job)
  accuracies = dict(
    _scalars(str(tmp_path / 'summaries' / 'eval_holdout'))['accuracy']
  )
  assert stop.stopped
  assert stop.best == max(accuracies.values())
  assert accuracies[stop.best_step] == stop.best


@pytest.mark.parametrize(
  'kwargs, message',
  [
    (
      {'patience': 0},
      'patience must be a positive integer. Received: patience=0',
    ),
    (
      {'min_delta': -1},
      r'min_delta must be a number >= 0. Received: '
      r'min_delta=-1',
    ),
    (
      {'metric': 3},
      r'metric must be "\[TARGET/\]NAME\[:min\|max\]" or '
      'None. Received: metric=3',
    ),
  ],
)
def test_early_stopping_arguments_are_checked(kwargs, message):
  with pytest.raises(ValueError, match=message):
    training.EarlyStopping(**kwargs)


def test_patience_flag_is_checked():
  with pytest.raises(
    ConfigurationError,
    match='--early-stopping-patience must be a positive '
    'integer. Received: --early-stopping-patience=0',
  ):
    training.ModelArguments.parse(['--early-stopping-patience', '0'])
