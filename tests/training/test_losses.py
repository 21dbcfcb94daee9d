"""regression_loss: Gematria's loss types and error normalizations.

Gematria normalizes the absolute error |prediction - expected| by the
expected value (PERCENTAGE_ERROR) or by max(expected, 1)
(EXPECTED_VALUE_GREATER_THAN_ONE), then squares it, takes it as is or
through the Huber function (delta 1), and averages.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx import training
from tensorfx.training import regression_loss
from tensorfx.training._settings import Settings

# Errors -1, 1, 4, 0.25 against targets 2, -4, 8, 0.25.
PREDICTIONS = tf.constant([1.0, -3.0, 12.0, 0.5])
TARGETS = tf.constant([2.0, -4.0, 8.0, 0.25])
# Normalized errors:
#   percentage_error (by |target|):        -0.5, 0.25, 0.5, 1.0
#   expected_value_greater_than_one
#     (by max(target, 1): 2, 1, 8, 1):     -0.5, 1.0, 0.5, 0.25
NORMALIZED = {
  'none': [-1.0, 1.0, 4.0, 0.25],
  'percentage_error': [-0.5, 0.25, 0.5, 1.0],
  'expected_value_greater_than_one': [-0.5, 1.0, 0.5, 0.25],
}


def _huber(error, delta=1.0):
  error = abs(error)
  return 0.5 * error**2 if error <= delta else delta * (error - 0.5 * delta)


EXPECTED = {
  (loss, normalization): np.mean([function(e) for e in errors])
  for normalization, errors in NORMALIZED.items()
  for loss, function in (
    ('mean_squared_error', lambda e: e * e),
    ('mean_absolute_error', abs),
    ('huber', _huber),
  )
}


@pytest.mark.parametrize('loss, normalization', sorted(EXPECTED))
def test_each_loss_and_normalization(loss, normalization):
  value = regression_loss(PREDICTIONS, TARGETS, loss, normalization)
  assert float(value) == pytest.approx(EXPECTED[loss, normalization])


def test_the_values_written_out():
  # The table above, by hand, for three of the nine.
  assert float(regression_loss(PREDICTIONS, TARGETS)) == pytest.approx(
    (1 + 1 + 16 + 0.0625) / 4
  )
  assert float(
    regression_loss(
      PREDICTIONS, TARGETS, 'mean_absolute_error', 'percentage_error'
    )
  ) == pytest.approx((0.5 + 0.25 + 0.5 + 1.0) / 4)
  # A negative target leaves the error as is (max(-4, 1) = 1).
  assert float(
    regression_loss(
      PREDICTIONS, TARGETS, 'huber', 'expected_value_greater_than_one'
    )
  ) == pytest.approx((0.125 + 0.5 + 0.125 + 0.03125) / 4)


def test_gematria_spellings_and_short_names():
  gematria = regression_loss(
    PREDICTIONS, TARGETS, 'MEAN_ABSOLUTE_ERROR', 'PERCENTAGE_ERROR'
  )
  short = regression_loss(PREDICTIONS, TARGETS, 'mae', 'percentage')
  assert (
    float(gematria)
    == float(short)
    == pytest.approx(EXPECTED['mean_absolute_error', 'percentage_error'])
  )
  assert float(
    regression_loss(PREDICTIONS, TARGETS, 'HUBER', 'NONE')
  ) == pytest.approx(EXPECTED['huber', 'none'])


def test_percentage_error_matches_gematria_on_positive_targets():
  rng = np.random.default_rng(0)
  expected = rng.uniform(0.5, 50.0, 64).astype(np.float32)
  output = expected * rng.uniform(0.5, 1.5, 64).astype(np.float32)
  # Gematria: the absolute error divided by the expected value.
  normalized = np.abs(output - expected) / expected
  assert float(
    regression_loss(output, expected, 'mean_squared_error', 'PERCENTAGE_ERROR')
  ) == pytest.approx(np.mean(normalized**2), rel=1e-5)
  greater = np.abs(output - expected) / np.maximum(expected, 1.0)
  assert float(
    regression_loss(
      output, expected, 'mean_absolute_error', 'EXPECTED_VALUE_GREATER_THAN_ONE'
    )
  ) == pytest.approx(np.mean(greater), rel=1e-5)


def test_a_zero_target_gives_a_finite_percentage_error():
  value = regression_loss(
    tf.constant([1.0]),
    tf.constant([0.0]),
    'mean_absolute_error',
    'percentage_error',
  )
  assert float(value) == pytest.approx(1e6)


def test_huber_delta():
  value = regression_loss(PREDICTIONS, TARGETS, 'huber', huber_delta=2.0)
  assert float(value) == pytest.approx(
    np.mean([_huber(e, 2.0) for e in NORMALIZED['none']])
  )


def test_weights_leave_examples_out():
  value = regression_loss(
    PREDICTIONS, TARGETS, 'mean_absolute_error', weights=[1.0, 1.0, 0.0, 1.0]
  )
  assert float(value) == pytest.approx((1 + 1 + 0.25) / 3)
  none = regression_loss(PREDICTIONS, TARGETS, weights=tf.zeros([4]))
  assert float(none) == 0.0


def test_a_trailing_dimension_of_one_is_squeezed():
  value = regression_loss(
    PREDICTIONS[:, tf.newaxis], TARGETS, 'mean_absolute_error'
  )
  assert float(value) == pytest.approx(EXPECTED['mean_absolute_error', 'none'])
  with pytest.raises(
    ConfigurationError,
    match=r"Expected targets of the predictions' shape "
    r'\(4,\)\. Received: targets.shape=\(3,\)',
  ):
    regression_loss(PREDICTIONS, TARGETS[:3])


@pytest.mark.parametrize(
  'kwargs, message',
  [
    (
      {'loss': 'hinge'},
      'loss must be one of mean_squared_error, '
      "mean_absolute_error, huber .*Received: loss='hinge'",
    ),
    (
      {'normalization': 'log'},
      'normalization must be one of none, '
      'percentage_error, expected_value_greater_than_one .*Received: '
      "normalization='log'",
    ),
    (
      {'loss': 'huber', 'huber_delta': 0},
      'huber_delta must be a positive number. Received: huber_delta=0',
    ),
  ],
)
def test_bad_arguments(kwargs, message):
  with pytest.raises(ConfigurationError, match=message):
    regression_loss(PREDICTIONS, TARGETS, **kwargs)


def test_flags_of_every_trainer():
  settings = Settings.from_args(training.ModelArguments.parse([]))
  assert (
    settings.loss.type,
    settings.loss.normalization,
    settings.loss.huber_delta,
  ) == (None, 'none', 1.0)
  args = training.ModelArguments.parse(
    [
      '--loss-type',
      'MEAN_ABSOLUTE_ERROR',
      '--loss-normalization',
      'EXPECTED_VALUE_GREATER_THAN_ONE',
      '--huber-delta',
      '0.5',
    ]
  )
  loss = Settings.from_args(args).loss
  assert (loss.type, loss.normalization, loss.huber_delta) == (
    'mean_absolute_error',
    'expected_value_greater_than_one',
    0.5,
  )
  assert (args.loss, args.to_dict()['loss']) == ('mean_absolute_error',) * 2
  with pytest.raises(ConfigurationError, match='--huber-delta must be'):
    training.ModelArguments.parse(['--huber-delta', '0'])
  with pytest.raises(SystemExit):
    training.ModelArguments.parse(['--loss', 'hinge'])


def test_settings_give_the_loss_and_arguments_override_them():
  settings = Settings.from_args(
    training.ModelArguments.parse(
      [
        '--loss',
        'huber',
        '--loss-normalization',
        'percentage',
        '--huber-delta',
        '2',
      ]
    )
  ).loss
  assert float(
    regression_loss(PREDICTIONS, TARGETS, settings)
  ) == pytest.approx(
    np.mean([_huber(e, 2.0) for e in NORMALIZED['percentage_error']])
  )
  assert float(
    regression_loss(
      PREDICTIONS, TARGETS, settings, normalization='none', huber_delta=1.0
    )
  ) == pytest.approx(EXPECTED['huber', 'none'])
  # No --loss: mean squared error.
  default = Settings.from_args(training.ModelArguments.parse([])).loss
  assert float(regression_loss(PREDICTIONS, TARGETS, default)) == pytest.approx(
    EXPECTED['mean_squared_error', 'none']
  )


# A custom builder's build_training takes the job's loss from its settings.

PETAL_WIDTH = """
features:
- name: X
  type: concat
  features:
  - name: sepal_length
    type: zscore
  - name: petal_length
    type: zscore
