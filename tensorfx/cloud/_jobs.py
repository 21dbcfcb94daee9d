"""Submitting a `JobSpec` to Vertex AI and following the job to its end.

`submit` checks everything it can locally (the module is in the package,
every local package exists, the package builds, the request is well
formed), then that the staging bucket exists, and only then uploads the
trainer and creates the job: a bad input never leaves half a submission
behind.

The Vertex AI client (`google.cloud.aiplatform_v1.JobServiceClient`) uses the
REST transport against the region's endpoint
(`REGION-aiplatform.googleapis.com`) with the application default
credentials. `api_endpoint` points it elsewhere
(a private endpoint, or a local test server); a plain `http://` endpoint gets
anonymous credentials, since real ones must never travel unencrypted. Every
call is retried while it fails transiently (`_retry`); a followed job's
state is read through an outage of minutes.
"""

import dataclasses
import datetime
import json
import os
import re
import sys
import tempfile
import time

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _package
from tensorfx.cloud import _retry
from tensorfx.cloud import _storage
from tensorfx.cloud._errors import CloudError
from tensorfx.cloud._errors import JobFailedError

SUCCEEDED = 'JOB_STATE_SUCCEEDED'
# States a job never leaves. Only SUCCEEDED is a success.
TERMINAL_STATES = frozenset(
  {
    SUCCEEDED,
    'JOB_STATE_FAILED',
    'JOB_STATE_CANCELLED',
    'JOB_STATE_EXPIRED',
    'JOB_STATE_PARTIALLY_SUCCEEDED',
  }
)

DEFAULT_POLL_SECONDS = 30.0

_NAME = re.compile(
  r'^projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/'
  r'(?P<kind>customJobs|hyperparameterTuningJobs)/'
  r'(?P<id>[^/]+)$'
)
_KINDS = {
  'customJob': 'customJobs',
  'hyperparameterTuningJob': 'hyperparameterTuningJobs',
}


def job_client(region, api_endpoint=None):
  """A Vertex AI `JobServiceClient` (REST) for a region.

  Example:
    >>> client = job_client('us-central1')  # doctest: +SKIP

  Args:
    region: the job's region; picks the regional endpoint.
    api_endpoint: another endpoint ('host[:port]' or a URL), or None.
  """
  from google.api_core.client_options import ClientOptions
  from google.cloud import aiplatform_v1

  endpoint = api_endpoint or f'{region}-aiplatform.googleapis.com'
  credentials = None
  if endpoint.startswith('http://'):
    from google.auth.credentials import AnonymousCredentials

    credentials = AnonymousCredentials()
  return aiplatform_v1.JobServiceClient(
    transport='rest',
    credentials=credentials,
    client_options=ClientOptions(api_endpoint=endpoint),
  )


def _proto_request(request):
  """The create request (JSON) as the client's request message."""
  from google.cloud import aiplatform_v1

  if 'customJob' in request:
    cls = aiplatform_v1.CreateCustomJobRequest
  else:
    cls = aiplatform_v1.CreateHyperparameterTuningJobRequest
  # Unknown fields are errors: a typo here must not vanish silently.
  return cls.from_json(json.dumps(request), ignore_unknown_fields=False)


def request_json(message):
  """A request or job message as JSON text, as Vertex AI's REST API reads it.

  camelCase field names and enum names; fields left at their defaults are
  omitted, exactly as the client omits them on the wire.
  """
  from google.protobuf import json_format

  return json_format.MessageToJson(type(message).pb(message), indent=2)


def _as_dict(message):
  from google.protobuf import json_format

  return json_format.MessageToDict(type(message).pb(message))


def _api_message(error):
  """The service's explanation, without the REST client's 'POST url: '."""
  return re.sub(r'^[A-Z]+ \S+: ', '', str(error.message or error))


def _region(name):
  """The region of a full job name (which resolve_name makes)."""
  match = _NAME.match(name)
  if match is None:
    raise CloudError(f'Not a Vertex AI job name. Received: {name!r}')
  return match['region']


