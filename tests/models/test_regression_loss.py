"""The feed-forward models and the loss flags (`--loss`, `--loss-normalization`).

The loss values themselves are pinned in tests/training/test_losses.py.
"""

import pytest
import tensorflow as tf

from tensorfx import ConfigurationError
from tensorfx.models import nn

# Errors: -1, 1, 4 against targets 2, -4, 8 (percentage: -0.5, 0.25, 0.5).
PREDICTIONS = tf.constant([1.0, -3.0, 12.0])
TARGETS = tf.constant([2.0, -4.0, 8.0])


def test_flags():
  args = nn.FeedForwardRegressionArguments.parse([])
  assert (args.loss, args.loss_normalization, args.huber_delta) == (
    None,
    'none',
    1.0,
  )
  args = nn.FeedForwardRegressionArguments.parse(
    [
      '--loss',
      'HUBER',
      '--loss-normalization',
      'percentage',
      '--huber-delta',
      '0.5',
    ]
  )
  assert (args.loss, args.loss_normalization, args.huber_delta) == (
    'huber',
    'percentage_error',
    0.5,
  )
  with pytest.raises(ConfigurationError, match='--huber-delta must be'):
    nn.FeedForwardRegressionArguments.parse(['--huber-delta', '0'])
  with pytest.raises(SystemExit):
    nn.FeedForwardRegressionArguments.parse(['--loss', 'hinge'])


class _Regression(nn.FeedForwardRegression):
  """Skips the dataset: the target is `t`."""

  @property
  def target(self):
    return type('Target', (), {'name': 't'})


@pytest.mark.parametrize(
  'flags, expected',
  [
    ([], (1 + 1 + 16) / 3),
    (
      ['--loss', 'mae', '--loss-normalization', 'percentage'],
      (0.5 + 0.25 + 0.5) / 3,
    ),
    (
      [
        '--loss-type',
        'MEAN_ABSOLUTE_ERROR',
        '--loss-normalization',
        'EXPECTED_VALUE_GREATER_THAN_ONE',
      ],
      (0.5 + 1 + 0.5) / 3,
    ),
  ],
)
def test_build_training_uses_the_flags(flags, expected):
  args = nn.FeedForwardRegressionArguments.parse(flags)
  builder = _Regression(args, dataset=None)
  loss, _ = builder.build_training(
    None, {'t': TARGETS}, PREDICTIONS[:, tf.newaxis]
  )
  assert float(loss) == pytest.approx(expected)


def test_classification_refuses_a_regression_loss():
  args = nn.FeedForwardClassificationArguments.parse(
    ['--loss', 'MEAN_ABSOLUTE_ERROR']
  )
  with pytest.raises(
    ConfigurationError,
    match='FeedForwardClassification trains on the '
    'cross-entropy.*Received: --loss=mean_absolute_error',
  ):
    nn.FeedForwardClassification(args, dataset=None)
  nn.FeedForwardClassification(
    nn.FeedForwardClassificationArguments.parse([]), dataset=None
  )
