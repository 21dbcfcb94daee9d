"""The `tensorfx` command line (and the original tensorfx's `tfx` tool)."""

from tensorfx.tools import tfx
from tensorfx.tools._main import main

__all__ = [
  'main',
  'tfx',
]
