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

from tensorfx._errors import ConfigurationError


def group(
  parser: argparse.ArgumentParser, title: str
) -> argparse._ArgumentGroup:
  """The argument group `title` of `parser`, made on first use.

  Sections add their flags to shared groups (`job`, `data`, ...) so that
  `--help` lists them by what a user looks for, whichever section owns
  them.
  """
  for existing in parser._action_groups:
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
  if value is None or value <= 0:
    expected = expected or 'a positive integer'
    raise ConfigurationError(
      f'{flag(dest)} must be {expected}. Received: {flag(dest)}={value}'
    )


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


def check_batch_size(args: Any, dest: str, optional: bool = False) -> None:
  """Raises unless flag `dest` is a positive integer or `all`."""
  value = getattr(args, dest, None)
  if value is None and (optional or not hasattr(args, dest)):
    return
  if isinstance(value, str) and value.lower() == ALL:
    return
  check_positive(
    args,
    dest,
    optional,
    expected="a positive integer, or 'all' for the whole "
    'training data in one batch',
  )


def check_not_negative(args: Any, *dests: str) -> None:
  """Raises unless each of the flags `dests` is zero or more (or absent)."""
  for dest in dests:
    value = getattr(args, dest, None)
    if value is not None and value < 0:
      raise ConfigurationError(
        f'{flag(dest)} must be zero or more. Received: {flag(dest)}={value}'
      )


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
    return self.names[0].lstrip('-').replace('-', '_')

  @property
  def default(self) -> Any:
    return self.options.get('default')


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
  value = convert(default) if convert and default is not None else default
  metadata = {'flag': flag}
  if isinstance(value, (list, dict, set)):
    return dataclasses.field(
      default_factory=lambda: type(value)(value), metadata=metadata
    )
  return dataclasses.field(default=value, metadata=metadata)


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
  def _flags(cls) -> list[Flag]:
    return [flag for _, flag in flags(cls)] + list(cls.EXTRA_FLAGS)

  @classmethod
  def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
    """Adds the section's flags to `parser`, in field order."""
    for flag in cls._flags():
      group(parser, flag.group).add_argument(*flag.names, **flag.options)

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the parsed values of the section's flags.

    Absent flags (arguments built by hand hold only what they were given)
    and flags without a default left unset are not checked; a flag with a
    default set to None explicitly is, so its check names it.

    Raises:
      ConfigurationError: naming the flag and the value received.
    """
    for flag in cls._flags():
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


# --- List flags (data, prediction, ...): `--name V1 V2`, or `--name:N V`. ---


@dataclasses.dataclass(frozen=True)
class ListFlag(Flag):
  """A list flag: None when not given (as `add_list_argument`'s), read as ().

  Its check also sees None (no values), so that it runs as it always has.
  """

  @property
  def default(self) -> Any:
    return ()


def listed(
  *names: str,
  group: str,
  help: str,
  check: Optional[Check] = None,
  convert: Callable[[Any], Any] = tuple,
  **options: Any,
) -> Any:
  """A settings field declared with its list flag; the field is a tuple.

  The flag is what `ModelArguments.add_list_argument` adds: `nargs='+'`,
  its indexed form, None when not given.

  Args:
    *names: the flag's spellings, e.g. `'--data-train'`.
    group: the `--help` group.
    help: the flag's help; how to give several values is added.
    check: the values it may take (called with None for none).
    convert: from the list of values (or `()`) to the field's value.
    **options: more of `add_argument`'s keywords (type, metavar, choices).

  Returns:
    A `dataclasses.field` carrying the `ListFlag`, `convert(())` by default.
  """
  # Here, so that this block stays apart from the rest of the module.
  from tensorfx.training._arguments import listflags

  flag = ListFlag(
    names,
    group,
    dict(
      options,
      action=listflags.ListAction,
      nargs='+',
      default=None,
      help=listflags.list_help(names[0], help),
    ),
    check,
    convert,
  )
  return dataclasses.field(default=convert(()), metadata={'flag': flag})
