"""List flags: `--name V1 V2` whole, or `--name:N V` one item at a time.

Hyperparameter tuning services set one item of a list with the indexed
form (`--hidden-layers:2 10`); argparse knows nothing of it, so the
arguments are rewritten before argparse sees them.

This module must not import TensorFlow: flags are parsed before it loads.
"""

import argparse
import difflib
import re
from typing import Any

from tensorfx import _argparsing
from tensorfx._errors import ConfigurationError

# `--name:N` or `--name:N=value`; the index is validated separately so that
# `--name:x` gets a message about the index rather than "unknown flag".
_INDEXED = re.compile(r'^(--[^:=]+):([^=]*)(?:=(.*))?$', re.DOTALL)

# argparse's own test for a value that looks like a negative number; such a
# value after `--name:N` is a value, not a forgotten one followed by a flag.
_NEGATIVE_NUMBER = re.compile(r'^-\d+$|^-\d*\.\d+$')


class ListAction(argparse.Action):
  """Stores a `nargs='+'` list and marks its flag as a list flag.

  The marker is the action's class: argument groups share their parser's
  actions, so the parser finds every list flag however it was added.
  """

  def __call__(self, parser, namespace, values, option_string=None):
    setattr(namespace, self.dest, list(values))


def add_list_argument(
  parser, *names, type=None, help=None, default=None, **kwargs
):
  """Adds a list flag; see `ModelArguments.add_list_argument`."""
  if not names or not all(name.startswith('--') for name in names):
    raise ValueError(
      'A list flag needs one or more names that start with "--". '
      f'Received: {names!r}'
    )
  return parser.add_argument(
    *names,
    action=ListAction,
    nargs='+',
    type=type,
    default=default,
    help=list_help(names[0], help),
    **kwargs,
  )


def list_help(name, help=None):
  """A list flag's help: `help`, then how to give its values."""
  return (f'{help} ' if help is not None else '') + (
    f'(several values; or one at a time: {name}:1 VALUE {name}:2 VALUE ...)'
  )


def rewrite_indexed(parser, argv, bases=None):
  """Turns the indexed form of list flags into what argparse understands.

  Args:
    parser: the parser; its `ListAction`s are the list flags.
    argv: the arguments.
    bases: dest to the list a run configuration gave; indexed items
      replace or extend (without gaps) its items.

  Returns:
    The arguments with each indexed list flag replaced by one placeholder
    `--name=FIRST` (so that argparse sees the flag: `required` holds), and
    a dict from dest to the typed, ordered values that must then replace
    the placeholder's.

  Raises:
    ConfigurationError: a bad index, a gap, a duplicate, a value of the
      wrong type, an indexed form of a flag that is not a list flag, or a
      flag given both ways.
  """
  list_actions = {
    name: action
    for action in _argparsing.actions(parser)
    if isinstance(action, ListAction)
    for name in action.option_strings
  }

  items: dict[str, Any] = {}  # dest -> {index: (token, value)}
  names: dict[str, str] = {}  # dest -> the name first used in the indexed form
  slots = {}  # dest -> position of its placeholder in the output
  whole: dict[str, str] = {}  # dest -> the name used in the whole-list form
  output = []
  i = 0
  while i < len(argv):
    token = argv[i]
    i += 1
    if token == '--':
      # Everything after `--` is positional, never a flag.
      output.append(token)
      output.extend(argv[i:])
      break
    match = _INDEXED.match(token) if token.startswith('--') else None
    if not match:
      action = list_actions.get(token.partition('=')[0])
      if action is not None:
        whole.setdefault(action.dest, token.partition('=')[0])
      output.append(token)
      continue

    name, index_text, value = match.groups()
    flag = f'{name}:{index_text}'
    action = list_actions.get(name)
    if action is None:
      declared = sorted(list_actions)
      near = difflib.get_close_matches(name, declared, n=1, cutoff=0.6)
      raise ConfigurationError(
        f'{flag} is an indexed list flag, but {name} is not a list flag. '
        'The indexed form NAME:N is accepted for '
        f'{", ".join(declared) if declared else "no flag"}. '
        f'Received: {flag}'
        + (f' (did you mean {near[0]}:{index_text}?)' if near else '')
      )
    if not re.fullmatch(r'[0-9]+', index_text) or int(index_text) < 1:
      raise ConfigurationError(
        f'{flag}: the index of a list flag must be a positive integer '
        f'(1-based), as in {name}:1. Received: {flag}'
      )
    if value is None:
      if i >= len(argv) or (
        argv[i].startswith('-') and not _NEGATIVE_NUMBER.match(argv[i])
      ):
        raise ConfigurationError(
          f'{flag} expects a value (write {flag}=VALUE for a value that '
          'starts with "-"). Received no value.'
        )
      value = argv[i]
      i += 1

    index = int(index_text)
    entries = items.setdefault(action.dest, {})
    if index in entries:
      raise ConfigurationError(
        f'{name}:{index} is given more than once. Received: '
        f'{entries[index][0]}={entries[index][1]} and {flag}={value}'
      )
    entries[index] = (flag, value)
    names.setdefault(action.dest, name)
    if action.dest not in slots:
      slots[action.dest] = len(output)
      output.append(None)

  typed = {}
  for dest, entries in items.items():
    name = names[dest]
    if dest in whole:
      raise ConfigurationError(
        f'{name} is given both as a list ({whole[dest]} VALUE ...) and one '
        f'item at a time ({name}:N VALUE); use one form. Received: '
        f'{whole[dest]} and {", ".join(f for f, _ in entries.values())}'
      )
    indices = sorted(entries)
    base = list((bases or {}).get(dest) or [])
    missing = [
      n for n in range(1, indices[-1] + 1) if n not in entries and n > len(base)
    ]
    if missing:
      raise ConfigurationError(
        f'{name}:{missing[0]} is missing (got indices '
        f'{", ".join(str(n) for n in indices)}): the indices of a list '
        'flag must run from 1 without gaps.'
      )
    action = list_actions[name]
    values = base + [None] * max(0, indices[-1] - len(base))
    for n in indices:
      values[n - 1] = _convert(parser, action, *entries[n])
    typed[dest] = values
    # argparse converts this again; it is valid, the conversion above proved
    # it. The = form keeps a value that starts with "-" a value.
    output[slots[dest]] = f'{action.option_strings[0]}={entries[indices[0]][1]}'
  return output, typed


def _convert(parser, action, flag, value):
  """Applies a list flag's type and choices to one indexed value."""
  convert = action.type
  if convert is not None and not callable(convert):
    # argparse also accepts the name of a registered type, e.g. 'int'.
    convert = _argparsing.registered(parser, 'type', convert, convert)
  return _argparsing.typed(
    convert, action.choices, value, flag, lambda v: f'{flag}={v}'
  )
