"""FeedForwardRegression's --loss and --loss-normalization on a known batch."""

import pytest
import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.models import nn
from tensorfx.models.nn import _feedforward

# Errors: -1, 1, 4 against targets 2, -4, 8 (percentage: -0.5, 0.25, 0.5).
PREDICTIONS = tf.constant([1.0, -3.0, 12.0])
TARGETS = tf.constant([2.0, -4.0, 8.0])


@pytest.mark.parametrize('loss, normalization, expected', [
    ('mse', 'none', (1 + 1 + 16) / 3),
    ('mae', 'none', (1 + 1 + 4) / 3),
    # Huber (delta 1): 0.5 e^2 inside, |e| - 0.5 outside.
    ('huber', 'none', (0.5 + 0.5 + 3.5) / 3),
    ('mse', 'percentage', (0.25 + 0.0625 + 0.25) / 3),
    ('mae', 'percentage', (0.5 + 0.25 + 0.5) / 3),
    ('huber', 'percentage', (0.125 + 0.03125 + 0.125) / 3),
])
def test_loss_values(loss, normalization, expected):
  value = _feedforward.regression_loss(PREDICTIONS, TARGETS, loss,
                                       normalization)
  assert float(value) == pytest.approx(expected)


def test_huber_delta():
  value = _feedforward.regression_loss(PREDICTIONS, TARGETS, 'huber',
                                       huber_delta=2.0)
  # 0.5 e^2 for |e| <= 2, else 2 |e| - 2.
  assert float(value) == pytest.approx((0.5 + 0.5 + 6.0) / 3)


def test_percentage_of_a_zero_target_is_finite():
  value = _feedforward.regression_loss(tf.constant([1.0]), tf.constant([0.0]),
                                       'mae', 'percentage')
  assert float(value) == pytest.approx(1e6)


def test_flags():
  args = nn.FeedForwardRegressionArguments.parse([])
  assert (args.loss, args.loss_normalization, args.huber_delta) == (
      'mse', 'none', 1.0)
  args = nn.FeedForwardRegressionArguments.parse(
      ['--loss', 'HUBER', '--loss-normalization', 'percentage',
       '--huber-delta', '0.5'])
  assert (args.loss, args.loss_normalization, args.huber_delta) == (
      'huber', 'percentage', 0.5)
  with pytest.raises(ConfigurationError, match='--huber-delta must be'):
    nn.FeedForwardRegressionArguments.parse(['--huber-delta', '0'])
  with pytest.raises(SystemExit):
    nn.FeedForwardRegressionArguments.parse(['--loss', 'hinge'])


class _Regression(nn.FeedForwardRegression):
  """Skips the dataset: the target is `t`."""

  @property
  def target(self):
    return type('Target', (), {'name': 't'})


@pytest.mark.parametrize('flags, expected', [
    ([], (1 + 1 + 16) / 3),
    (['--loss', 'mae', '--loss-normalization', 'percentage'],
     (0.5 + 0.25 + 0.5) / 3),
])
def test_build_training_uses_the_flags(flags, expected):
  args = nn.FeedForwardRegressionArguments.parse(flags)
  builder = _Regression(args, dataset=None)
  loss, _ = builder.build_training(None, {'t': TARGETS},
                                   PREDICTIONS[:, tf.newaxis])
  assert float(loss) == pytest.approx(expected)
