"""`tensorfx train`: run a trainer module the way a cloud job runs it."""

import os
import runpy
import sys

from tensorfx import _trainercommand
from tensorfx._errors import ConfigurationError


def add_parser(commands):
  parser = commands.add_parser(
    'train',
    help='run a trainer module (as Cloud runs it)',
    add_help=False,
    description='Runs a trainer module as `python -m MODULE --output DIR '
    '[trainer args]`. Arguments after the known ones go to the trainer.',
    epilog='Example: tensorfx train --module trainer --output /tmp/iris '
    '--data-train data/train.csv --data-eval data/eval.csv '
    '--data-schema schema.yaml --data-features features.yaml',
  )
  add_trainer_arguments(parser)
  parser.add_argument(
    '--cluster',
    metavar='ps=N,workers=N,evaluator=N',
    help='run a local cluster on 127.0.0.1: a chief plus these tasks, '
    'one process each with its own TF_CONFIG (e.g. ps=1,workers=2,'
    'evaluator=1 for parameter servers; workers=2 for multi-worker)',
  )
  parser.add_argument(
    '--restart',
    metavar='N',
    type=int,
    default=0,
    help='with --cluster: start a task that fails or is killed again, '
    'with the same TF_CONFIG, up to N times per task (as a cloud '
    'platform restarts a failed replica; a restarted chief resumes from '
    'the last checkpoint)',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def add_help_argument(parser):
  """-h/--help: the command's help and, with --module, the trainer's flags.

  The command's parser must be made with `add_help=False`; its `run`
  answers --help with `help_or_check`.
  """
  parser.add_argument(
    '-h',
    '--help',
    action='store_true',
    help='show this help and, with --module, the '
    "trainer's own flags, then exit",
  )
  parser.set_defaults(command_parser=parser)


def add_trainer_arguments(parser):
  """--module and --output (which trainer runs, for which job), and --help.

  The command's parser must be made with `add_help=False`: its --help
  shows the trainer's own flags too, when --module names it.
  """
  add_help_argument(parser)
  parser.add_argument(
    '--module',
    help='(required) the trainer: a module name (importable '
    'from the current directory) or the path of a .py file',
  )
  parser.add_argument(
    '--output',
    '--job-dir',
    dest='output',
    help='(required) the job output directory (local or gs://)',
  )


def help_or_check(args, required=('--module', '--output')):
  """Answers --help, or checks the `required` flags are given.

  Args:
    args: the parsed arguments of a parser with `add_help_argument`.
    required: the flags the command needs, when not asked for help.

  Returns:
    The exit code when --help was answered, else None.
  """
  parser = args.command_parser
  if args.help:
    parser.print_help()
    if args.module:
      print(
        f'\nThe trainer module {args.module!r} takes these flags (after the '
        'ones above):\n',
        flush=True,
      )
      try:
        run_module(args.module, ['--help'])
      except SystemExit as e:
        return e.code or 0
    return 0
  missing = [flag for flag in required if not getattr(args, flag[2:])]
  if missing:
    parser.error(f'the following arguments are required: {", ".join(missing)}')
  return None


def run(args, rest):
  """Runs the trainer in this process, with `--output` and `rest` as argv."""
  code = help_or_check(args)
  if code is not None:
    return code
  if args.cluster:
    from tensorfx.tools import _launch

    return _launch.run_local_cluster(
      _trainercommand.train_command(args.module, args.output, rest),
      args.cluster,
      restarts=args.restart,
    )
  if args.restart:
    raise ConfigurationError(
      '--restart restarts the tasks of a local '
      'cluster: give --cluster too. Received: '
      f'--restart {args.restart}'
    )
  return run_module(args.module, ['--output', args.output, *rest])


def run_module(module, argv):
  """Runs a trainer (module name or .py path) as `__main__` with `argv`."""
  if module.endswith('.py') or os.sep in module:
    if not os.path.isfile(module):
      raise ConfigurationError(
        f'--module: no trainer file {module!r}.{_did_you_mean(module)}'
      )
    sys.argv = [module, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
    runpy.run_path(module, run_name='__main__')
    return 0
  sys.path.insert(0, os.getcwd())
  import importlib.util

  try:
    spec = importlib.util.find_spec(module)
  except ImportError:
    spec = None
  if spec is None:
    raise ConfigurationError(
      f'--module: cannot find the trainer module {module!r} from '
      f'{os.getcwd()} (run from the directory that holds it, or give the '
      f'path of its .py file).{_did_you_mean(module)}'
    )
  sys.argv = [spec.origin or module, *argv]
  runpy.run_module(module, run_name='__main__', alter_sys=True)
  return 0


def _did_you_mean(module):
  """' Did you mean NAME?' for the closest trainer to a mistyped --module."""
  import difflib
  import pkgutil

  if module.endswith('.py') or os.sep in module:
    folder = os.path.dirname(module) or '.'
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    near = difflib.get_close_matches(
      os.path.basename(module),
      [n for n in names if n.endswith('.py')],
      n=1,
      cutoff=0.6,
    )
    return (
      f' Did you mean {os.path.join(os.path.dirname(module), near[0])}?'
      if near
      else ''
    )
  parent, _, name = module.rpartition('.')
  where = [os.getcwd()]
  if parent:
    import importlib.util

    try:
      spec = importlib.util.find_spec(parent)
    except ImportError:
      spec = None
    where = list(spec.submodule_search_locations or []) if spec else []
  names = sorted(m.name for m in pkgutil.iter_modules(where))
  near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
  return (
    f' Did you mean {".".join(filter(None, (parent, near[0])))}?'
    if near
    else ''
  )
