"""Restore settings: what a run starts from.

Its own latest checkpoint (the default), a checkpoint named with
`--resume-from`, nothing (`--no-resume`), or a warm start of a fresh model
from another checkpoint (`--warm-start`).
"""

import argparse
import dataclasses
from typing import Any, Mapping, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.training._checkpoints import restore as _restore
from tensorfx.training._settings import _section


def _pattern(name: str, value: Any) -> None:
  _restore.compile_pattern(value)


def _rename(name: str, value: Any) -> None:
  _restore.parse_rename(value)


@dataclasses.dataclass(frozen=True)
class RestoreSettings(_section.Section):
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

  resume: bool = _section.setting(
    '--resume',
    group='restore',
    action=argparse.BooleanOptionalAction,
    default=True,
    convert=bool,
    help="resume from the output's latest checkpoint; "
    '--no-resume starts afresh and moves the checkpoints '
    'and summaries already there aside, to '
    'checkpoints.old-TIMESTAMP and summaries.old-TIMESTAMP '
    '(default: on)',
  )
  resume_from: Optional[str] = _section.setting(
    '--resume-from',
    group='restore',
    metavar='PATH',
    convert=_section.or_none,
    help='resume from this checkpoint (a prefix such as '
    'OUTPUT/checkpoints/ckpt-200, or a directory: its '
    'latest) with its optimizer state and global step, '
    "instead of the output's latest; applied once per "
    'output: a restarted job resumes its own latest '
    'checkpoint (default: the latest in OUTPUT/checkpoints)',
  )
  warm_start: Optional[str] = _section.setting(
    '--warm-start',
    group='restore',
    metavar='PATH',
    convert=_section.or_none,
    help='initialize a fresh job from this checkpoint (a '
    "prefix, a directory, or another job's output), by "
    'variable name; a job resuming its own checkpoint '
    'ignores it',
  )
  pattern: Optional[str] = _section.setting(
    '--restore-pattern',
    group='restore',
    metavar='REGEX',
    convert=_section.or_none,
    check=_pattern,
    help='warm-start only the variables whose names match '
    '(re.search); the others keep their initial values',
  )
  rename: Mapping[str, str] = _section.listed(
    '--restore-rename',
    group='restore',
    metavar='CKPT=MODEL',
    convert=_restore.parse_rename,
    check=_rename,
    help='warm-start the model variable MODEL from the checkpoint '
    'variable CKPT',
  )
  global_step: bool = _section.setting(
    '--restore-global-step',
    group='restore',
    action=argparse.BooleanOptionalAction,
    default=False,
    convert=bool,
    help='warm-start the global step too (default: off, start at step 0)',
  )

  @classmethod
  def ordered_flags(cls) -> list[_section.Flag]:
    # --help has listed --resume-from first; the fields (repr) start with
    # resume.
    resume, resume_from, *rest = super().ordered_flags()
    return [resume_from, resume, *rest]

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks each flag, and that --resume-from and --warm-start agree."""
    resume_from = _section.read(args, 'resume_from')
    if resume_from and not _section.read(args, 'resume', cls.resume):
      raise ConfigurationError(
        '--resume-from PATH and --no-resume contradict each other: '
        "--resume-from already leaves the output's latest checkpoint "
        f'aside. Received: --resume-from={resume_from} --no-resume'
      )
    warm_start = _section.read(args, 'warm_start')
    if resume_from and warm_start:
      raise ConfigurationError(
        '--resume-from resumes a checkpoint with its optimizer state; '
        '--warm-start initializes a fresh model from one: use one of them. '
        f'Received: --resume-from={resume_from} --warm-start={warm_start}'
      )
    super().check(args)
    if not warm_start:
      for dest in ('restore_pattern', 'restore_rename'):
        if _section.read(args, dest):
          flag = _section.flag(dest)
          raise ConfigurationError(
            f'{flag} applies to --warm-start PATH. Received: {flag} without '
            '--warm-start'
          )
