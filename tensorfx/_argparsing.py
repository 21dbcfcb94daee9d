"""An argument parser that suggests what a mistyped flag or command meant.

`tensorfx trian` and `--batch-sise 8` get "did you mean" with the closest
names, as git and pip do; otherwise it is `argparse.ArgumentParser`. An
error prints two lines, never the whole usage: a one-line usage, then the
error with its suggestion, last, where the eye lands:

    usage: tensorfx train [options] (tensorfx train --help lists them)
    tensorfx train: error: unrecognized arguments: --batch-sise 8
    (--batch-sise: did you mean --batch-size or --eval-batch-size?)

A trainer that `tensorfx train` (or predict, evaluate...) runs parses its
flags under the name the user typed (`program()`), not `trainer.py`.

It is also the one place that reads argparse's internals, which have no
public API: a parser's actions (`actions`) and argument groups
(`argument_groups`), its registries (`registered`) and the kinds of its
built-in actions (`is_help_action`, `is_flag_action`, ...).

This module must not import TensorFlow (the command line's `--help`
answers without it).
"""

import argparse
from collections.abc import Iterator
import contextlib
import difflib
import functools
import re
import sys
from typing import Any, Callable, Optional

from tensorfx._errors import ConfigurationError

_UNRECOGNIZED = re.compile(r'^unrecognized arguments: (.*)$')
_CHOICE = re.compile(r"^argument (\S+): invalid choice: '([^']*)'")


# The command the user typed (`tensorfx train`), while a tensorfx command
# runs a trainer in this process; None otherwise.
_program: str | None = None

# A usage longer than this is summed up in one line.
_USAGE_WIDTH = 100


@contextlib.contextmanager
def program(name: str) -> Iterator[None]:
  """Names the program in trainers' usage and errors during a block.

  Example:
    >>> with program('tensorfx train'):
    ...   program_name('trainer.py')
    'tensorfx train'
  """
  global _program  # noqa: PLW0603  (one program name per process, set for a block)
  saved, _program = _program, name
  try:
    yield
  finally:
    _program = saved


def program_name(default: str) -> str:
  """The name a trainer's parser shows: `program()`'s, else `default`."""
  return _program or default


class SuggestingParser(argparse.ArgumentParser):
  """An `argparse.ArgumentParser` whose errors suggest the closest names.

  Example:
    >>> parser = SuggestingParser(prog='trainer')
    >>> parser.add_argument('--batch-size', type=int)
    >>> parser.parse_args(['--batch-sise', '8'])
    usage: trainer [-h] [--batch-size BATCH_SIZE]
    trainer: error: unrecognized arguments: --batch-sise 8 (--batch-sise:
    did you mean --batch-size?)
  """

  def error(self, message):
    self._print_message(usage_line(self) + '\n', sys.stderr)
    self.exit(2, f'{self.prog}: error: {message}{suggest(self, message)}\n')


def usage_line(parser: argparse.ArgumentParser) -> str:
  """argparse's usage when it fits one line, else a one-line summary."""
  usage = ' '.join(parser.format_usage().split())
  if len(usage) <= _USAGE_WIDTH:
    return usage
  return f'usage: {parser.prog} [options] ({parser.prog} --help lists them)'


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
  """Every action of `parser`, its argument groups' included, in order."""
  return list(parser._actions)  # noqa: SLF001  (argparse has no public API to list a parser's actions)


def argument_groups(parser: argparse.ArgumentParser) -> list[Any]:
  """The argument groups of `parser` (`-h`'s sections), in order."""
  return list(parser._action_groups)  # noqa: SLF001  (argparse has no public API to list a parser's groups)


def registered(
  parser: argparse.ArgumentParser, kind: str, name: Any, default: Any = None
) -> Any:
  """What `parser` registered as `name` of `kind`, else `default`.

  Kinds are argparse's registries: `'action'` maps the names that
  `add_argument(action=...)` takes to their classes, `'type'` the names
  that `type=` takes (`parser.register`).

  Example:
    >>> registered(parser, 'action', 'store_true')
    <class 'argparse._StoreTrueAction'>
  """
  return parser._registry_get(kind, name, default)  # noqa: SLF001  (argparse has no public API to read its registries)


