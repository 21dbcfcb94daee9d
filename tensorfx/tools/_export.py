"""`tensorfx export`: write the SavedModel of a checkpoint of a job."""

from tensorfx.tools import _train


def add_parser(commands):
  parser = commands.add_parser(
    'export',
    help='export a checkpoint as the SavedModel',
    add_help=False,
    description='Runs a trainer module with --action export: it builds '
    'the same model, restores a checkpoint (the latest of OUTPUT/'
    'checkpoints by default) and writes the SavedModel over raw instances '
    'to --export-dir (default OUTPUT/model). Arguments after the known '
    'ones go to the trainer.',
    epilog='Example: tensorfx export --module trainer --output /tmp/iris '
    '--checkpoint /tmp/iris/checkpoints/best --export-dir /tmp/iris-best '
    '--data-train data/train.csv --data-schema schema.yaml '
    '--data-features features.yaml',
  )
  _train.add_trainer_arguments(parser)
  parser.add_argument(
    '--checkpoint',
    metavar='PATH',
    help='the checkpoint: a prefix or a directory (its '
    'latest) (default: the latest of OUTPUT/checkpoints)',
  )
  parser.add_argument(
    '--export-dir',
    metavar='PATH',
    help='where to write the model (default: OUTPUT/model)',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  """Runs the trainer with `--action export`."""
  code = _train.help_or_check(args)
  if code is not None:
    return code
  argv = ['--output', args.output, '--action', 'export', *rest]
  if args.checkpoint:
    argv += ['--checkpoint', args.checkpoint]
  if args.export_dir:
    argv += ['--export-dir', args.export_dir]
  return _train.run_module(args.module, argv)
