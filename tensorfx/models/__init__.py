"""Ready-made model builders."""

from tensorfx.models import nn

__all__ = [
    'nn',
]
