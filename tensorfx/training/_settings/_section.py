"""What every settings section shares: settings declared once, with flags.

A section is one concern of a training job (data, loop, checkpoints, ...):
a frozen dataclass whose fields are declared with `setting(...)`, each
carrying its flag's names, type, default, help and check. Its `Section`
base derives the rest from those declarations: `add_arguments(parser)`
(the flags, in field order), `check(args)` (every field's check, on the
parsed values) and `from_args(args)` (the dataclass, built once). The
engine reads the dataclass, never the argument namespace.

Example:
  >>> @dataclasses.dataclass(frozen=True)
  ... class Demo(Section):
  ...   steps: int = setting('--demo-steps', group='job', default=10,
  ...                        type=int, help='steps', check=positive())
  >>> Demo.from_args(argparse.Namespace(demo_steps=None)).steps
  10

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import argparse
import dataclasses
from typing import Any, Callable, ClassVar, Dict, Optional, Self, Sequence

from tensorfx import _argparsing
from tensorfx import _listflags
from tensorfx._errors import ConfigurationError


def group(parser: argparse.ArgumentParser, title: str) -> Any:
  """The argument group `title` of `parser`, made on first use.

  Sections add their flags to shared groups (`job`, `data`, ...) so that
  `--help` lists them by what a user looks for, whichever section owns
  them.
  """
  for existing in _argparsing.argument_groups(parser):
    if existing.title == title:
      return existing
  return parser.add_argument_group(title)


def read(args: Any, dest: str, default: Any = None) -> Any:
  """The value of flag `dest`, or `default` when it is None or absent.

  Arguments built by hand (`ModelArguments(batch_size=32)`) hold only what
  they were given; every other flag reads as its default.
  """
  value = getattr(args, dest, None)
  return default if value is None else value


def flag(dest: str) -> str:
  """The command-line spelling of a flag: `batch_size` -> `--batch-size`."""
  return '--' + dest.replace('_', '-')


def check_positive(
  args: Any, dest: str, optional: bool = False, expected: str | None = None
) -> None:
  """Raises unless flag `dest` is positive (or absent, or None if optional)."""
  value = getattr(args, dest, None)
  if value is None and (optional or not hasattr(args, dest)):
    return
  positive(expected or 'a positive integer')(flag(dest), value)


# `--batch-size all`: every instance of the training data in one batch.
ALL = 'all'


def batch_size(text: Any) -> int | str:
  """Parses a batch size: a positive integer, or `all` (any case)."""
  value = str(text).strip()
  if value.lower() == ALL:
    return ALL
  try:
    return int(value)
  except ValueError:
    raise argparse.ArgumentTypeError(
      f"expected a positive integer or 'all'. Received: {text!r}"
    ) from None


# A field's check: called with the flag's spelling and the parsed value
# (None only where the flag was set to None explicitly); raises
# ConfigurationError naming the flag.
Check = Callable[[str, Any], None]


@dataclasses.dataclass(frozen=True)
class Flag:
  """How one settings field is spelled and checked on the command line.

  Attributes:
    names: the flag's spellings, the first one canonical (its dest).
    group: the `--help` group it is listed under.
    options: the rest of `add_argument`'s keywords (type, default, help,
      metavar, action, choices, nargs).
    check: the values it may take; None for any its type parses.
    convert: from the parsed value to the field's (`float`, a unit, an
      enum); None keeps it.
  """

  names: Sequence[str]
  group: str
  options: Dict[str, Any]
  check: Optional[Check] = None
  convert: Optional[Callable[[Any], Any]] = None

  @property
  def dest(self) -> str:
    return self.options.get('dest') or (
      self.names[0].lstrip('-').replace('-', '_')
    )

  @property
  def default(self) -> Any:
    return self.options.get('default')

  def add_to(self, parser: argparse.ArgumentParser) -> None:
    """Adds the flag to `parser`, in its `--help` group."""
    group(parser, self.group).add_argument(*self.names, **self.options)


def setting(
  *names: str,
  group: str,
  help: str,
  default: Any = None,
  check: Optional[Check] = None,
  convert: Optional[Callable[[Any], Any]] = None,
  **options: Any,
) -> Any:
  """A settings field declared with its flag: the one place it is spelled.

  The field's default is the flag's default (converted by `convert`); a
  list default is copied for each instance.

  Args:
    *names: the flag's spellings, e.g. `'--max-steps'`.
    group: the `--help` group.
    help: the flag's help (`%(default)s` is the default).
    default: the default, on the command line and in the dataclass.
    check: the values it may take, see `positive()` and friends.
    convert: from the parsed value to the field's value.
    **options: more of `add_argument`'s keywords (type, metavar, action,
      choices, nargs).

  Returns:
    A `dataclasses.field` carrying the `Flag`.
  """
  flag = Flag(
    names, group, dict(options, default=default, help=help), check, convert
  )
  return _field(
    flag, convert(default) if convert and default is not None else default
  )


def _field(flag: Flag, default: Any) -> Any:
  """The dataclass field of `flag`; a list default is copied per instance."""
  metadata = {'flag': flag}
  if isinstance(default, (list, dict, set)):
    return dataclasses.field(
      default_factory=lambda: type(default)(default), metadata=metadata
    )
  return dataclasses.field(default=default, metadata=metadata)


def flags(cls: type) -> list[tuple[str, Flag]]:
  """`(field name, Flag)` of every field of `cls` declared with `setting`."""
  return [
    (field.name, field.metadata['flag'])
    for field in dataclasses.fields(cls)
    if 'flag' in field.metadata
  ]


class Section:
  """The base of a settings dataclass whose fields are `setting(...)`s.

  A section overrides a method to add what its declarations cannot say
  (a check across two flags, a field without a flag), calling the base's.
  """

  # Flags of the section that have no field (parsed and checked here, read
  # elsewhere), as `setting(...)`s would declare them.
  EXTRA_FLAGS: ClassVar[Sequence[Flag]] = ()

  @classmethod
  def ordered_flags(cls) -> list[Flag]:
    """The section's flags in `--help` order: its fields', then the extra.

    A section whose flags were listed in another order before its fields
    were declared overrides this to keep `--help` (and the order checks
    run in) as users know it.
    """
    return [flag for _, flag in flags(cls)] + list(cls.EXTRA_FLAGS)

  @classmethod
  def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
    """Adds the section's flags to `parser`, in field order."""
    for flag in cls.ordered_flags():
      flag.add_to(parser)

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the parsed values of the section's flags.

    Absent flags (arguments built by hand hold only what they were given)
    and flags without a default left unset are not checked; a flag with a
    default set to None explicitly is, so its check names it.

    Raises:
      ConfigurationError: naming the flag and the value received.
    """
    for flag in cls.ordered_flags():
      if flag.check is None or not hasattr(args, flag.dest):
        continue
      value = getattr(args, flag.dest)
      if value is None and flag.default is None:
        continue
      flag.check(flag.names[0], value)

  @classmethod
  def from_args(cls, args: Any) -> Self:
    """The section's settings from `args` (a `ModelArguments` or namespace)."""
    values = {}
    for name, flag in flags(cls):
      value = read(args, flag.dest, flag.default)
      if flag.convert is not None and value is not None:
        value = flag.convert(value)
      values[name] = value
    return cls(**values)


