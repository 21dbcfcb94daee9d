r"""`python -m tensorfx.tools.tfx`: the original tensorfx's command-line tool.

Its last version ran `python -m tensorfx.tools.tfx train --module M
--output DIR [--distributed] FLAGS...` (the trainer module as a master, or
with `--distributed` a local master, worker and parameter server), `tfx
predict --model DIR [--input F] [--output F] [--batch-size N]` and `tfx
scaffold`. Each is `tensorfx`'s own command underneath:

| tfx | tensorfx |
| --- | --- |
| `train --module M --output D FLAGS` | `train --module M --output D FLAGS` |
| `train ... --distributed` | `train ... --cluster ps=1,workers=1` |
| `predict --model D --input F --output F` | `predict --model D --input F --output F` |
| `scaffold --dir D --model M` | `scaffold --dir D --model M` |

Example:
  python -m tensorfx.tools.tfx train --module trainer.csv \\
      --output /tmp/iris --data-train data/train.csv ... \\
      --hidden-layers:1 20 --hidden-layers:2 10
"""

import argparse
import os
import sys

from tensorfx.tools import _main
from tensorfx.tools import _scaffold

# What --distributed starts besides the master, as the original did.
DISTRIBUTED = 'ps=1,workers=1'


def build_parser() -> argparse.ArgumentParser:
  """The `tfx` command line: train, predict and scaffold."""
  parser = argparse.ArgumentParser(
    prog='tfx',
    description="The original tensorfx's tool: train, "
    'predict, scaffold (each runs the tensorfx command of that name).',
  )
  commands = parser.add_subparsers(dest='command', metavar='COMMAND')
  commands.required = True
  train = commands.add_parser(
    'train',
    help='run a trainer module locally (single node, or a local '
    'cluster with --distributed)',
    description='Runs the trainer module with --output and the other '
    'flags; arguments after the known ones go to the trainer.',
  )
  train.add_argument(
    '--module',
    required=True,
    help='the trainer module (importable from the current '
    'directory), e.g. trainer.csv',
  )
  train.add_argument(
    '--output',
    default='output',
    help='the job output directory (default: ./output)',
  )
  train.add_argument(
    '--distributed',
    action='store_true',
    help='run a local cluster of a master, a worker and a '
    'parameter server, one process each',
  )
  predict = commands.add_parser(
    'predict',
    help='predict instances with an exported model',
    description='Predicts the instances (CSV lines, one per line) of '
    '--input (default stdin) with --model; writes JSON lines to --output '
    '(default stdout).',
  )
  predict.add_argument(
    '--model', required=True, help='the exported model directory (OUTPUT/model)'
  )
  predict.add_argument('--input', help='a file of instances (default stdin)')
  predict.add_argument(
    '--output', help='the file to write predictions to (default stdout)'
  )
  predict.add_argument(
    '--batch-size',
    type=int,
    default=10,
    help='instances predicted per batch (default 10)',
  )
  scaffold = commands.add_parser(
    'scaffold',
    help='create a new trainer project',
    description='Writes a new trainer project (see tensorfx scaffold).',
  )
  _scaffold.add_arguments(scaffold)
  return parser


def translate(argv: list[str]) -> list[str]:
  """The `tensorfx` command line that a `tfx` command line runs.

  Example:
    >>> translate(['train', '--module', 'trainer.csv', '--output', 'out',
    ...            '--distributed', '--max-steps', '10'])[:7]
    ['train', '--module', 'trainer.csv', '--output', ..., '--cluster', \
'ps=1,workers=1']
  """
  args, rest = build_parser().parse_known_args(argv)
  if args.command == 'train':
    command = [
      'train',
      '--module',
      args.module,
      '--output',
      os.path.abspath(args.output),
    ]
    if args.distributed:
      command += ['--cluster', DISTRIBUTED]
    return command + rest
  if rest:
    build_parser().error(f'unrecognized arguments: {" ".join(rest)}')
  if args.command == 'predict':
    command = [
      'predict',
      '--model',
      args.model,
      '--batch-size',
      str(args.batch_size),
      '--format',
      'csv',
    ]
    if args.input:
      command += ['--input', args.input]
    if args.output:
      command += ['--output', args.output]
    return command
  command = ['scaffold', '--model', args.model]
  if args.name:
    command += ['--name', args.name]
  if args.dir:
    command += ['--dir', args.dir]
  return command


def main(argv: list[str] | None = None) -> int:
  """Runs a `tfx` command line; returns the exit code."""
  argv = list(sys.argv[1:] if argv is None else argv)
  return _main.main(translate(argv))


if __name__ == '__main__':
  sys.exit(main())
