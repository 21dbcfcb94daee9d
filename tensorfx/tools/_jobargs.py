"""The arguments naming a Vertex AI job: `status`, `logs` and `cancel`."""

from typing import Any


def add_job_arguments(
  parser: Any, run: Any, poll_interval: float, poll_help: str
) -> None:
  """Adds JOB, --project, --region, --poll-interval and --api-endpoint.

  Example:
    >>> add_job_arguments(parser, run, 30.0, 'seconds between state checks')

  Args:
    parser: the command's `argparse` parser.
    run: what runs the command, `run(args, rest)` (see `run_on_job`).
    poll_interval: the default of --poll-interval, in seconds.
    poll_help: what --poll-interval paces (its default is added).
  """
  parser.add_argument(
    'job',
    metavar='JOB',
    help='a custom job id, or a full resource name '
    'projects/P/locations/R/(customJobs|'
    'hyperparameterTuningJobs)/ID',
  )
  parser.add_argument('--project', help='the project (for a job id)')
  parser.add_argument('--region', help='the region (for a job id)')
  parser.add_argument(
    '--poll-interval',
    type=float,
    default=poll_interval,
    help=f'{poll_help} (default {poll_interval:g})',
  )
  parser.add_argument(
    '--api-endpoint',
    help='the Vertex AI endpoint (default: REGION-aiplatform.googleapis.com)',
  )
  parser.set_defaults(run=run)


def run_on_job(function: Any, args: Any, **kwargs: Any) -> int:
  """Calls a `tensorfx.cloud` function on the job the arguments name; 0."""
  function(
    args.job,
    args.project,
    args.region,
    api_endpoint=args.api_endpoint,
    poll_interval=args.poll_interval,
    **kwargs,
  )
  return 0
