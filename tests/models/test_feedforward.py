"""The ready-made feed-forward models, trained for real on iris."""

import os

import pytest

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx import training
from tensorfx.models import nn

# Regression: predict the petal width from the other measurements.
REGRESSION_FEATURES = """
features:
- name: X
  type: concat
  features:
  - name: sepal_length
    type: zscore
  - name: sepal_width
    type: zscore
  - name: petal_length
    type: zscore
  - name: species
    type: onehot
- name: Y
  type: target
  fields: petal_width
"""


def test_classification_reaches_the_accuracy_bar(iris_model):
  output, model = iris_model
  import yaml

  with open(os.path.join(output, 'job.yaml')) as f:
    job = yaml.safe_load(f)
  assert job['metrics']['accuracy'] >= 0.93
  outputs = model.predict(['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2'])
  assert [o['label'] for o in outputs] == ['virginica', 'setosa', 'versicolor']


def test_classification_names_the_classes_beside_the_scores(
  iris_model, iris_dataset_factory
):
  output, model = iris_model
  outputs = model.predict(['6.3,3.3,6,2.5', '4.4,3,1.3,0.2'])
  # The order of the analysis' vocabulary file, which readers of the
  # scores cannot guess (here not alphabetical).
  labels = nn.FeedForwardClassification(
    nn.FeedForwardClassificationArguments.parse([]), iris_dataset_factory()
  ).labels
  assert sorted(labels) == ['setosa', 'versicolor', 'virginica']
  assert labels != sorted(labels)
  for prediction in outputs:
    assert prediction['classes'] == labels
    best = max(range(3), key=lambda i: prediction['scores'][i])
    assert prediction['classes'][best] == prediction['label']
  assert [p['label'] for p in outputs] == ['virginica', 'setosa']
  # In the SavedModel's outputs too, for servers that do not use tensorfx.
  import tensorflow as tf

  loaded = tf.saved_model.load(os.path.join(output, 'model'))
  signature = loaded.signatures['serving_default']
  assert signature.structured_outputs['classes'].dtype == tf.string
  classes = signature(csv=tf.constant(['6.3,3.3,6,2.5']))['classes']
  assert [c.decode() for c in classes.numpy()[0]] == labels


@pytest.mark.slow
def test_regression_trains_and_predicts_values(tmp_path):
  features = tmp_path / 'features.yaml'
  features.write_text(REGRESSION_FEATURES)
  argv = iris_args(
    tmp_path / 'out',
    '--max-steps',
    '400',
    '--seed',
    '3',
    '--hidden-layers:1',
    '16',
    '--learning-rate',
    '0.01',
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
  import yaml

  metrics = yaml.safe_load((tmp_path / 'out' / 'job.yaml').read_text())[
    'metrics'
  ]
  # Petal width spans 0.1..2.5 with std ~0.76: a useful model is far better.
  assert metrics['rmse'] < 0.35
  [small, large] = model.predict(
    ['setosa,4.4,3,1.3,0', 'virginica,6.3,3.3,6,0']
  )
  assert small['value'] < 0.8 < 1.5 < large['value']


def test_arguments_are_validated():
  with pytest.raises(ConfigurationError, match=r'--hidden-layers:2=0'):
    nn.FeedForwardClassificationArguments.parse(
      ['--hidden-layers:1', '4', '--hidden-layers:2', '0']
    )
  with pytest.raises(ConfigurationError, match=r'--learning-rate=-1'):
    nn.FeedForwardClassificationArguments.parse(['--learning-rate', '-1'])
  args = nn.FeedForwardClassificationArguments.parse(
    ['--hidden-layers:2', '10', '--hidden-layers:1', '20']
  )
  assert args.hidden_layers == [20, 10]
