"""Ready-made model builders."""

from tensorfx.models import nn
from tensorfx.models._keras import KerasModelBuilder

__all__ = [
  'KerasModelBuilder',
  'nn',
]