def positive(expected: str = 'a positive integer') -> Check:
  """A check: the value is more than zero."""

  def check(name: str, value: Any) -> None:
    if value is None or value <= 0:
      raise ConfigurationError(
        f'{name} must be {expected}. Received: {name}={value}'
      )

  return check


def not_negative(name: str, value: Any) -> None:
  """A check: the value is zero or more."""
  if value is None or value < 0:
    raise ConfigurationError(
      f'{name} must be zero or more. Received: {name}={value}'
    )


def positive_or_all(name: str, value: Any) -> None:
  """A check: a positive integer, or `all` (a batch size)."""
  if isinstance(value, str) and value.lower() == ALL:
    return
  positive(
    "a positive integer, or 'all' for the whole training data in one batch"
  )(name, value)


def batch(value: Any) -> int | str:
  """A batch size as settings hold it: an int, or `'all'`."""
  if isinstance(value, str) and value.lower() == ALL:
    return ALL
  return int(value)


# Added with the sections: a check that skips None, a converter from
# empty to None, and flags parsed as None until given, whose field then
# holds an empty value (a list flag's `()`, a mapping's `{}`):
# `--print-config` writes null for them, and their checks never see None.


def optional(check: Check) -> Check:
  """A check that lets None through, to `check` the other values.

  A defaulted flag set to None (`nan_restore: null` in a run
  configuration) then reads as its default, as `check_not_negative` had it.
  """

  def optional_check(name: str, value: Any) -> None:
    if value is not None:
      check(name, value)

  return optional_check


def or_none(value: Any) -> Any:
  """A converter: an empty value (`''`) as None, for 'not given'."""
  return value or None


@dataclasses.dataclass(frozen=True)
class UnsetFlag(Flag):
  """A flag whose parsed default is None, read as `unset` (converted)."""

  unset: Any = ()

  @property
  def default(self) -> Any:
    return self.unset


def unset(
  *names: str,
  group: str,
  help: str,
  value: Any = (),
  check: Optional[Check] = None,
  convert: Optional[Callable[[Any], Any]] = None,
  **options: Any,
) -> Any:
  """A settings field like `setting`'s, its flag None until given.

  Args:
    *names: the flag's spellings.
    group: the `--help` group.
    help: the flag's help.
    value: what the flag reads as when not given (then converted).
    check: the values it may take once given.
    convert: from the parsed value (or `value`) to the field's value.
    **options: more of `add_argument`'s keywords; see `list_options` for
      a list flag's.

  Returns:
    A `dataclasses.field` carrying the `UnsetFlag`.
  """
  flag = UnsetFlag(
    names,
    group,
    dict(options, default=None, help=help),
    optional(check) if check else None,
    convert,
    value,
  )
  return _field(flag, convert(value) if convert else value)


def list_options(name: str, help: str) -> Dict[str, Any]:
  """`add_argument`'s keywords of the list flag `name`, with `help`.

  A list flag takes `--name V1 V2`, or `--name:N V` one item at a time
  (see `tensorfx.training._arguments.listflags`).
  """
  return {
    'action': _listflags.ListAction,
    'nargs': '+',
    'help': _listflags.list_help(name, help),
  }


def listed(
  *names: str,
  group: str,
  help: str,
  check: Optional[Check] = None,
  convert: Callable[[Any], Any] = tuple,
  **options: Any,
) -> Any:
  """A list flag's settings field: `convert` of its values, or of `()`."""
  return unset(
    *names,
    group=group,
    check=check,
    convert=convert,
    **dict(options, **list_options(names[0], help)),
  )
