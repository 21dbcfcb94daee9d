"""Restore settings: warm-starting a fresh model from another checkpoint."""

import argparse
import dataclasses
from typing import Mapping, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.training import _listflags
from tensorfx.training import _restore
from tensorfx.training._settings import _section


def add_arguments(parser):
  load = _section.group(parser, 'restore')
  load.add_argument('--warm-start', metavar='PATH',
                    help='initialize a fresh job from this checkpoint (a '
                    'prefix, a directory, or another job\'s output), by '
                    'variable name; a job resuming its own checkpoint '
                    'ignores it')
  load.add_argument('--restore-pattern', metavar='REGEX',
                    help='warm-start only the variables whose names match '
                    '(re.search); the others keep their initial values')
  _listflags.add_list_argument(
      load, '--restore-rename', metavar='CKPT=MODEL',
      help='warm-start the model variable MODEL from the checkpoint '
      'variable CKPT')
  load.add_argument('--restore-global-step',
                    action=argparse.BooleanOptionalAction, default=False,
                    help='warm-start the global step too (default: off, '
                    'start at step 0)')


def check(args):
  _restore.compile_pattern(_section.read(args, 'restore_pattern'))
  _restore.parse_rename(_section.read(args, 'restore_rename'))
  if not _section.read(args, 'warm_start'):
    for dest in ('restore_pattern', 'restore_rename'):
      if _section.read(args, dest):
        flag = _section.flag(dest)
        raise ConfigurationError(
            f'{flag} applies to --warm-start PATH. Received: {flag} without '
            '--warm-start')


@dataclasses.dataclass(frozen=True)
class RestoreSettings:
  """How a fresh (not resumed) model is initialized from a checkpoint.

  Attributes:
    warm_start: a checkpoint prefix, directory or job output
      (`--warm-start`); None for the initializers' values.
    pattern: a regex of the variables warm-started (`--restore-pattern`).
    rename: checkpoint variable name -> model variable name
      (`--restore-rename`).
    global_step: whether the global step is warm-started too
      (`--restore-global-step`).
  """
  warm_start: Optional[str] = None
  pattern: Optional[str] = None
  rename: Mapping[str, str] = dataclasses.field(default_factory=dict)
  global_step: bool = False

  @classmethod
  def from_args(cls, args):
    read = _section.read
    return cls(warm_start=read(args, 'warm_start') or None,
               pattern=read(args, 'restore_pattern') or None,
               rename=_restore.parse_rename(read(args, 'restore_rename')),
               global_step=bool(read(args, 'restore_global_step', False)))