@functools.cache
def _builtin(*names: str) -> tuple[type, ...]:
  """argparse's own classes of the `action=` names ('store_true', ...)."""
  parser = argparse.ArgumentParser(add_help=False)
  return tuple(registered(parser, 'action', name) for name in names)


def is_help_action(action: argparse.Action) -> bool:
  """Whether `action` is argparse's `--help` or `--version` (they exit)."""
  return isinstance(action, _builtin('help', 'version'))


def is_flag_action(action: argparse.Action) -> bool:
  """Whether `action` is a boolean flag (store_true/false, BooleanOptional)."""
  return isinstance(
    action,
    (argparse.BooleanOptionalAction, *_builtin('store_true', 'store_false')),
  )


def is_store_false(action: argparse.Action) -> bool:
  """Whether `action` is `action='store_false'` (true turns it off)."""
  return isinstance(action, _builtin('store_false'))


def is_store_const(action: argparse.Action) -> bool:
  """Whether `action` stores a constant (store_const, store_true/false)."""
  return isinstance(action, _builtin('store_const'))


def is_append(action: argparse.Action) -> bool:
  """Whether `action` is `action='append'` (each use adds a value)."""
  return isinstance(action, _builtin('append'))


def suggest(parser, message):
  """The " (did you mean ...?)" to add to argparse's error `message`."""
  match = _UNRECOGNIZED.match(message)
  if match:
    options = [
      o
      for action in actions(parser)
      for o in action.option_strings
      if o.startswith('--')
    ]
    hints = []
    for token in match.group(1).split():
      name = token.partition('=')[0].partition(':')[0]
      if not name.startswith('--'):
        continue
      close = difflib.get_close_matches(name, options, n=2, cutoff=0.6)
      if close:
        hints.append(f'{name}: did you mean {" or ".join(close)}?')
    return f' ({"; ".join(hints)})' if hints else ''
  match = _CHOICE.match(message)
  if match:
    for action in actions(parser):
      if action.choices and match.group(1) in (
        action.metavar,
        action.dest,
        *action.option_strings,
      ):
        close = difflib.get_close_matches(
          match.group(2), [str(c) for c in action.choices], n=2, cutoff=0.5
        )
        if close:
          return f' (did you mean {" or ".join(close)}?)'
  return ''


def typed(
  convert: Optional[Callable[[Any], Any]],
  choices: Any,
  value: Any,
  where: str,
  received: Callable[[Any], str],
) -> Any:
  """`value` through a flag's type and choices, as argparse applies them.

  For values argparse does not parse itself (a list flag's indexed item, a
  run configuration's key), with errors that name the flag.

  Args:
    convert: the flag's `type=`; None keeps `value`.
    choices: the flag's `choices=`; None for any.
    value: the text (or value) given.
    where: the flag as the message names it.
    received: `FLAG=VALUE` as the user wrote it, given the value reached
      (the given one when the type refused it, the converted one when the
      choices did).

  Raises:
    ConfigurationError: the type refused the value, or it is not a choice.
  """
  if convert is not None:
    try:
      value = convert(value)
    except (TypeError, ValueError, argparse.ArgumentTypeError) as e:
      kind = getattr(convert, '__name__', repr(convert))
      detail = f' ({e})' if isinstance(e, argparse.ArgumentTypeError) else ''
      raise ConfigurationError(
        f'{where} expects a value of type {kind}{detail}. '
        f'Received: {received(value)}'
      ) from None
  if choices is not None and value not in choices:
    raise ConfigurationError(
      f'{where} expects one of {", ".join(map(str, choices))}. '
      f'Received: {received(value)}'
    )
  return value
