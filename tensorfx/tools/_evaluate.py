"""`tensorfx evaluate`: evaluate a job's checkpoints, without training."""

from tensorfx.tools import _train


def add_parser(commands):
  parser = commands.add_parser(
    'evaluate',
    help='evaluate a checkpoint on the validation targets',
    add_help=False,
    description='Runs a trainer module with --action evaluate: it builds '
    'the same model, restores a checkpoint (the latest of OUTPUT/'
    'checkpoints by default), evaluates every validation target '
    '(--data-eval, --eval-target) without training, prints the results as '
    'one JSON line and writes them to OUTPUT/evaluations/. With --follow '
    'it evaluates each new checkpoint of a running job once (as the '
    'evaluator task does), a JSON line each, until the job records its '
    'end; Ctrl-C stops it (exit 130). Arguments after the known ones go to '
    'the trainer (give it the data flags it was trained with).',
    epilog='Example: tensorfx evaluate --module trainer --output /tmp/iris '
    '--data-train data/train.csv --data-eval data/eval.csv '
    '--data-schema schema.yaml --data-features features.yaml',
  )
  _train.add_trainer_arguments(parser)
  parser.add_argument(
    '--checkpoint',
    metavar='PATH',
    help='the checkpoint: a prefix (OUTPUT/checkpoints/'
    'ckpt-200) or a directory (its latest; OUTPUT/'
    'checkpoints/best is the best) (default: the latest)',
  )
  parser.add_argument(
    '--follow',
    action='store_true',
    help='evaluate each new checkpoint once until the job '
    "ends (continuous evaluation, Gematria's "
    '--gematria_action=eval); the steps evaluated are '
    'kept in OUTPUT/summaries/eval/evaluated.json, so a '
    'restarted follower carries on',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  """Runs the trainer with `--action evaluate` (and `--follow`)."""
  code = _train.help_or_check(args)
  if code is not None:
    return code
  argv = ['--output', args.output, '--action', 'evaluate', *rest]
  if args.checkpoint:
    argv += ['--checkpoint', args.checkpoint]
  if args.follow:
    if args.checkpoint:
      from tensorfx._errors import ConfigurationError

      raise ConfigurationError(
        '--follow evaluates every new checkpoint; it takes no --checkpoint. '
        f'Received: --checkpoint={args.checkpoint}'
      )
    argv.append('--follow')
  return _train.run_module(args.module, argv)
