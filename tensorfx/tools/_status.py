"""`tensorfx status`: follow a Vertex AI job until it ends."""

from tensorfx.tools import _jobargs


def add_parser(commands):
  parser = commands.add_parser(
    'status',
    help='follow a Vertex AI training or tuning job',
    description="Prints the job's state each time it changes until the "
    "job ends (or once, with --once). Exits non-zero, with the job's "
    'error, if it failed, was cancelled or expired.',
    epilog='Example: tensorfx status 1234567890 --project my-project '
    '--region us-central1',
  )
  _jobargs.add_job_arguments(parser, run, 30.0, 'seconds between state checks')
  parser.add_argument(
    '--once', action='store_true', help='print the current state and exit'
  )


def run(args, rest):
  del rest
  from tensorfx.cloud import _jobs

  return _jobargs.run_on_job(_jobs.status, args, follow=not args.once)
