"""Class and example weights change what a skewed data set learns.

The data: 9 of 10 examples are of class `a`, and the feature says nothing
of the class, so an unweighted model learns the prior (P(b) near 0.1).
Weighing `b` 9 times (`--class-weight balanced`, `--class-weight '{b:
9}'`, or a `weight` feature of 9 on `b` rows) makes the classes count
alike: P(b) near 0.5. The ready-made model and a Keras model alike.
"""

import numpy as np
import pytest
import tf_keras

from tensorfx import ConfigurationError
from tensorfx import DataError
from tensorfx import data
from tensorfx import training
from tensorfx.models import KerasModelBuilder
from tensorfx.models import nn
from tensorfx.training._settings.weights import parse_class_weight

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_weights')

SCHEMA = """
fields:
- name: label
  type: discrete
- name: x
  type: real
- name: w
  type: real
"""

FEATURES = """
features:
- name: X
  type: zscore
  fields: x
- name: W
  type: weight
  fields: w
- name: Y
  type: target
  fields: label
"""

# Serving lines: x only (the label and the weight are optional).
PROBES = ['-1.5', '-0.5', '0', '0.5', '1.5']


class Logistic(KerasModelBuilder):
  """A Keras logistic regression: one sigmoid unit for two classes."""

  def build_model(self, inputs):
    p = tf_keras.layers.Dense(1, activation='sigmoid')(inputs['X'])
    model = tf_keras.Model(inputs, p)
    model.compile(
      optimizer=tf_keras.optimizers.Adam(0.05),
      loss='binary_crossentropy',
      metrics=['accuracy'],
    )
    return model


@pytest.fixture(scope='module')
def skewed(tmp_path_factory):
  """The skewed data (plain and weighted) and one analysis of it."""
  root = tmp_path_factory.mktemp('skewed')
  random = np.random.default_rng(0)
  labels = ['b' if i % 10 == 0 else 'a' for i in range(300)]
  xs = random.normal(size=len(labels))
  for name, weight_b in (('plain.csv', 1), ('weighted.csv', 9)):
    (root / name).write_text(
      ''.join(
        f'{label},{x:.4f},{weight_b if label == "b" else 1}\n'
        for label, x in zip(labels, xs)
      )
    )
  (root / 'schema.yaml').write_text(SCHEMA)
  (root / 'features.yaml').write_text(FEATURES)
  data.CsvDataSet(
    str(root / 'schema.yaml'),
    features=str(root / 'features.yaml'),
    train=str(root / 'plain.csv'),
  ).analyze(str(root / 'analysis'))
  return root


def _dataset(root, train):
  return data.CsvDataSet(
    str(root / 'schema.yaml'),
    features=str(root / 'features.yaml'),
    metadata=str(root / 'analysis'),
    train=str(root / train),
  )


def _p_b(root, builder_class, args_class, train, *flags):
  """The mean predicted probability of `b` after training."""
  output = root / f'{builder_class.__name__}-{train}-{len(flags)}'
  args, job = args_class.parse(
    [
      '--output',
      str(output),
      '--max-steps',
      '300',
      '--batch-size',
      '50',
      '--seed',
      '1',
      '--learning-rate',
      '0.05',
      *flags,
    ],
    parse_job=True,
  )
  model = training.ModelTrainer().train(
    builder_class(args, _dataset(root, train)), job
  )
  predictions = model.predict(PROBES)
  assert {
    p['classes'][int(np.argmax(p['scores']))] == p['label'] for p in predictions
  } == {True}
  return float(
    np.mean([p['scores'][p['classes'].index('b')] for p in predictions])
  )


@pytest.mark.slow
def test_class_and_example_weights_lift_the_rare_class(skewed):
  ready = (nn.FeedForwardClassification, nn.FeedForwardClassificationArguments)
  keras = (Logistic, training.ModelArguments)
  plain = _p_b(skewed, *ready, 'plain.csv')
  assert plain < 0.2
  # Each weighting, alone, brings b to about even.
  for p in (
    _p_b(skewed, *ready, 'plain.csv', '--class-weight', 'balanced'),
    _p_b(skewed, *ready, 'weighted.csv'),
    _p_b(skewed, *keras, 'plain.csv', '--class-weight', '{b: 9}'),
    _p_b(skewed, *keras, 'weighted.csv'),
  ):
    assert 0.35 < p < 0.65, (plain, p)


@pytest.mark.slow
def test_class_weights_are_read_from_the_analysis(skewed):
  args = nn.FeedForwardClassificationArguments.parse(
    ['--class-weight', 'balanced']
  )
  builder = nn.FeedForwardClassification(args, _dataset(skewed, 'plain.csv'))
  labels = builder.labels
  weights = dict(zip(labels, training.class_weights(builder)))
  # 270 a and 30 b: n / (2 * count).
  assert weights == pytest.approx({'a': 300 / 540, 'b': 300 / 60})
  args = nn.FeedForwardClassificationArguments.parse(
    ['--class-weight', '{c: 2}']
  )
  builder = nn.FeedForwardClassification(args, _dataset(skewed, 'plain.csv'))
  with pytest.raises(
    ConfigurationError, match="'c' is not a class of the target 'Y'"
  ):
    training.class_weights(builder)


@pytest.mark.parametrize(
  'text, message',
  [
    ('heavy', "must be 'balanced' or a mapping"),
    ('{a: -1}', "the weight of class 'a' must be a number >= 0"),
    ('{a: many}', "the weight of class 'a' must be a number >= 0"),
  ],
)
def test_a_bad_class_weight_is_named(text, message):
  with pytest.raises(ConfigurationError, match=message):
    training.ModelArguments.parse(['--class-weight', text])


def test_class_weight_mappings_take_labels_and_indices():
  assert parse_class_weight('{b: 9, 0: 0.5}') == (('b', 9.0), (0, 0.5))
  assert parse_class_weight('BALANCED') == 'balanced'
  assert training.ModelArguments.parse([]).class_weight is None


def test_a_weight_feature_reads_one_number_per_example():
  schema = data.Schema.parse(SCHEMA)
  features = data.FeatureSet.parse(
    FEATURES.replace('fields: w', 'fields: label')
  )
  with pytest.raises(DataError, match='a weight feature needs a numeric field'):
    features.validate(schema)
  assert data.FeatureSet.parse(FEATURES).weight.fields == ('w',)
