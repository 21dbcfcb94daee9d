"""`tensorfx predict`: batch prediction with an exported model or a checkpoint.

Gematria's `--gematria_action=predict`: records in (TFRecord of tf.Example,
CSV or JSON lines), the same records out with the predictions added
(TFRecord or JSON lines), streamed in batches with progress on stderr.
"""

import sys

from tensorfx._errors import ConfigurationError
from tensorfx.tools import _train

_FORMATS = ('auto', 'tfrecord', 'csv', 'json', 'parquet')
_OUTPUT_FORMATS = ('auto', 'tfrecord', 'json')


def add_parser(commands):
  parser = commands.add_parser(
    'predict',
    help='predict records with an exported model or a checkpoint',
    add_help=False,
    description='Reads records from --input (default stdin): TFRecord '
    'files of tf.Example, CSV lines in schema order (target optional) or '
    "JSON lines of raw features; writes each record with the model's "
    'outputs added to --output: a .tfrecord[.gz] file (tf.Example, one '
    'feature per output) or JSON lines (default: stdout). The model is an '
    'exported one (--model) or a checkpoint of a job (--module and '
    '--job-dir, as tensorfx export builds it, without writing a model; '
    'arguments after the known ones go to the trainer: give it the data '
    'flags it was trained with). Records are read and predicted a batch '
    'at a time, so memory does not grow with the input. A missing value '
    '(an empty cell, an absent key or feature, null) means what the '
    'schema says, as in training.',
    epilog='Examples: tensorfx predict --model /tmp/job/model --input '
    'blocks.tfrecord --output predicted.tfrecord; tensorfx predict '
    '--module trainer --job-dir /tmp/job --checkpoint '
    '/tmp/job/checkpoints/ckpt-2000 --input blocks.tfrecord.gz --output '
    'predicted.jsonl --data-train data/train.tfrecord --data-schema '
    'schema.yaml --data-features features.yaml',
  )
  _train.add_help_argument(parser)
  source = parser.add_argument_group('model (one of)')
  source.add_argument(
    '--model', metavar='DIR', help='the exported model directory (OUTPUT/model)'
  )
  source.add_argument(
    '--module',
    help='with --job-dir: the trainer (a module name or '
    'the path of a .py file) that builds the model of a '
    'checkpoint',
  )
  source.add_argument(
    '--job-dir',
    metavar='DIR',
    help='the job output directory of the checkpoint',
  )
  source.add_argument(
    '--checkpoint',
    metavar='PATH',
    help='with --module: a checkpoint prefix or directory '
    '(default: the latest of JOB_DIR/checkpoints)',
  )
  parser.add_argument(
    '--input',
    nargs='+',
    default=['-'],
    metavar='PATH',
    help='files or patterns (local or gs://), or - for stdin (default)',
  )
  parser.add_argument(
    '--output',
    default='-',
    metavar='PATH',
    help='PATH.tfrecord[.gz] or a JSON lines file (default: - for stdout)',
  )
  parser.add_argument(
    '--format',
    type=str.lower,
    choices=_FORMATS,
    default='auto',
    help="the input format (default: by each file's "
    'name: .tfrecord[.gz], .csv, .json[l], .parquet (rows '
    'by column name, nulls missing); others and '
    'stdin are lines, each JSON or CSV)',
  )
  parser.add_argument(
    '--output-format',
    type=str.lower,
    choices=_OUTPUT_FORMATS,
    default='auto',
    help='the output format (default: tfrecord for a '
    '.tfrecord[.gz] --output, else json)',
  )
  parser.add_argument(
    '--batch-size',
    type=int,
    default=256,
    metavar='N',
    help='records predicted per call (default: %(default)s)',
  )
  parser.add_argument(
    '--prefix',
    default='',
    help='prepended to the name of each output added to '
    'a record (default: none)',
  )
  parser.add_argument(
    '--skip-bad-records',
    action='store_true',
    help='skip and count records that do not parse or '
    "do not match the model's schema (Gematria's "
    '--gematria_drop_invalid_blocks) instead of failing',
  )
  parser.add_argument(
    '--runner',
    metavar='RUNNER',
    help='predict with an Apache Beam pipeline on this '
    'runner (DirectRunner, DataflowRunner, ...) instead '
    'of in this process: needs --model and files for '
    '--input and --output; the arguments after the known '
    'ones are Beam pipeline options (--project, --region, '
    '--temp_location, --direct_num_workers, ...); the '
    'output is one file, in no particular order',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  """Predicts with `--model`, or runs the trainer with `--action predict`."""
  # The model is --model or --module with --job-dir: checked below.
  code = _train.help_or_check(args, required=())
  if code is not None:
    return code
  if args.batch_size < 1:
    raise ConfigurationError(
      '--batch-size must be a positive integer. '
      f'Received: --batch-size={args.batch_size}'
    )
  if bool(args.model) == bool(args.module or args.job_dir):
    raise ConfigurationError(
      'tensorfx predict needs a model: --model DIR (an exported model), or '
      '--module and --job-dir (a checkpoint of the job). Received: '
      f'--model={args.model} --module={args.module} '
      f'--job-dir={args.job_dir}'
    )
  if args.runner:
    return _run_beam(args, rest)
  if args.model:
    if rest or args.checkpoint:
      extra = ' '.join(rest + (['--checkpoint'] if args.checkpoint else []))
      raise ConfigurationError(
        f'With --model, tensorfx predict takes no trainer arguments. '
        f'Received: {extra}'
      )
    from tensorfx import _logging
    from tensorfx.prediction import Model
    from tensorfx.prediction import predict_files

    _logging.configure('info')
    predict_files(
      Model.load(args.model),
      args.input,
      args.output,
      input_format=args.format,
      output_format=args.output_format,
      batch_size=args.batch_size,
      prefix=args.prefix,
      skip_bad_records=args.skip_bad_records,
    )
    return 0
  if not (args.module and args.job_dir):
    raise ConfigurationError(
      'A checkpoint needs both --module (the trainer) and --job-dir (the '
      f'job). Received: --module={args.module} --job-dir={args.job_dir}'
    )
  argv = [
    '--output',
    args.job_dir,
    '--action',
    'predict',
    '--predict-input',
    *args.input,
    '--predict-output',
    args.output,
    '--predict-format',
    args.format,
    '--predict-output-format',
    args.output_format,
    '--predict-batch-size',
    str(args.batch_size),
    '--predict-prefix',
    args.prefix,
    *rest,
  ]
  if args.checkpoint:
    argv += ['--checkpoint', args.checkpoint]
  if args.skip_bad_records:
    argv.append('--skip-bad-records')
  return _train.run_module(args.module, argv)


def _run_beam(args, rest):
  """`--runner`: the prediction as a Beam pipeline (tensorfx.prediction)."""
  if not args.model or args.module or args.job_dir or args.checkpoint:
    raise ConfigurationError(
      'A Beam pipeline predicts with an exported model: give --model DIR '
      '(tensorfx export writes one from a checkpoint). Received: '
      f'--model={args.model} --module={args.module} '
      f'--job-dir={args.job_dir} --checkpoint={args.checkpoint}'
    )
  from tensorfx import _logging
  from tensorfx.prediction import predict_beam

  _logging.configure('info')
  counts = predict_beam(
    args.model,
    args.input,
    args.output,
    ['--runner', args.runner, *rest],
    input_format=args.format,
    output_format=args.output_format,
    batch_size=args.batch_size,
    prefix=args.prefix,
    skip_bad_records=args.skip_bad_records,
  )
  skipped = counts['bad_records']
  print(
    f'Predicted {counts["predicted"]} records into {args.output}'
    + (
      f' ({_logging.counted(skipped, "bad record")} skipped)' if skipped else ''
    ),
    file=sys.stderr,
  )
  return 0
