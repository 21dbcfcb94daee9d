"""What every settings section shares: argument groups, reading, checking.

A section is one concern of a training job (data, loop, checkpoints, ...):
a module with `add_arguments(parser)` (its flags), `check(args)` (the
values those flags may take) and a frozen dataclass built once from the
parsed arguments with `from_args(args)`. The engine reads the dataclass,
never the argument namespace.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import argparse
from typing import Any

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
