"""Logging settings: how much tensorfx and TensorFlow say."""

import argparse
import dataclasses
from typing import Any, Self

from tensorfx.training._settings import _section

LEVELS = ('debug', 'info', 'warning', 'error')


def add_arguments(parser: argparse.ArgumentParser) -> None:
  logging = _section.group(parser, 'logging')
  # Lower-cased first so that --log-level INFO is accepted too.
  logging.add_argument(
    '--log-level',
    type=str.lower,
    choices=LEVELS,
    default='info',
    help='the level of tensorfx logs (default: %(default)s)',
  )
  logging.add_argument(
    '--log-level-tensorflow',
    type=str.lower,
    choices=LEVELS,
    default='warning',
    help='the level of TensorFlow logs (default: %(default)s)',
  )


def check(args: Any) -> None:
  del args  # argparse's choices check the levels.


@dataclasses.dataclass(frozen=True)
class LoggingSettings:
  """How much is logged.

  Attributes:
    level: the level of tensorfx's own logs (`--log-level`).
    tensorflow_level: the level of TensorFlow's logs
      (`--log-level-tensorflow`).
  """

  level: str = 'info'
  tensorflow_level: str = 'warning'

  @classmethod
  def from_args(cls, args: Any) -> Self:
    return cls(
      level=_section.read(args, 'log_level', 'info'),
      tensorflow_level=_section.read(args, 'log_level_tensorflow', 'warning'),
    )
