"""Multi-task regression: per-task losses summed, metrics per task.

A feed-forward regression with two targets trains for real on iris (the
petal's width and length): one output per task in the exported model,
metrics per task in job.yaml and TensorBoard, the model reloaded and called.
"""

import glob
import math
import os

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._settings import TaskSettings

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_tasks')

NAN = float('nan')

TWO_TARGETS = """
features:
- name: X
  type: concat
  features:
  - name: sepal_length
    type: zscore
  - name: sepal_width
    type: zscore
  - name: species
    type: onehot
- name: width
  type: target
  fields: petal_width
- name: length
  type: target
  fields: petal_length
"""


def test_task_loss_sums_each_tasks_mean_over_its_known_targets():
  predictions = tf.constant([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
  targets = tf.constant([[2.0, NAN], [3.0, 12.0], [1.0, 20.0]])
  loss = training.task_loss(predictions, targets, 'mean_absolute_error')
  # Task 0: (1 + 0 + 4) / 3; task 1, without its missing target: (2 + 10) / 2.
  assert float(loss) == pytest.approx(5 / 3 + 6)
  weighted = training.task_loss(
    predictions,
    targets,
    'mean_absolute_error',
    weights=tf.constant([1.0, 1.0, 0.0]),
  )
  assert float(weighted) == pytest.approx(1 / 2 + 2)
  with pytest.raises(ConfigurationError, match='same shape'):
    training.task_loss(predictions, targets[:, :1], 'mse')


def test_task_metrics_are_per_task_and_skip_missing_targets():
  metrics = training.TaskMetrics(['hsw', 'skl'], ranks=[50])
  results = metrics.update(
    tf.constant([[2.0, NAN], [4.0, 10.0]]),
    tf.constant([[3.0, 99.0], [4.0, 12.0]]),
  )
  values = {name: float(metric.result()) for name, metric in results.items()}
  assert values['mae_hsw'] == pytest.approx(0.5)
  assert values['mae_skl'] == pytest.approx(2.0)  # 99 has no target.
  assert values['mape_skl'] == pytest.approx(20.0)
  assert values['mae'] == pytest.approx((1 + 0 + 2) / 3)
  assert values['abs_error_p50_skl'] == pytest.approx(2.0, rel=0.02)
  assert values['rel_error_p50_skl'] == pytest.approx(0.2, rel=0.02)
  assert all(math.isfinite(v) for v in values.values())


def test_task_names_are_checked():
  assert TaskSettings().named(['a', 'b']) == ('a', 'b')
  with pytest.raises(
    ConfigurationError,
    match=r'one task per target feature \(a, b\). '
    'Received: --task-names x',
  ):
    TaskSettings(names=('x',)).named(['a', 'b'])
  with pytest.raises(
    ConfigurationError,
    match='as many tasks as --task-sources has sources. Received: 1 names',
  ):
    nn.FeedForwardRegressionArguments.parse(
      ['--task-names', 'hsw', '--task-sources', 'a', 'b']
    )
  with pytest.raises(
    ConfigurationError,
    match='--task-sources gives 2 '
    r'tasks, but the feature set has 1 target feature\(s\) '
    r'\(y\)',
  ):
    TaskSettings(sources=('a', 'b')).named(['y'])
  with pytest.raises(ConfigurationError, match='A task name must start'):
    nn.FeedForwardRegressionArguments.parse(['--task-names', 'a b'])


@pytest.fixture(scope='module')
def two_tasks(tmp_path_factory):
  work = tmp_path_factory.mktemp('tasks')
  features = work / 'features.yaml'
  features.write_text(TWO_TARGETS)
  argv = iris_args(
    work / 'out',
    '--max-steps',
    '300',
    '--seed',
    '3',
    '--hidden-layers:1',
    '16',
    '--learning-rate',
    '0.01',
    '--task-names',
    'w',
    'len',
    '--percentile-ranks',
    '50',
    '90',
  )
  argv[argv.index('--data-features') + 1] = str(features)
  args, job = nn.FeedForwardRegressionArguments.parse(argv, parse_job=True)
  dataset = data.CsvDataSet(
    args.data_schema,
    train=args.data_train,
    eval=args.data_eval,
    features=args.data_features,
  )
  model = training.ModelTrainer().train(
    nn.FeedForwardRegression(args, dataset), job
  )
  return work / 'out', model


@pytest.mark.slow
def test_each_task_has_its_metrics_in_job_yaml_and_tensorboard(two_tasks):
  output, _ = two_tasks
  metrics = yaml.safe_load((output / 'job.yaml').read_text())['metrics']
  for task in ('w', 'len'):
    for name in ('rmse', 'mae', 'mape', 'abs_error_p50', 'rel_error_p90'):
      assert math.isfinite(metrics[f'{name}_{task}']), (name, task)
  # Petal width (std ~0.76) and length (std ~1.76), far better than that.
  assert metrics['rmse_w'] < 0.4 and metrics['rmse_len'] < 0.9
  tags = set()
  for path in glob.glob(str(output / 'summaries' / 'eval' / 'events.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  assert {'mape_w', 'mape_len', 'abs_error_p90_len', 'loss'} <= tags


@pytest.mark.slow
def test_the_exported_model_has_one_output_per_task(two_tasks):
  output, model = two_tasks
  [small, large] = model.predict(
    ['setosa,4.4,3,1.3,0.2', 'virginica,6.3,3.3,6,2.5']
  )
  assert 'value' not in small
  assert small['value_w'] < 0.8 < 1.5 < large['value_w']
  assert small['value_len'] < 3 < 4.5 < large['value_len']
  # Reloaded as a plain SavedModel and called.
  loaded = tf.saved_model.load(os.path.join(output, 'model'))
  outputs = loaded.signatures['serving_default'](
    csv=tf.constant(['virginica,6.3,3.3,6,2.5'])
  )
  assert {'value_w', 'value_len'} <= set(outputs)
  assert np.isclose(
    float(outputs['value_len'][0]), large['value_len'], rtol=1e-4
  )
