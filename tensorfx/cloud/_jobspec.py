"""`JobSpec`: a Vertex AI training job, and the request it becomes.

`JobSpec` says everything a submission needs: where (project, region), what
runs (the trainer package and module, or a container image), on what
(`WorkerPool`s for the chief, workers, parameter servers and evaluator), for
how long, as whom, and, for tuning, the `StudySpec`. `JobSpec.request()`
turns it into the JSON body of Vertex AI's `customJobs.create` (or
`hyperparameterTuningJobs.create`) request.

Vertex AI's worker pools are positional: [0] chief (exactly one replica),
[1] workers, [2] parameter servers, [3] evaluator. A pool that is not used
but precedes one that is becomes an empty placeholder `{}`.
"""

import dataclasses
import re
import types
from typing import Any, Mapping

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _argchecks
from tensorfx.cloud import _images
from tensorfx.cloud import _storage
from tensorfx.cloud import _vertexschema
from tensorfx.cloud._studyspec import StudySpec
from tensorfx.cloud._workerpool import ROLES
from tensorfx.cloud._workerpool import WorkerPool

_LABEL_KEY = re.compile(r'^[a-z][a-z0-9_-]{0,62}$')
_LABEL_VALUE = re.compile(r'^[a-z0-9_-]{0,63}$')
_PROJECT = re.compile(r'^[a-z0-9][a-z0-9.:-]{3,62}[a-z0-9]$')
_REGION = re.compile(r'^[a-z]+-[a-z]+[0-9]+$')


