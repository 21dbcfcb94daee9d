"""`tensorfx COMMAND ...`: thin commands over the library.

TensorFlow is imported only by the command that needs it, so `--help` and
argument errors answer at once.
"""

import sys

from tensorfx import _argparsing
from tensorfx import _logging
from tensorfx import _version
from tensorfx._errors import TensorFXError

_COMMANDS = {
  'train': 'tensorfx.tools._train',
  'chaos': 'tensorfx.tools._chaos',
  'evaluate': 'tensorfx.tools._evaluate',
  'export': 'tensorfx.tools._export',
  'predict': 'tensorfx.tools._predict',
  'analyze': 'tensorfx.tools._analyze',
  'schema': 'tensorfx.tools._schema',
  'submit': 'tensorfx.tools._submit',
  'tune': 'tensorfx.tools._tune',
  'run-package': 'tensorfx.tools._runpackage',
  'status': 'tensorfx.tools._status',
  'logs': 'tensorfx.tools._logs',
  'cancel': 'tensorfx.tools._cancel',
  'scaffold': 'tensorfx.tools._scaffold',
}


def build_parser():
  parser = _argparsing.SuggestingParser(
    prog='tensorfx',
    description='Train, analyze and serve TensorFlow models built with '
    'tensorfx.',
  )
  parser.add_argument(
    '--version', action='version', version=f'tensorfx {_version.__version__}'
  )
  commands = parser.add_subparsers(dest='command', metavar='COMMAND')
  commands.required = True
  import importlib

  for module in _COMMANDS.values():
    importlib.import_module(module).add_parser(commands)
  return parser


def main(argv=None):
  """Runs the command line; returns the exit code."""
  argv = list(sys.argv[1:] if argv is None else argv)
  # TensorFlow's C++ start-up chatter (no GPU, CPU features) is noise here;
  # the trainer flag --log-level-tensorflow can be anywhere in argv.
  _logging.install_import_hook(argv)
  parser = build_parser()
  args, rest = parser.parse_known_args(argv)
  if rest and not getattr(args, 'accepts_extra', False):
    parser.error(f'unrecognized arguments: {" ".join(rest)}')
  try:
    # A trainer this command runs names it in its usage and errors.
    with _logging.guard_root(), _argparsing.program(f'tensorfx {args.command}'):
      return args.run(args, rest) or 0
  except TensorFXError as e:
    print(f'tensorfx {args.command}: error: {e}', file=sys.stderr)
    return 1
  except KeyboardInterrupt:
    print(f'tensorfx {args.command}: interrupted', file=sys.stderr)
    return 130
