"""`tensorfx analyze`: analyze data with tf.Transform on Apache Beam."""

_FORMATS = ('auto', 'csv', 'tfrecord', 'parquet')
_PARQUET_SUFFIXES = ('.parquet', '.pq')
# Suffixes of TFRecord files, for --data-format auto.
_TFRECORD_SUFFIXES = (
  '.tfrecord',
  '.tfrecords',
  '.tfrecord.gz',
  '.tfrecords.gz',
  '.tfrecord.gzip',
  '.tfrecord.zz',
)


def add_parser(commands):
  parser = commands.add_parser(
    'analyze',
    help='analyze training data (tf.Transform on Beam)',
    description='Computes statistics and vocabularies and writes the '
    'transform graph to --output. Unknown flags are Beam pipeline options '
    '(e.g. --runner=DataflowRunner --project=P --region=R, or '
    '--direct_num_workers=1); the default runner is the DirectRunner, in '
    'this process, or with a worker process per core from 256 MiB of '
    'files on a machine of 4 cores or more. A second run over the same '
    'files, schema and features reuses the analysis in --output.',
  )
  parser.add_argument(
    '--data-train',
    required=True,
    nargs='+',
    help='the data files or patterns to analyze',
  )
  parser.add_argument('--data-schema', required=True, help='schema YAML')
  parser.add_argument('--data-features', required=True, help='features YAML')
  parser.add_argument(
    '--data-format',
    default='auto',
    choices=_FORMATS,
    help='csv, tfrecord (TFRecord files of tf.Example) '
    'or parquet; auto (the default): tfrecord for files '
    'named *.tfrecord[.gz], parquet for *.parquet, else '
    'csv',
  )
  parser.add_argument(
    '--delimiter', default=',', help='the CSV column delimiter (default ,)'
  )
  parser.add_argument(
    '--skip-header',
    action='store_true',
    help='each CSV file starts with a header line to skip '
    '(columns in schema order)',
  )
  add_csv_arguments(parser)
  parser.add_argument(
    '--skip-bad-records',
    action='store_true',
    help='skip (and count) bad records (CSV rows; '
    'TFRecord records that are not a tf.Example or do not '
    'match the schema) instead of failing',
  )
  parser.add_argument(
    '--compression',
    default='auto',
    choices=['auto', 'none', 'gzip', 'zlib'],
    help='TFRecord compression (auto: by suffix, .gz is GZIP)',
  )
  parser.add_argument(
    '--output', required=True, help='the directory to write the analysis to'
  )
  parser.add_argument(
    '--force',
    action='store_true',
    help='analyze even when --output holds an analysis of the same data',
  )
  parser.add_argument(
    '--log-level',
    type=str.lower,
    default='info',
    choices=['debug', 'info', 'warning', 'error'],
    help="tensorfx's log level; debug also shows Beam's "
    'report of a failed step',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def add_csv_arguments(parser):
  """--header, --na-values and --strip-cells: how CSV files are written."""
  parser.add_argument(
    '--header',
    action='store_true',
    help='the first line of each CSV file names its '
    'columns: matched to the schema by name, in any order; '
    'other columns are ignored',
  )
  parser.add_argument(
    '--na-values',
    metavar='TOKEN,...',
    default='',
    help='texts that mean a missing value in any CSV '
    'column, comma-separated (e.g. NA or NA,?), besides '
    'the empty cell',
  )
  parser.add_argument(
    '--strip-cells',
    action='store_true',
    help='drop the spaces around each CSV cell (files '
    'with a space after each delimiter)',
  )


def na_values(text):
  """The tokens of a --na-values flag: 'NA,?' -> ['NA', '?']."""
  return [token for token in (text or '').split(',') if token]


def data_format(paths, requested='auto'):
  """The format of data files: csv, tfrecord or parquet (by name if 'auto')."""
  if requested != 'auto':
    return requested
  names = [p.lower() for p in paths]
  if names and all(n.endswith(_TFRECORD_SUFFIXES) for n in names):
    return 'tfrecord'
  if names and all(n.endswith(_PARQUET_SUFFIXES) for n in names):
    return 'parquet'
  return 'csv'


def run(args, beam_args):
  from tensorfx import _logging
  from tensorfx import data

  _logging.configure(args.log_level)
  kind = data_format(args.data_train, args.data_format)
  dataset: data.DataSet
  if kind == 'parquet':
    dataset = data.ParquetDataSet(
      args.data_schema, features=args.data_features, train=args.data_train
    )
  elif kind == 'tfrecord':
    compression = None if args.compression == 'none' else args.compression
    dataset = data.ExamplesDataSet(
      args.data_schema,
      features=args.data_features,
      compression=compression,
      skip_bad_records=args.skip_bad_records,
      train=args.data_train,
    )
  else:
    dataset = data.CsvDataSet(
      args.data_schema,
      features=args.data_features,
      delimiter=args.delimiter,
      skip_header=args.skip_header,
      skip_bad_records=args.skip_bad_records,
      header=args.header,
      na_values=na_values(args.na_values),
      strip_cells=args.strip_cells,
      train=args.data_train,
    )
  metadata = dataset.analyze(
    args.output, pipeline_args=beam_args, reuse=not args.force
  )
  print(f'Analyzed {metadata.instances} instances into {args.output}')
  return 0
