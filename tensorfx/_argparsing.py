"""An argument parser that suggests what a mistyped flag or command meant.

`tensorfx trian` and `--batch-sise 8` get "did you mean" with the closest
names, as git and pip do; otherwise it is `argparse.ArgumentParser`.

This module must not import TensorFlow (the command line's `--help`
answers without it).
"""

import argparse
import difflib
import re

_UNRECOGNIZED = re.compile(r'^unrecognized arguments: (.*)$')
_CHOICE = re.compile(r"^argument (\S+): invalid choice: '([^']*)'")


class SuggestingParser(argparse.ArgumentParser):
  """An `argparse.ArgumentParser` whose errors suggest the closest names.

  Example:
    >>> parser = SuggestingParser(prog='trainer')
    >>> parser.add_argument('--batch-size', type=int)
    >>> parser.parse_args(['--batch-sise', '8'])
    usage: trainer [-h] [--batch-size BATCH_SIZE]
    trainer: error: unrecognized arguments: --batch-sise 8 (did you mean
    --batch-size?)
  """

  def error(self, message):
    super().error(message + suggest(self, message))


def suggest(parser, message):
  """The " (did you mean ...?)" to add to argparse's error `message`."""
  match = _UNRECOGNIZED.match(message)
  if match:
    options = [o for action in parser._actions
               for o in action.option_strings if o.startswith('--')]
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
    for action in parser._actions:
      if action.choices and match.group(1) in (action.metavar, action.dest,
                                               *action.option_strings):
        close = difflib.get_close_matches(match.group(2),
                                          [str(c) for c in action.choices],
                                          n=2, cutoff=0.5)
        if close:
          return f' (did you mean {" or ".join(close)}?)'
  return ''