- name: Y
  type: target
  fields: petal_width
"""


class _Linear(training.ModelBuilder):
  """Petal width from two measurements, with the job's loss."""

  def build_inference(self, inputs, training):
    del training
    if not hasattr(self, 'dense'):
      self.dense = tf_keras.layers.Dense(1)
    return self.dense(inputs['X'])[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    del global_steps
    return (
      regression_loss(inferences, inputs['Y'], self.settings.loss),
      self.optimizer,
    )

  def build_output(self, inferences):
    return {'value': inferences}


def test_a_custom_build_training_uses_the_loss_flags(tmp_path):
  features = tmp_path / 'features.yaml'
  features.write_text(PETAL_WIDTH)
  argv = iris_args(
    tmp_path / 'out',
    '--max-steps',
    '200',
    '--seed',
    '1',
    '--learning-rate',
    '0.05',
    '--loss',
    'MEAN_ABSOLUTE_ERROR',
    '--loss-normalization',
    'PERCENTAGE_ERROR',
  )
  argv[argv.index('--data-features') + 1] = str(features)
  args, job = training.ModelArguments.parse(argv, parse_job=True)
  dataset = data.CsvDataSet(
    args.data_schema,
    train=args.data_train,
    eval=args.data_eval,
    features=args.data_features,
  )
  model = training.ModelTrainer().train(_Linear(args, dataset), job)
  metrics = yaml.safe_load((tmp_path / 'out' / 'job.yaml').read_text())[
    'metrics'
  ]
  # The evaluation loss is the mean absolute percentage error of the
  # exported model's predictions on the eval data.
  with open(args.data_eval[0]) as f:
    lines = [line.strip() for line in f if line.strip()]
  widths = np.array([float(line.split(',')[4]) for line in lines])
  values = np.array([o['value'] for o in model.predict(lines)])
  assert metrics['loss'] == pytest.approx(
    np.mean(np.abs(values - widths) / widths), rel=1e-4
  )
  assert metrics['loss'] < 0.5
  assert os.path.exists(tmp_path / 'out' / 'model' / 'saved_model.pb')
