"""Restore settings: what a run starts from.

Its own latest checkpoint (the default), a checkpoint named with
`--resume-from`, nothing (`--no-resume`), or a warm start of a fresh model
from another checkpoint (`--warm-start`).
"""

import argparse
import dataclasses
from typing import Any, Mapping, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._arguments import listflags as _listflags
from tensorfx.training._checkpoints import restore as _restore
from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  load = _section.group(parser, 'restore')
  load.add_argument(
    '--resume-from',
    metavar='PATH',
    help='resume from this checkpoint (a prefix such as '
    'OUTPUT/checkpoints/ckpt-200, or a directory: its '
    'latest) with its optimizer state and global step, '
    "instead of the output's latest; applied once per "
    'output: a restarted job resumes its own latest '
    'checkpoint (default: the latest in OUTPUT/checkpoints)',
  )
  load.add_argument(
    '--resume',
    action=argparse.BooleanOptionalAction,
    default=True,
    help="resume from the output's latest checkpoint; "
    '--no-resume starts afresh and moves the checkpoints '
    'and summaries already there aside, to '
    'checkpoints.old-TIMESTAMP and summaries.old-TIMESTAMP '
    '(default: on)',
  )
  load.add_argument(
    '--warm-start',
    metavar='PATH',
    help='initialize a fresh job from this checkpoint (a '
    "prefix, a directory, or another job's output), by "
    'variable name; a job resuming its own checkpoint '
    'ignores it',
  )
  load.add_argument(
    '--restore-pattern',
    metavar='REGEX',
    help='warm-start only the variables whose names match '
    '(re.search); the others keep their initial values',
  )
  _listflags.add_list_argument(
    load,
    '--restore-rename',
    metavar='CKPT=MODEL',
    help='warm-start the model variable MODEL from the checkpoint '
    'variable CKPT',
  )
  load.add_argument(
    '--restore-global-step',
    action=argparse.BooleanOptionalAction,
    default=False,
    help='warm-start the global step too (default: off, start at step 0)',
  )


def check(args: Any) -> None:
  resume_from = _section.read(args, 'resume_from')
  if resume_from and not _section.read(args, 'resume', True):
    raise ConfigurationError(
      '--resume-from PATH and --no-resume contradict each other: '
      "--resume-from already leaves the output's latest checkpoint "
      f'aside. Received: --resume-from={resume_from} --no-resume'
    )
  if resume_from and _section.read(args, 'warm_start'):
    raise ConfigurationError(
      '--resume-from resumes a checkpoint with its optimizer state; '
      '--warm-start initializes a fresh model from one: use one of them. '
      f'Received: --resume-from={resume_from} --warm-start='
      f'{_section.read(args, "warm_start")}'
    )
  _restore.compile_pattern(_section.read(args, 'restore_pattern'))
  _restore.parse_rename(_section.read(args, 'restore_rename'))
  if not _section.read(args, 'warm_start'):
    for dest in ('restore_pattern', 'restore_rename'):
      if _section.read(args, dest):
        flag = _section.flag(dest)
        raise ConfigurationError(
          f'{flag} applies to --warm-start PATH. Received: {flag} without '
          '--warm-start'
        )


@dataclasses.dataclass(frozen=True)
class RestoreSettings:
  """What a run starts from: a checkpoint resumed, or a fresh model.

  Attributes:
    resume: whether the run resumes the output's latest checkpoint
      (`--resume`, default); False (`--no-resume`) starts afresh, the
      checkpoints and summaries already there moved aside.
    resume_from: a checkpoint prefix or directory to resume from instead
      of the output's latest (`--resume-from`); None for the latest.
    warm_start: a checkpoint prefix, directory or job output
      (`--warm-start`); None for the initializers' values.
    pattern: a regex of the variables warm-started (`--restore-pattern`).
    rename: checkpoint variable name -> model variable name
      (`--restore-rename`).
    global_step: whether the global step is warm-started too
      (`--restore-global-step`).
  """

  resume: bool = True
  resume_from: Optional[str] = None
  warm_start: Optional[str] = None
  pattern: Optional[str] = None
  rename: Mapping[str, str] = dataclasses.field(default_factory=dict)
  global_step: bool = False

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      resume=bool(read(args, 'resume', True)),
      resume_from=read(args, 'resume_from') or None,
      warm_start=read(args, 'warm_start') or None,
      pattern=read(args, 'restore_pattern') or None,
      rename=_restore.parse_rename(read(args, 'restore_rename')),
      global_step=bool(read(args, 'restore_global_step', False)),
    )