def _console_url(name):
  match = _NAME.match(name)
  if not match:
    return None
  kind = (
    'training' if match['kind'] == 'customJobs' else 'hyperparameter-tuning'
  )
  return (
    f'https://console.cloud.google.com/agent-platform/locations/'
    f'{match["region"]}/{kind}/{match["id"]}?project='
    f'{match["project"]}'
  )


def _local_packages(packages):
  """Splits extra packages into gs:// URIs and local files (checked)."""
  uris, files = [], []
  for package in packages:
    package = os.fspath(package)
    if package.startswith('gs://'):
      _storage.parse_gcs_uri(package)
      uris.append(package)
    elif os.path.isfile(package):
      files.append(package)
    else:
      raise ConfigurationError(
        f'--packages: no such file (give a local file or a gs:// URI). '
        f'Received: package={package!r}'
      )
  return uris, files


def _say(out, text):
  print(text, file=out, flush=True)


def submit(
  spec,
  *,
  package_path=None,
  packages=(),
  dry_run=False,
  api_endpoint=None,
  follow=False,
  poll_interval=DEFAULT_POLL_SECONDS,
  out=None,
  storage_client=None,
):
  """Stages the trainer and creates the Vertex AI job.

  In order: the module is checked in the package and every local package is
  checked to exist; the source distribution is built locally; the request
  is built and validated; then (unless a dry run) the staging bucket is
  checked, the packages are uploaded, and the job is created. A dry run
  builds the package (to know its file name) but makes no network call: it
  prints the exact request and returns it.

  Example:
    >>> spec = job_spec(project='my-project', region='us-central1',
    ...                 job_name='iris_1', staging_bucket='gs://my-bucket',
    ...                 module_name='iris.trainer',
    ...                 job_dir='gs://my-bucket/iris/1')  # doctest: +SKIP
    >>> job = submit(spec, package_path='samples/iris',
    ...              follow=True)  # doctest: +SKIP

  Args:
    spec: the `JobSpec`.
    package_path: the trainer's code (see `tensorfx.cloud.build_sdist`), or
      None when the spec's `package_uris` or custom images suffice.
    packages: extra packages to install: local files (uploaded) or gs://
      URIs (e.g. a tensorfx sdist published by cloudbuild.yaml).
    dry_run: print the request instead of uploading and creating.
    api_endpoint: the Vertex AI endpoint; by default the region's.
    follow: after creating, wait for the job to end (see `wait`).
    poll_interval: seconds between state checks when following.
    out: where progress is printed; by default stdout.
    storage_client: a `google.cloud.storage.Client`; by default one from
      `tensorfx.cloud.storage_client()`.

  Returns:
    The created job as Vertex AI returned it (a JSON dict; the final state
    when following), or in a dry run the request (a JSON dict with `parent`
    and `customJob` or `hyperparameterTuningJob`).

  Raises:
    ConfigurationError: a bad input (module not in the package, missing
      package file, staging bucket that does not exist), before any upload.
    CloudError: an upload or the create call failed.
    JobFailedError: when following, the job failed or was cancelled.
  """
  out = out or sys.stdout
  uris, files = _local_packages(packages)
  if package_path is not None:
    if all(p is None or p.image_uri for p in spec.pools()):
      raise ConfigurationError(
        '--package-path: every pool runs a custom container image, so '
        'the package would not be used; drop it or the image. Received: '
        f'package_path={os.fspath(package_path)!r}'
      )
    if not spec.python_module:
      raise ConfigurationError(
        '--module-name: a --package-path trainer needs the module to run. '
        'Received: module_name=None'
      )
    _package.check_module(package_path, spec.python_module)
  # Vertex lays packages out per job; gcloud did the same.
  destination = _storage.join(
    spec.staging_location, spec.display_name, 'packages'
  )
  with tempfile.TemporaryDirectory(prefix='tensorfx-submit-') as workdir:
    if package_path is not None:
      files.insert(
        0, _package.build_sdist(package_path, spec.python_module, workdir)
      )
    uploads = [
      (f, _storage.join(destination, os.path.basename(f))) for f in files
    ]
    staged = dataclasses.replace(
      spec,
      package_uris=tuple(u for _, u in uploads)
      + spec.package_uris
      + tuple(uris),
    )
    request = _proto_request(staged.request())
    if dry_run:
      _say(out, request_json(request))
      return _as_dict(request)
    client = storage_client
    if uploads:
      client = client or _storage.storage_client(spec.project)
      _storage.check_bucket(spec.staging_location, client)
      for local, uri in uploads:
        _storage.upload(local, uri, client)
        _say(out, f'Staged {os.path.basename(local)} -> {uri}')
  job = _create(request, spec.region, api_endpoint)
  name = job['name']
  _say(out, f'Created {name} ({job.get("state", "JOB_STATE_PENDING")}).')
  console = _console_url(name)
  if console:
    _say(out, f'Console: {console}')
  _say(out, f'Follow:  tensorfx status {name}')
  if staged.job_dir:
    _say(out, f'Outputs: {staged.job_dir}')
  if follow:
    return wait(
      name, api_endpoint=api_endpoint, poll_interval=poll_interval, out=out
    )
  return job


