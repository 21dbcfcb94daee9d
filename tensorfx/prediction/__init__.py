"""Prediction: load an exported model and predict raw instances."""

from tensorfx.prediction._batch import PredictionSummary
from tensorfx.prediction._batch import predict_files
from tensorfx.prediction._beam import predict_beam
from tensorfx.prediction._model import Model

__all__ = [
  'Model',
  'PredictionSummary',
  'predict_beam',
  'predict_files',
]
