"""A Vertex AI job's log lines (Cloud Logging) and its cancellation.

Vertex AI writes each replica's stdout and stderr to Cloud Logging under
the monitored resource `ml_job` (label `job_id`; the replica in the
label `ml.googleapis.com/task_name`, e.g. workerpool0-0). `logs` reads
them with the Cloud Logging client's HTTP transport (`entries.list`),
oldest first, and with `follow` keeps polling for new ones until the job
has ended. `cancel` asks Vertex AI to cancel a custom or tuning job.
"""

from __future__ import annotations

import collections
import datetime
import sys
import time
from typing import Any, Callable, TextIO

from tensorfx.cloud import _jobs
from tensorfx.cloud import _retry
from tensorfx.cloud._errors import CloudError
from tensorfx.cloud._errors import JobFailedError

# Vertex's states in which a job may still write logs.
_RUNNING = frozenset(
  {
    'JOB_STATE_QUEUED',
    'JOB_STATE_PENDING',
    'JOB_STATE_RUNNING',
    'JOB_STATE_CANCELLING',
    'JOB_STATE_UPDATING',
    'JOB_STATE_PAUSED',
  }
)
# Entries of the last seconds may still arrive out of order.
_SETTLE = datetime.timedelta(seconds=10)
_TASK_LABEL = 'ml.googleapis.com/task_name'


def logging_client(project: str, api_endpoint: str | None = None) -> Any:
  """A Cloud Logging client (HTTP transport) for a project.

  Example:
    >>> client = logging_client('my-project')  # doctest: +SKIP

  Args:
    project: the project whose logs are read.
    api_endpoint: another endpoint ('http://host:port' or a URL), or None
      for logging.googleapis.com. A plain http:// endpoint gets anonymous
      credentials, since real ones must never travel unencrypted.
  """
  from google.cloud import logging as cloud_logging

  credentials = None
  options = None
  if api_endpoint:
    options = {'api_endpoint': api_endpoint}
    if api_endpoint.startswith('http://'):
      from google.auth.credentials import AnonymousCredentials

      credentials = AnonymousCredentials()
  return cloud_logging.Client(
    project=project,
    credentials=credentials,
    client_options=options,
    _use_grpc=False,
  )


def _job_filter(job_id: str, since: str) -> str:
  # Custom and tuning jobs alike log under `ml_job`, by their own id.
  return (
    f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"'
    f' AND timestamp>="{since}"'
  )


def format_entry(entry: Any) -> str:
  """One log entry as a line: time, replica, severity, text."""
  stamp = entry.timestamp
  when = stamp.strftime('%H:%M:%S') if stamp else '--:--:--'
  task = (entry.labels or {}).get(_TASK_LABEL) or (
    entry.resource.labels.get('task_name') if entry.resource else None
  )
  payload = entry.payload
  if isinstance(payload, dict):
    payload = payload.get('message') or payload
  text = str(payload).rstrip('\n')
  severity = entry.severity or 'DEFAULT'
  return f'{when} [{task or "job"}] {severity} {text}'


def logs(
  job: str,
  project: str | None = None,
  region: str | None = None,
  *,
  follow: bool = False,
  api_endpoint: str | None = None,
  logging_endpoint: str | None = None,
  poll_interval: float = _jobs.DEFAULT_POLL_SECONDS,
  out: TextIO | None = None,
  sleep: Callable[[float], None] = time.sleep,
) -> int:
  """Prints a Vertex AI job's log lines, oldest first.

  Example:
    >>> logs('1234', 'my-project', 'us-central1', follow=True)  # doctest: +SKIP
    12:03:11 [workerpool0-0] INFO 12:03:11 INFO Training from step 0 to 1000

  Args:
    job: a job id (a custom job) or full resource name (custom or tuning).
    project: the project, for an id.
    region: the region, for an id.
    follow: keep printing new lines until the job has ended.
    api_endpoint: the Vertex AI endpoint (reads the job's state and start).
    logging_endpoint: the Cloud Logging endpoint; by default Google's.
    poll_interval: seconds between reads when following.
    out: where lines are printed; by default stdout.
    sleep: how to wait between reads (tests pass a stub).

  Returns:
    How many lines were printed.

  Raises:
    ConfigurationError: a malformed job name, or an id without project and
      region.
    CloudError: reading the job or its logs failed.
  """
  out = out or sys.stdout
  name, match, client = _jobs.open_job(job, project, region, api_endpoint)
  found = _jobs.read_job(client, name)
  since = found.get('createTime') or (
    datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
  ).strftime('%Y-%m-%dT%H:%M:%SZ')
  reader = logging_client(match['project'], logging_endpoint)
  seen = collections.OrderedDict()
  printed = 0
  while True:
    state = found.get('state', 'JOB_STATE_UNSPECIFIED')
    for entry in _entries(
      reader, match, since, _retry.POLL_DEADLINE if follow else None
    ):
      key = entry.insert_id or (entry.timestamp, str(entry.payload))
      if key in seen:
        continue
      seen[key] = True
      if len(seen) > 100_000:
        seen.popitem(last=False)
      print(format_entry(entry), file=out, flush=True)
      printed += 1
      if entry.timestamp:
        # Read again from a little before the newest line: late entries.
        start = (entry.timestamp - _SETTLE).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
        since = max(since, start)
    if not follow or state not in _RUNNING:
      return printed
    sleep(poll_interval)
    found = _jobs.read_job(client, name, _retry.POLL_DEADLINE)