def _create(request, region, api_endpoint):
  from google.api_core import exceptions

  client = job_client(region, api_endpoint)
  try:
    create = (
      client.create_custom_job
      if 'custom_job' in type(request).meta.fields
      else client.create_hyperparameter_tuning_job
    )
    job = _retry.call('Vertex AI: creating the job', create, request=request)
  except exceptions.GoogleAPICallError as e:
    raise CloudError(
      f'Vertex AI: creating the job failed: {e.code} {_api_message(e)}'
    ) from None
  return _as_dict(job)


def resolve_name(job, project=None, region=None):
  """A job's full resource name from a name or an id.

  Example:
    >>> resolve_name('123', 'my-project', 'us-central1')
    'projects/my-project/locations/us-central1/customJobs/123'
    >>> resolve_name('projects/p/locations/europe-west4/'
    ...              'hyperparameterTuningJobs/9')
    'projects/p/locations/europe-west4/hyperparameterTuningJobs/9'

  Raises:
    ConfigurationError: an id without project and region, or a malformed
      name.
  """
  job = str(job).strip()
  if _NAME.match(job):
    return job
  if '/' in job or not job:
    raise ConfigurationError(
      'JOB: expected a job id or projects/P/locations/R/customJobs/ID. '
      f'Received: job={job!r}'
    )
  if not project or not region:
    raise ConfigurationError(
      f'JOB: a job id needs --project and --region. Received: '
      f'project={project!r}, region={region!r}'
    )
  return f'projects/{project}/locations/{region}/customJobs/{job}'


def open_job(job, project=None, region=None, api_endpoint=None):
  """`(name, parts, client)` of a job named by id or full name.

  What `status`, `logs` and `cancel` start with: the full resource name,
  its parts (a match of `NAME`: `project`, `region`, `kind`, `id`) and a
  client of the job's regional endpoint.

  Example:
    >>> name, parts, client = open_job('123', 'p', 'us-central1')  # doctest: +SKIP

  Raises:
    ConfigurationError: an id without project and region, or a malformed
      name.
  """
  name = resolve_name(job, project, region)
  parts = _NAME.match(name)
  assert parts is not None  # resolve_name returns only names that match.
  return name, parts, job_client(parts['region'], api_endpoint)


def _get(client, name, deadline=None):
  from google.api_core import exceptions

  read = (
    client.get_custom_job
    if '/customJobs/' in name
    else client.get_hyperparameter_tuning_job
  )
  try:
    return _as_dict(
      _retry.call(
        f'Vertex AI: reading {name}', read, name=name, deadline=deadline
      )
    )
  except exceptions.GoogleAPICallError as e:
    raise CloudError(
      f'Vertex AI: reading {name} failed: {e.code} {_api_message(e)}'
    ) from None


def _short(state):
  return state.replace('JOB_STATE_', '').lower()


def _trial_summary(job):
  trials = job.get('trials') or []
  if not trials:
    return None
  counts: dict[str, int] = {}
  for trial in trials:
    state = trial.get('state', 'STATE_UNSPECIFIED').lower()
    counts[state] = counts.get(state, 0) + 1
  parts = ', '.join(f'{n} {s}' for s, n in sorted(counts.items()))
  return f'trials: {parts} (of {job.get("maxTrialCount", "?")})'


