"""`tensorfx status`: follow a Vertex AI job until it ends."""


def add_parser(commands):
  parser = commands.add_parser(
      'status', help='follow a Vertex AI training or tuning job',
      description='Prints the job\'s state each time it changes until the '
      'job ends (or once, with --once). Exits non-zero, with the job\'s '
      'error, if it failed, was cancelled or expired.',
      epilog='Example: tensorfx status 1234567890 --project my-project '
      '--region us-central1')
  parser.add_argument('job', metavar='JOB',
                      help='a custom job id, or a full resource name '
                      'projects/P/locations/R/(customJobs|'
                      'hyperparameterTuningJobs)/ID')
  parser.add_argument('--project', help='the project (for a job id)')
  parser.add_argument('--region', help='the region (for a job id)')
  parser.add_argument('--once', action='store_true',
                      help='print the current state and exit')
  parser.add_argument('--poll-interval', type=float, default=30.0,
                      help='seconds between state checks (default 30)')
  parser.add_argument('--api-endpoint', help='the Vertex AI endpoint '
                      '(default: REGION-aiplatform.googleapis.com)')
  parser.set_defaults(run=run)


def run(args, rest):
  del rest
  from tensorfx.cloud import _jobs
  _jobs.status(args.job, args.project, args.region, follow=not args.once,
               api_endpoint=args.api_endpoint,
               poll_interval=args.poll_interval)
  return 0
