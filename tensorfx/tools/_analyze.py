"""`tensorfx analyze`: analyze data with tf.Transform on Apache Beam."""



def add_parser(commands):
  parser = commands.add_parser(
      'analyze', help='analyze training data (tf.Transform on Beam)',
      description='Computes statistics and vocabularies and writes the '
      'transform graph to --output. Unknown flags are Beam pipeline options '
      '(e.g. --runner=DataflowRunner --project=P --region=R); the default '
      'runner is the in-process DirectRunner.')
  parser.add_argument('--data-train', required=True, nargs='+',
                      help='the data files or patterns to analyze')
  parser.add_argument('--data-schema', required=True, help='schema YAML')
  parser.add_argument('--data-features', required=True, help='features YAML')
  parser.add_argument('--data-format', default='csv', choices=['csv'],
                      help='the format of the data files')
  parser.add_argument('--output', required=True,
                      help='the directory to write the analysis to')
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, beam_args):
  from tensorfx import _logging  # pylint: disable=g-import-not-at-top
  from tensorfx import data  # pylint: disable=g-import-not-at-top
  _logging.configure('info')
  dataset = data.CsvDataSet(args.data_schema, features=args.data_features,
                            train=args.data_train)
  metadata = dataset.analyze(args.output, pipeline_args=beam_args)
  print(f'Analyzed {metadata.instances} instances into {args.output}')
  return 0