def _failure(name, job, state):
  error = job.get('error') or {}
  message = error.get('message') or 'no error message'
  code = error.get('code')
  detail = f'{message} (code {code})' if code else message
  return JobFailedError(
    f'job {name} ended {_short(state)}: {detail}', job=job, state=state
  )


def wait(
  job_name,
  *,
  api_endpoint=None,
  poll_interval=DEFAULT_POLL_SECONDS,
  out=None,
  timeout=None,
  client=None,
):
  """Polls a job until it ends, printing each change of state.

  Example:
    >>> job = wait('projects/p/locations/us-central1/customJobs/1')  # doctest: +SKIP
    12:00:05 customJobs/1: running
    12:09:41 customJobs/1: succeeded

  Args:
    job_name: the job's full resource name.
    api_endpoint: the Vertex AI endpoint; by default the region's.
    poll_interval: seconds between checks.
    out: where states are printed; by default stdout.
    timeout: give up (CloudError) after this many seconds; None waits on.
    client: a `JobServiceClient`; by default `job_client(region, ...)`.

  Returns:
    The job (a JSON dict) in state JOB_STATE_SUCCEEDED.

  Raises:
    JobFailedError: the job failed, was cancelled or expired; the message
      has the job's error.
    CloudError: reading the job failed, or the timeout passed.
  """
  out = out or sys.stdout
  name = resolve_name(job_name)
  region = _region(name)
  client = client or job_client(region, api_endpoint)
  short_name = '/'.join(name.split('/')[-2:])
  deadline = None if timeout is None else time.monotonic() + timeout
  last_state = last_trials = None
  while True:
    # A follower waits out an API outage of minutes.
    job = _get(client, name, _retry.POLL_DEADLINE)
    state = job.get('state', 'JOB_STATE_UNSPECIFIED')
    trials = _trial_summary(job)
    if state != last_state or trials != last_trials:
      now = datetime.datetime.now().strftime('%H:%M:%S')
      _say(
        out,
        f'{now} {short_name}: {_short(state)}'
        + (f'; {trials}' if trials else ''),
      )
      last_state, last_trials = state, trials
    if state in TERMINAL_STATES:
      break
    if deadline is not None and time.monotonic() > deadline:
      raise CloudError(
        f'gave up waiting for {name} after {timeout} s; it is {_short(state)}.'
      )
    time.sleep(poll_interval)
  if state != SUCCEEDED:
    raise _failure(name, job, state)
  output = (
    (job.get('jobSpec') or job.get('trialJobSpec') or {})
    .get('baseOutputDirectory', {})
    .get('outputUriPrefix')
  )
  if output:
    _say(out, f'Outputs: {output}')
  return job


def status(
  job,
  project=None,
  region=None,
  *,
  follow=True,
  api_endpoint=None,
  poll_interval=DEFAULT_POLL_SECONDS,
  out=None,
):
  """A job's state; by default, follows it until it ends.

  Example:
    >>> status('1234', 'my-project', 'us-central1')  # doctest: +SKIP

  Args:
    job: a job id (a custom job) or full resource name (custom or tuning).
    project: the project, for an id.
    region: the region, for an id.
    follow: wait for the job to end (see `wait`); else read it once.
    api_endpoint: the Vertex AI endpoint; by default the region's.
    poll_interval: seconds between checks.
    out: where states are printed; by default stdout.

  Returns:
    The job (a JSON dict).

  Raises:
    JobFailedError: the job failed, was cancelled or expired.
    CloudError: reading it failed.
  """
  out = out or sys.stdout
  name, _, client = open_job(job, project, region, api_endpoint)
  if follow:
    return wait(name, poll_interval=poll_interval, out=out, client=client)
  found = _get(client, name)
  state = found.get('state', 'JOB_STATE_UNSPECIFIED')
  trials = _trial_summary(found)
  _say(out, f'{name}: {_short(state)}' + (f'; {trials}' if trials else ''))
  if state in TERMINAL_STATES and state != SUCCEEDED:
    raise _failure(name, found, state)
  return found


# For the other job commands (logs, cancel).
NAME = _NAME
read_job = _get
api_message = _api_message
short_state = _short
