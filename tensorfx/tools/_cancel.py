"""`tensorfx cancel`: cancel a Vertex AI job."""

from tensorfx.tools import _jobargs


def add_parser(commands):
  parser = commands.add_parser(
    'cancel',
    help='cancel a Vertex AI training or tuning job',
    description='Asks Vertex AI to cancel the job (it becomes cancelling, '
    'then cancelled); with --wait, follows it until it has ended. A job '
    'that has already ended is an error.',
    epilog='Example: tensorfx cancel 1234567890 --project my-project '
    '--region us-central1',
  )
  _jobargs.add_job_arguments(
    parser, run, 30.0, 'seconds between state checks with --wait'
  )
  parser.add_argument(
    '--wait', action='store_true', help='follow the job until it has ended'
  )


def run(args, rest):
  del rest
  from tensorfx.cloud import _logs

  return _jobargs.run_on_job(_logs.cancel, args, wait=args.wait)
