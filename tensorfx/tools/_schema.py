"""`tensorfx schema infer`: a schema (and starter features) from data files."""

import argparse
from typing import Any

from tensorfx.tools import _analyze


def add_parser(commands: Any) -> None:
  parser = commands.add_parser(
    'schema', help='infer a schema from data files', description='Schema tools.'
  )
  actions = parser.add_subparsers(dest='schema_command', metavar='ACTION')
  actions.required = True
  infer = actions.add_parser(
    'infer',
    help='write a schema (and features) inferred from data files',
    description='Reads CSV, Parquet or TFRecord (tf.Example) files (every '
    'row, or the first --sample N) and writes a schema: integer, real or '
    'discrete per column from its values; missing: mean for a number '
    "column with holes (a text column's missing value is out of "
    'vocabulary); a comment over each field says what was seen. Printed '
    'without --output. The files it writes train as they are.',
    epilog='Example: tensorfx schema infer penguins.csv --header '
    '--na-values NA --output schema.yaml --features features.yaml '
    '--target species',
  )
  infer.add_argument(
    'files',
    nargs='+',
    metavar='FILE',
    help='data files or patterns (local or gs://)',
  )
  infer.add_argument(
    '--format',
    dest='data_format',
    default='auto',
    choices=('auto', 'csv', 'parquet', 'tfrecord'),
    help="the files' format (default: by name: "
    '*.parquet, *.tfrecord[.gz], else csv)',
  )
  infer.add_argument(
    '--delimiter', default=',', help='the CSV column delimiter (default ,)'
  )
  _analyze.add_csv_arguments(infer)
  infer.add_argument(
    '--sample',
    type=int,
    metavar='N',
    help='read only the first N rows (default: all)',
  )
  infer.add_argument(
    '--output',
    metavar='PATH',
    help='write the schema YAML here (default: stdout)',
  )
  infer.add_argument(
    '--features',
    metavar='PATH',
    help='also write a starter feature set here: zscore '
    'for numbers, onehot for small vocabularies, an '
    'embedding for large ones',
  )
  infer.add_argument(
    '--target',
    metavar='FIELD',
    help='the field the model predicts (the target of --features)',
  )
  infer.set_defaults(run=run)


def run(args: argparse.Namespace, unused_rest: Any = None) -> int:

  from tensorfx import _yaml
  from tensorfx._errors import DataError
  from tensorfx.data import _inference
  from tensorfx.data import _inferfiles

  if args.sample is not None and args.sample < 1:
    raise DataError(f'--sample must be at least 1. Received: {args.sample}')
  if args.target and not args.features:
    raise DataError(
      '--target names the target of --features; give --features PATH too.'
    )
  columns = _inferfiles.observe(
    args.files,
    header=args.header,
    na_values=_analyze.na_values(args.na_values),
    delimiter=args.delimiter,
    sample=args.sample,
    data_format=args.data_format,
    strip_cells=args.strip_cells,
  )
  text = _inference.format_schema(columns, ', '.join(args.files))
  if args.features:
    _yaml.write_text(
      args.features, _inference.starter_features(columns, args.target)
    )
  if args.output:
    _yaml.write_text(args.output, text)
    print(f'Wrote the schema of {len(columns)} columns to {args.output}')
  else:
    print(text, end='')
  return 0
