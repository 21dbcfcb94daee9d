"""Prediction: load an exported model and predict raw instances."""

from tensorfx.prediction._model import Model

__all__ = [
    'Model',
]
