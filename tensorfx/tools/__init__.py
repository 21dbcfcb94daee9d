"""The `tensorfx` command line."""

from tensorfx.tools._main import main

__all__ = [
    'main',
]
