"""`tensorfx logs`: print a Vertex AI job's log lines."""

from tensorfx.tools import _jobargs


def add_parser(commands):
  parser = commands.add_parser(
    'logs',
    help="print a Vertex AI job's log lines",
    description="Prints the job's log lines from Cloud Logging (every "
    "replica's stdout and stderr), oldest first, each with its time and "
    'replica (workerpool0-0 is the chief). With --follow, keeps printing '
    'new lines until the job has ended.',
    epilog='Example: tensorfx logs 1234567890 --project my-project '
    '--region us-central1 --follow',
  )
  _jobargs.add_job_arguments(
    parser, run, 10.0, 'seconds between reads with --follow'
  )
  parser.add_argument(
    '--follow',
    '-f',
    action='store_true',
    help='keep printing new lines until the job has ended',
  )
  parser.add_argument(
    '--logging-endpoint',
    help='the Cloud Logging endpoint (default: logging.googleapis.com)',
  )


def run(args, rest):
  del rest
  from tensorfx.cloud import _logs

  return _jobargs.run_on_job(
    _logs.logs,
    args,
    follow=args.follow,
    logging_endpoint=args.logging_endpoint,
  )
