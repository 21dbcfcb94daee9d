"""Feed-forward neural network models."""

from tensorfx.models.nn._feedforward import FeedForwardClassification
from tensorfx.models.nn._feedforward import FeedForwardClassificationArguments
from tensorfx.models.nn._feedforward import FeedForwardRegression
from tensorfx.models.nn._feedforward import FeedForwardRegressionArguments

__all__ = [
  'FeedForwardClassification',
  'FeedForwardClassificationArguments',
  'FeedForwardRegression',
  'FeedForwardRegressionArguments',
]