@dataclasses.dataclass(frozen=True)
class JobSpec:
  """Everything a Vertex AI training job submission needs.

  Build one directly, or from flags and a config file with `job_spec()`.
  `package_uris` are `gs://` URIs; `submit()` fills in the trainer's after
  uploading it.

  Example:
    >>> spec = JobSpec(project='my-project', region='us-central1',
    ...                display_name='iris_1',
    ...                staging_location='gs://my-bucket/staging',
    ...                python_module='iris.trainer',
    ...                package_uris=('gs://my-bucket/iris-0.0.0.tar.gz',),
    ...                job_dir='gs://my-bucket/iris/1',
    ...                workers=WorkerPool('n1-standard-4', replica_count=2))
    >>> [p and p.replica_count for p in spec.pools()]
    [1, 2, None, None]

  Attributes:
    project: the Google Cloud project id.
    region: the Vertex AI region, e.g. 'us-central1'.
    display_name: the job's name (`--job-name`).
    staging_location: the `gs://` prefix packages are uploaded under.
    python_module: the module run as `python -m` (Python package pools).
    package_uris: the `gs://` packages pip-installed before it runs.
    args: the trainer's arguments; `--job-dir` is added when `job_dir` is set.
    job_dir: the job's `gs://` output directory (Vertex's base output
      directory; each process gets `AIP_MODEL_DIR` etc. under it).
    chief: the chief's pool (one replica).
    workers: the workers' pool, or None.
    parameter_servers: the parameter servers' pool, or None.
    evaluator: the evaluator's pool, or None.
    labels: job labels (lower-case keys and values).
    service_account: the service account the job runs as, or None for the
      project's default.
    network: the VPC network to peer with, or None.
    timeout_seconds: the longest the job may run, or None for Vertex's
      default (7 days).
    study: the tuning study, making this a HyperparameterTuningJob; or None.
    trainer_image: the image Python package pools run on (see the module
      docstring); by default `trainer_image(project, region, gpu)`, the
      GPU variant for pools with GPUs.
    extra: other fields of the `CustomJob` (or `HyperparameterTuningJob`),
      as Vertex AI's JSON, merged into the request.
    job_spec_extra: other `CustomJobSpec` fields, as Vertex AI's JSON
      (e.g. `{'scheduling': {'strategy': 'SPOT'}, 'enableWebAccess':
      True}`), merged into the job (or trial job) spec.
  """

  project: str
  region: str
  display_name: str
  staging_location: str
  python_module: str | None = None
  package_uris: tuple[str, ...] = ()
  args: tuple[str, ...] = ()
  job_dir: str | None = None
  chief: WorkerPool = WorkerPool('n1-standard-4')
  workers: WorkerPool | None = None
  parameter_servers: WorkerPool | None = None
  evaluator: WorkerPool | None = None
  labels: types.MappingProxyType = dataclasses.field(
    default_factory=lambda: types.MappingProxyType({})
  )
  service_account: str | None = None
  network: str | None = None
  timeout_seconds: int | None = None
  study: StudySpec | None = None
  trainer_image: str | None = None
  extra: Mapping[str, Any] = dataclasses.field(
    default_factory=lambda: types.MappingProxyType({})
  )
  job_spec_extra: Mapping[str, Any] = dataclasses.field(
    default_factory=lambda: types.MappingProxyType({})
  )

  def __post_init__(self):
    _argchecks.require(
      isinstance(self.project, str) and bool(self.project),
      '--project',
      'the Google Cloud project to run the job in (or set '
      '$GOOGLE_CLOUD_PROJECT)',
      self.project,
    )
    _argchecks.require(
      bool(_PROJECT.match(self.project)),
      '--project',
      'a project id (6-30 lower-case letters, digits and hyphens)',
      self.project,
    )
    _argchecks.require(
      isinstance(self.region, str) and bool(self.region),
      '--region',
      'the Vertex AI region to run the job in, e.g. us-central1',
      self.region,
    )
    _argchecks.require(
      bool(_REGION.match(self.region)),
      '--region',
      'a region name such as us-central1',
      self.region,
    )
    _argchecks.require(
      isinstance(self.display_name, str) and 0 < len(self.display_name) <= 128,
      '--job-name',
      'a job name of 1 to 128 characters',
      self.display_name,
    )
    _argchecks.require(
      isinstance(self.staging_location, str) and bool(self.staging_location),
      '--staging-bucket',
      'a gs:// location to stage the trainer package in (or a gs:// --job-dir)',
      self.staging_location,
    )
    _storage.parse_gcs_uri(self.staging_location)
    if self.job_dir is not None:
      _argchecks.require(
        str(self.job_dir).startswith('gs://'),
        '--job-dir',
        'a gs:// directory (Vertex AI jobs write to Cloud Storage)',
        self.job_dir,
      )
      _storage.parse_gcs_uri(self.job_dir)
    for uri in self.package_uris:
      _argchecks.require(
        str(uri).startswith('gs://'),
        'package_uris',
        'gs:// URIs (staged packages)',
        uri,
      )
    object.__setattr__(self, 'package_uris', tuple(self.package_uris))
    object.__setattr__(self, 'args', tuple(str(a) for a in self.args))
    _argchecks.require(
      isinstance(self.chief, WorkerPool), 'chief', 'a WorkerPool', self.chief
    )
    _argchecks.require(
      self.chief.replica_count == 1,
      'chief replica_count',
      'exactly 1 (Vertex AI runs one chief)',
      self.chief.replica_count,
    )
    for role in ROLES[1:]:
      pool = getattr(self, role)
      _argchecks.require(
        pool is None or isinstance(pool, WorkerPool),
        role,
        'a WorkerPool or None',
        pool,
      )
      if pool is not None and pool.replica_count == 0:
        object.__setattr__(self, role, None)
    needs_module = any(p is not None and not p.image_uri for p in self.pools())
    if needs_module:
      _argchecks.require(
        isinstance(self.python_module, str) and bool(self.python_module),
        '--module-name',
        'the trainer module to run, e.g. trainer.task (or a '
        'container image for every pool)',
        self.python_module,
      )
    labels = dict(self.labels or {})
    for key, value in labels.items():
      _argchecks.require(
        isinstance(key, str) and bool(_LABEL_KEY.match(key)),
        '--labels',
        'keys of lower-case letters, digits, "_" and '
        '"-", starting with a letter',
        key,
      )
      _argchecks.require(
        isinstance(value, str) and bool(_LABEL_VALUE.match(value)),
        '--labels',
        'values of up to 63 lower-case letters, digits, "_" and "-"',
        f'{key}={value}',
      )
    object.__setattr__(self, 'labels', types.MappingProxyType(labels))
    if self.timeout_seconds is not None:
      _argchecks.require(
        _argchecks.is_count(self.timeout_seconds) and self.timeout_seconds > 0,
        '--timeout',
        'a positive duration',
        self.timeout_seconds,
      )
    if self.service_account is not None:
      _argchecks.require(
        '@' in str(self.service_account),
        '--service-account',
        'a service account email',
        self.service_account,
      )
    _argchecks.require(
      self.study is None or isinstance(self.study, StudySpec),
      'study',
      'a StudySpec or None',
      self.study,
    )
    _argchecks.require(
      self.trainer_image is None
      or (isinstance(self.trainer_image, str) and bool(self.trainer_image)),
      '--trainer-image',
      'a container image URI',
      self.trainer_image,
    )

  def pools(self):
    """The four pools in Vertex AI's order; None for those not used."""
    return [getattr(self, role) for role in ROLES]

  @property
  def parent(self):
    """The resource the job is created under."""
    return f'projects/{self.project}/locations/{self.region}'

  @property
  def trainer_args(self):
    """The arguments every process gets: the user's, then `--job-dir`."""
    if self.job_dir:
      return self.args + ('--job-dir', self.job_dir)
    return self.args

  def job_spec_json(self):
    """The `CustomJobSpec` as Vertex AI's JSON."""
    needs_package = any(p is not None and not p.image_uri for p in self.pools())
    if needs_package and not self.package_uris:
      raise ConfigurationError(
        'package_uris: a Python trainer needs its package staged '
        '(--package-path, or gs:// --packages). Received: package_uris=()'
      )
    pools = self.pools()
    while pools[-1] is None:
      pools.pop()
    spec: dict[str, Any] = {
      'workerPoolSpecs': [
        {}
        if pool is None
        else pool.to_json(
          self.trainer_image
          or _images.trainer_image(self.project, self.region, pool.gpu),
          self.package_uris,
          self.python_module,
          self.trainer_args,
        )
        for pool in pools
      ]
    }
    if self.job_dir:
      spec['baseOutputDirectory'] = {'outputUriPrefix': self.job_dir}
    if self.service_account:
      spec['serviceAccount'] = self.service_account
    if self.network:
      spec['network'] = self.network
    if self.timeout_seconds:
      spec['scheduling'] = {'timeout': f'{self.timeout_seconds}s'}
    return _vertexschema.merge(spec, self.job_spec_extra)

  def request(self):
    """The create request as Vertex AI's JSON: `parent` and the job.

    A `customJob` (for `customJobs.create`), or a `hyperparameterTuningJob`
    (for `hyperparameterTuningJobs.create`) when there is a study.
    """
    if self.study is None:
      job = {'displayName': self.display_name, 'jobSpec': self.job_spec_json()}
      if self.labels:
        job['labels'] = dict(self.labels)
      return {
        'parent': self.parent,
        'customJob': _vertexschema.merge(job, self.extra),
      }
    job = {
      'displayName': self.display_name,
      'studySpec': self.study.to_json(),
      'maxTrialCount': self.study.max_trial_count,
      'parallelTrialCount': self.study.parallel_trial_count,
    }
    if self.study.max_failed_trial_count:
      job['maxFailedTrialCount'] = self.study.max_failed_trial_count
    job['trialJobSpec'] = self.job_spec_json()
    if self.labels:
      job['labels'] = dict(self.labels)
    return {
      'parent': self.parent,
      'hyperparameterTuningJob': _vertexschema.merge(job, self.extra),
    }
