"""Logging settings: how much tensorfx and TensorFlow say."""

import dataclasses

from tensorfx.training._settings import _section

LEVELS = ('debug', 'info', 'warning', 'error')


@dataclasses.dataclass(frozen=True)
class LoggingSettings(_section.Section):
  """How much is logged.

  Attributes:
    level: the level of tensorfx's own logs (`--log-level`).
    tensorflow_level: the level of TensorFlow's logs
      (`--log-level-tensorflow`).
  """

  # Lower-cased first so that --log-level INFO is accepted too; argparse's
  # choices check the levels.
  level: str = _section.setting(
    '--log-level',
    group='logging',
    type=str.lower,
    choices=LEVELS,
    default='info',
    help='the level of tensorfx logs (default: %(default)s)',
  )
  tensorflow_level: str = _section.setting(
    '--log-level-tensorflow',
    group='logging',
    type=str.lower,
    choices=LEVELS,
    default='warning',
    help='the level of TensorFlow logs (default: %(default)s)',
  )
