"""`tensorfx cancel`: cancel a Vertex AI job."""


def add_parser(commands):
  parser = commands.add_parser(
      'cancel', help='cancel a Vertex AI training or tuning job',
      description='Asks Vertex AI to cancel the job (it becomes cancelling, '
      'then cancelled); with --wait, follows it until it has ended. A job '
      'that has already ended is an error.',
      epilog='Example: tensorfx cancel 1234567890 --project my-project '
      '--region us-central1')
  parser.add_argument('job', metavar='JOB',
                      help='a custom job id, or a full resource name '
                      'projects/P/locations/R/(customJobs|'
                      'hyperparameterTuningJobs)/ID')
  parser.add_argument('--project', help='the project (for a job id)')
  parser.add_argument('--region', help='the region (for a job id)')
  parser.add_argument('--wait', action='store_true',
                      help='follow the job until it has ended')
  parser.add_argument('--poll-interval', type=float, default=30.0,
                      help='seconds between state checks with --wait '
                      '(default 30)')
  parser.add_argument('--api-endpoint', help='the Vertex AI endpoint '
                      '(default: REGION-aiplatform.googleapis.com)')
  parser.set_defaults(run=run)


def run(args, rest):
  del rest
  from tensorfx.cloud import _logs
  _logs.cancel(args.job, args.project, args.region,
               api_endpoint=args.api_endpoint, wait=args.wait,
               poll_interval=args.poll_interval)
  return 0