def _entries(
  reader: Any, match: Any, since: str, deadline: float | None = None
) -> Any:
  from google.api_core import exceptions
  from google.cloud import logging as cloud_logging

  try:
    # A read starts over on a failure: pages already read are read again.
    return _retry.call(
      f'Cloud Logging: reading the logs of job {match["id"]}',
      lambda: list(
        reader.list_entries(
          resource_names=[f'projects/{match["project"]}'],
          filter_=_job_filter(match['id'], since),
          order_by=cloud_logging.ASCENDING,
          page_size=1000,
        )
      ),
      deadline=deadline,
    )
  except exceptions.GoogleAPICallError as e:
    raise CloudError(
      f'Cloud Logging: reading the logs of job {match["id"]} '
      f'failed: {e.code} {_jobs.api_message(e)}'
    ) from None


def cancel(
  job: str,
  project: str | None = None,
  region: str | None = None,
  *,
  api_endpoint: str | None = None,
  wait: bool = False,
  poll_interval: float = _jobs.DEFAULT_POLL_SECONDS,
  out: TextIO | None = None,
) -> dict[str, Any]:
  """Asks Vertex AI to cancel a custom or tuning job.

  Cancelling is asynchronous: the job moves to JOB_STATE_CANCELLING, then
  JOB_STATE_CANCELLED. A job that has already ended is an error.

  Example:
    >>> cancel('1234', 'my-project', 'us-central1')  # doctest: +SKIP
    Cancelling projects/my-project/locations/us-central1/customJobs/1234

  Args:
    job: a job id (a custom job) or full resource name (custom or tuning).
    project: the project, for an id.
    region: the region, for an id.
    api_endpoint: the Vertex AI endpoint; by default the region's.
    wait: follow the job until it has ended.
    poll_interval: seconds between state checks when waiting.
    out: where progress is printed; by default stdout.

  Returns:
    The job (a JSON dict) as last read.

  Raises:
    ConfigurationError: a malformed job name, or an id without project and
      region.
    CloudError: the job has already ended, or the call failed.
  """
  from google.api_core import exceptions

  out = out or sys.stdout
  name, _, client = _jobs.open_job(job, project, region, api_endpoint)
  found = _jobs.read_job(client, name)
  state = found.get('state', 'JOB_STATE_UNSPECIFIED')
  if state in _jobs.TERMINAL_STATES:
    raise CloudError(
      f'job {name} has already ended '
      f'({_jobs.short_state(state)}); there is nothing to '
      'cancel.'
    )
  request = (
    client.cancel_custom_job
    if '/customJobs/' in name
    else client.cancel_hyperparameter_tuning_job
  )
  try:
    # Asking again to cancel a job being cancelled is harmless.
    _retry.call(f'Vertex AI: cancelling {name}', request, name=name)
  except exceptions.GoogleAPICallError as e:
    raise CloudError(
      f'Vertex AI: cancelling {name} failed: {e.code} {_jobs.api_message(e)}'
    ) from None
  print(f'Cancelling {name}', file=out, flush=True)
  if not wait:
    return _jobs.read_job(client, name)
  try:
    return _jobs.wait(name, poll_interval=poll_interval, out=out, client=client)
  except JobFailedError as e:
    if e.state == 'JOB_STATE_CANCELLED':
      return e.job or {}
    raise
