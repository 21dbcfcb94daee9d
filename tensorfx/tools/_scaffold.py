"""`tensorfx scaffold`: a new trainer project that works at once.

The original tensorfx had the command (`tfx scaffold --dir D --model M`)
but never filled it in. Here it writes a packaged trainer, its schema and
feature set, a tiny sample data set, a README with the commands to train
locally, on a local cluster and on Vertex AI, a test with a `test` extra
that installs pytest, and a `.gitignore`; the project trains as it is and
`tensorfx submit --dry-run` accepts it.
"""

import argparse
import keyword
import os
import re
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx.tools import _templates

MODELS = ('nn.FeedForwardClassification', 'custom')
# Installs the project and its test extra (pytest), then runs its test.
TEST_COMMAND = 'pip install -e ".[test]" && pytest'
_NAME = re.compile(r'[a-z_][a-z0-9_]*\Z')


def add_parser(commands: Any) -> None:
  parser = commands.add_parser(
    'scaffold',
    help='create a new trainer project that trains at once',
    description='Writes a trainer project into --dir (default: ./NAME): a '
    'package NAME with the trainer module NAME.task (pyproject.toml), '
    'schema.yaml and features.yaml, a tiny sample data set in data/, a '
    'README with the commands to train locally, on a local cluster and '
    'on Vertex AI, a test (and a test extra that installs pytest) and a '
    '.gitignore. The directory must be new or empty.',
    epilog='Example: tensorfx scaffold --name churn --model custom && cd '
    f'churn && {TEST_COMMAND}',
  )
  add_arguments(parser)
  parser.set_defaults(run=run)


def add_arguments(parser: Any) -> None:
  """--name, --dir and --model (also the `tfx scaffold` spelling's)."""
  parser.add_argument(
    '--name',
    help="the project's Python package name "
    '(lower case letters, digits, underscores; default: '
    'the name of --dir)',
  )
  parser.add_argument(
    '--dir',
    metavar='DIR',
    help='where to write the project (default: ./NAME); must be new or empty',
  )
  parser.add_argument(
    '--model',
    default=MODELS[0],
    type=_model_flag,
    help='nn.FeedForwardClassification (a ready model, '
    'the default) or custom (a ModelBuilder subclass to '
    'edit)',
  )


def _model_flag(text: str) -> str:
  try:
    return _model(text)
  except ConfigurationError as e:
    raise argparse.ArgumentTypeError(str(e)) from None


def _model(text: str) -> str:
  for model in MODELS:
    if text.lower() == model.lower():
      return model
  raise ConfigurationError(
    f'--model must be one of {", ".join(MODELS)}. Received: {text!r}'
  )


def scaffold(
  name: str | None, directory: str | None = None, model: str = MODELS[0]
) -> list[str]:
  """Writes a new project; returns the paths written.

  Example:
    >>> scaffold('churn', '/tmp/churn', 'custom')[:2]  # doctest: +SKIP
    ['/tmp/churn/pyproject.toml', '/tmp/churn/churn/__init__.py']

  Args:
    name: the Python package name; None for the base name of `directory`.
    directory: where to write; None for `./name`.
    model: one of `MODELS`.

  Raises:
    ConfigurationError: no name, a name that is not a package name, an
      unknown model, or a directory that is a file or not empty.
  """
  if not name and not directory:
    raise ConfigurationError(
      'scaffold needs --name (or --dir, whose name becomes the package name).'
    )
  if not name:
    name = os.path.basename(os.path.normpath(directory or ''))
  if not _NAME.match(name) or keyword.iskeyword(name):
    raise ConfigurationError(
      '--name must be a Python package name: lower case letters, digits '
      f'and underscores, not starting with a digit. Received: {name!r}'
    )
  model = _model(model)
  directory = directory or name
  if os.path.exists(directory):
    if not os.path.isdir(directory):
      raise ConfigurationError(
        f'--dir {directory!r} is a file; give a new or empty directory.'
      )
    present = sorted(os.listdir(directory))
    if present:
      shown = ', '.join(present[:5]) + (', ...' if len(present) > 5 else '')
      raise ConfigurationError(
        f'--dir {directory!r} is not empty ({shown}); scaffold never '
        'overwrites files: give a new or empty directory.'
      )
  written = []
  for relative, text in _templates.project_files(name, model).items():
    path = os.path.join(directory, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'x', encoding='utf-8') as f:
      f.write(text)
    written.append(path)
  return written


def run(args: Any, rest: list[str]) -> int:
  del rest
  written = scaffold(args.name, args.dir, args.model)
  root = os.path.dirname(written[0])
  print(f'Wrote {len(written)} files to {root or "."}:')
  for path in written:
    print(f'  {os.path.relpath(path, root or ".")}')
  print(
    f'Next: cd {root or "."} && {TEST_COMMAND} (or see README.md to train).'
  )
  return 0
