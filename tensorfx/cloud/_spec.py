"""A Vertex AI training job, as typed values, and the request it becomes.

`JobSpec` says everything a submission needs: where (project, region), what
runs (the trainer package and module, or a container image), on what
(`WorkerPool`s for the chief, workers, parameter servers and evaluator), for
how long, as whom, and, for tuning, the `StudySpec`. `JobSpec.request()`
turns it into the JSON body of Vertex AI's `customJobs.create` (or
`hyperparameterTuningJobs.create`) request.

Vertex AI's worker pools are positional: [0] chief (exactly one replica),
[1] workers, [2] parameter servers, [3] evaluator. A pool that is not used
but precedes one that is becomes an empty placeholder `{}`.

Python trainers run on the tensorfx trainer image (`trainer_image()`: Python
3.11, the pinned TensorFlow and tensorfx, built and pushed by
`cloudbuild.yaml` from the top-level `Dockerfile`) as a container whose
command, `tensorfx run-package`, does what Vertex AI's prebuilt executors do
for a Python package: install the staged packages, then run the module. A
pool with `executor_image_uri` runs on that prebuilt executor instead
(`pythonPackageSpec`), and a pool with `image_uri` runs a custom container.
"""

import dataclasses
import re
import types
from typing import Any, Mapping

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _storage
from tensorfx.cloud import _vertexschema

# Vertex AI's prebuilt TensorFlow training images lag TensorFlow releases:
# the newest, when this was written, is TensorFlow 2.17 on Python 3.10
# (`tf-cpu.2-17.py310`, `tf-gpu.2-17.py310`), where tensorfx (TensorFlow
# 2.21, Python 3.11) does not install. They stay available for trainers
# that do not use tensorfx at run time (`--executor-image-uri`); tensorfx
# trainers run on the trainer image (`trainer_image()`).
EXECUTOR_TENSORFLOW = '2-17'
EXECUTOR_PYTHON = 'py310'
EXECUTOR_IMAGE_CPU = (f'us-docker.pkg.dev/vertex-ai/training/'
                      f'tf-cpu.{EXECUTOR_TENSORFLOW}.{EXECUTOR_PYTHON}:latest')
EXECUTOR_IMAGE_GPU = (f'us-docker.pkg.dev/vertex-ai/training/'
                      f'tf-gpu.{EXECUTOR_TENSORFLOW}.{EXECUTOR_PYTHON}:latest')

# The prebuilt images are mirrored per continent; pulling from the nearest
# mirror starts a job faster.
_MIRRORS = (('europe-', 'europe-docker.pkg.dev'),
            ('asia-', 'asia-docker.pkg.dev'),
            ('australia-', 'asia-docker.pkg.dev'),
            ('me-', 'asia-docker.pkg.dev'))

ROLES = ('chief', 'workers', 'parameter_servers', 'evaluator')

_LABEL_KEY = re.compile(r'^[a-z][a-z0-9_-]{0,62}$')
_LABEL_VALUE = re.compile(r'^[a-z0-9_-]{0,63}$')
_PROJECT = re.compile(r'^[a-z0-9][a-z0-9.:-]{3,62}[a-z0-9]$')
_REGION = re.compile(r'^[a-z]+-[a-z]+[0-9]+$')

PARAMETER_TYPES = ('DOUBLE', 'INTEGER', 'DISCRETE', 'CATEGORICAL')
SCALE_TYPES = ('UNIT_LINEAR_SCALE', 'UNIT_LOG_SCALE', 'UNIT_REVERSE_LOG_SCALE')
GOALS = ('MAXIMIZE', 'MINIMIZE')
ALGORITHMS = ('GRID_SEARCH', 'RANDOM_SEARCH')


# Where cloudbuild.yaml pushes the trainer image: an Artifact Registry
# Docker repository of this name in the job's project and region.
TRAINER_IMAGE_REPOSITORY = 'tensorfx'


def trainer_image(project, region, gpu=False, version=None):
  """The tensorfx trainer image that `cloudbuild.yaml` pushes.

  Example:
    >>> trainer_image('my-project', 'us-central1', version='0.1.0')
    'us-central1-docker.pkg.dev/my-project/tensorfx/trainer:0.1.0'
    >>> trainer_image('my-project', 'us-central1', gpu=True, version='0.1.0')
    'us-central1-docker.pkg.dev/my-project/tensorfx/trainer-gpu:0.1.0'

  Args:
    project: the Google Cloud project holding the repository.
    region: the repository's region (the job's, so pulls stay local).
    gpu: the variant with TensorFlow's CUDA libraries, for GPU machines.
    version: the image tag; by default this tensorfx's version, so a job
      runs the tensorfx that submitted it.
  """
  if version is None:
    from tensorfx._version import __version__  # pylint: disable=g-import-not-at-top
    version = __version__
  name = 'trainer-gpu' if gpu else 'trainer'
  return (f'{region}-docker.pkg.dev/{project}/{TRAINER_IMAGE_REPOSITORY}/'
          f'{name}:{version}')


def run_package_command(package_uris, python_module):
  """The trainer image's command that installs the packages and runs."""
  return ('python', '-m', 'tensorfx', 'run-package', '--package-uris',
          ','.join(package_uris), '--module', python_module, '--')


def executor_image(region, gpu):
  """The prebuilt TensorFlow training image for a region and device.

  Example:
    >>> executor_image('europe-west4', gpu=True)
    'europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310:latest'
  """
  image = EXECUTOR_IMAGE_GPU if gpu else EXECUTOR_IMAGE_CPU
  for prefix, mirror in _MIRRORS:
    if str(region).startswith(prefix):
      return image.replace('us-docker.pkg.dev', mirror, 1)
  return image


def _received(name, value):
  return f'Received: {name}={value!r}'


def _require(condition, name, expected, value):
  if not condition:
    raise ConfigurationError(f'{name}: expected {expected}. '
                             f'{_received(name.lstrip("-"), value)}')


def accelerator_types():
  """The accelerator type names Vertex AI accepts (from its API)."""
  from google.cloud import aiplatform_v1  # pylint: disable=g-import-not-at-top
  return tuple(n for n in aiplatform_v1.AcceleratorType.__members__
               if n != 'ACCELERATOR_TYPE_UNSPECIFIED')


def normalize_accelerator(name):
  """'nvidia-tesla-t4' -> 'NVIDIA_TESLA_T4' (gcloud flags used lower case)."""
  return str(name).strip().upper().replace('-', '_')


@dataclasses.dataclass(frozen=True)
class WorkerPool:
  """The machines of one role in a job.

  Example:
    >>> WorkerPool('n1-standard-8', replica_count=2,
    ...            accelerator_type='NVIDIA_TESLA_T4', accelerator_count=1)
    ... # doctest: +ELLIPSIS
    WorkerPool(machine_type='n1-standard-8', replica_count=2, ...)

  Attributes:
    machine_type: a Compute Engine machine type, e.g. 'n1-standard-4'.
    replica_count: how many machines (the chief has exactly one).
    accelerator_type: e.g. 'NVIDIA_TESLA_T4', or None for none.
    accelerator_count: accelerators per machine (0 without a type).
    image_uri: a custom training container to run instead of the Python
      package, or None.
    command: the container's command; by default `python -m MODULE` when
      the job has a module, else the image's entrypoint.
    executor_image_uri: a prebuilt Vertex AI executor image the Python
      package runs on (`pythonPackageSpec`), or None for the job's trainer
      image.
    boot_disk_type: 'pd-ssd' or 'pd-standard', or None for Vertex's default.
    boot_disk_size_gb: the boot disk size, or None for Vertex's default.
    extra: other `WorkerPoolSpec` fields, as Vertex AI's JSON (e.g.
      `{'containerSpec': {'env': [...]}}`, `nfsMounts`), merged into the
      pool's request; `containerSpec`/`pythonPackageSpec` fields go to
      whichever of the two the pool runs.
  """

  machine_type: str
  replica_count: int = 1
  accelerator_type: str | None = None
  accelerator_count: int = 0
  image_uri: str | None = None
  command: tuple[str, ...] = ()
  executor_image_uri: str | None = None
  boot_disk_type: str | None = None
  boot_disk_size_gb: int | None = None
  extra: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: types.MappingProxyType({}))

  def __post_init__(self):
    object.__setattr__(self, 'extra', types.MappingProxyType(
        dict(self.extra or {})))
    _require(isinstance(self.machine_type, str) and self.machine_type,
             'machine_type', 'a machine type such as n1-standard-4',
             self.machine_type)
    _require(_is_count(self.replica_count), 'replica_count',
             'a non-negative integer', self.replica_count)
    _require(_is_count(self.accelerator_count), 'accelerator_count',
             'a non-negative integer', self.accelerator_count)
    if self.accelerator_type and self.accelerator_count == 0:
      raise ConfigurationError(
          f'accelerator_count: expected at least 1 with accelerator_type '
          f'{self.accelerator_type}. {_received("accelerator_count", 0)}')
    if self.accelerator_count and not self.accelerator_type:
      raise ConfigurationError(
          'accelerator_type: expected a type with accelerator_count '
          f'{self.accelerator_count}. {_received("accelerator_type", None)}')
    if self.boot_disk_size_gb is not None:
      _require(_is_count(self.boot_disk_size_gb) and
               self.boot_disk_size_gb > 0, 'boot_disk_size_gb',
               'a positive integer', self.boot_disk_size_gb)
    object.__setattr__(self, 'command', tuple(self.command))

  @property
  def gpu(self):
    """Whether the machines have GPUs (which need the GPU image)."""
    return bool(self.accelerator_type) and \
        not self.accelerator_type.startswith('TPU')

  def to_json(self, trainer_image, package_uris, python_module, args):
    """This pool's `WorkerPoolSpec` as Vertex AI's JSON."""
    machine = {'machineType': self.machine_type}
    if self.accelerator_type:
      machine['acceleratorType'] = self.accelerator_type
      machine['acceleratorCount'] = self.accelerator_count
    pool = {'machineSpec': machine, 'replicaCount': str(self.replica_count)}
    if self.boot_disk_type or self.boot_disk_size_gb:
      disk = {}
      if self.boot_disk_type:
        disk['bootDiskType'] = self.boot_disk_type
      if self.boot_disk_size_gb:
        disk['bootDiskSizeGb'] = self.boot_disk_size_gb
      pool['diskSpec'] = disk
    if self.image_uri or not self.executor_image_uri:
      if self.image_uri:
        image = self.image_uri
        # With a module, one image can hold several trainers: run the
        # module as Vertex runs a package's. Without, the entrypoint runs.
        command = self.command or (('python', '-m', python_module)
                                   if python_module else ())
      else:
        image = trainer_image
        command = run_package_command(package_uris, python_module)
      container = {'imageUri': image}
      if command:
        container['command'] = list(command)
      if args:
        container['args'] = list(args)
      pool['containerSpec'] = container
    else:
      package = {
          'executorImageUri': self.executor_image_uri,
          'packageUris': list(package_uris),
          'pythonModule': python_module,
      }
      if args:
        package['args'] = list(args)
      pool['pythonPackageSpec'] = package
    extra = dict(self.extra)
    # Task fields (env, args, ...) go to the task spec the pool runs.
    task = 'containerSpec' if 'containerSpec' in pool else 'pythonPackageSpec'
    for other in ('containerSpec', 'pythonPackageSpec'):
      if other != task and other in extra:
        extra[task] = _vertexschema.merge(extra.get(task, {}),
                                          extra.pop(other))
    return _vertexschema.merge(pool, extra)


def _is_count(value):
  return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value):
  return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
  """One hyperparameter a tuning study searches.

  The trainer receives it as `--NAME=VALUE`.

  Example:
    >>> ParameterSpec('learning_rate', 'DOUBLE', 1e-4, 1e-1,
    ...               scale_type='UNIT_LOG_SCALE').name
    'learning_rate'

  Attributes:
    name: the parameter's name (and the trainer flag it is passed as).
    type: 'DOUBLE', 'INTEGER', 'DISCRETE' or 'CATEGORICAL'.
    min_value: the lower bound (DOUBLE, INTEGER).
    max_value: the upper bound (DOUBLE, INTEGER).
    values: the candidate numbers (DISCRETE) or strings (CATEGORICAL).
    scale_type: 'UNIT_LINEAR_SCALE', 'UNIT_LOG_SCALE',
      'UNIT_REVERSE_LOG_SCALE', or None (categorical parameters have none).
  """

  name: str
  type: str
  min_value: float | None = None
  max_value: float | None = None
  values: tuple = ()
  scale_type: str | None = None

  def __post_init__(self):
    what = f'hyperparameter {self.name!r}'
    _require(isinstance(self.name, str) and self.name, 'name',
             'a parameter name', self.name)
    _require(self.type in PARAMETER_TYPES, f'{what}: type',
             f'one of {", ".join(PARAMETER_TYPES)}', self.type)
    _require(self.scale_type is None or self.scale_type in SCALE_TYPES,
             f'{what}: scale_type', f'one of {", ".join(SCALE_TYPES)}',
             self.scale_type)
    object.__setattr__(self, 'values', tuple(self.values))
    if self.type in ('DOUBLE', 'INTEGER'):
      kind = int if self.type == 'INTEGER' else (int, float)
      for bound in ('min_value', 'max_value'):
        value = getattr(self, bound)
        _require(isinstance(value, kind) and not isinstance(value, bool),
                 f'{what}: {bound}',
                 'an integer' if self.type == 'INTEGER' else 'a number',
                 value)
      _require(self.min_value <= self.max_value, f'{what}: max_value',
               f'at least min_value {self.min_value}', self.max_value)
      if self.scale_type in ('UNIT_LOG_SCALE', 'UNIT_REVERSE_LOG_SCALE'):
        _require(self.min_value > 0, f'{what}: min_value',
                 'a positive number on a log scale', self.min_value)
    elif self.type == 'DISCRETE':
      _require(self.values and all(_is_number(v) for v in self.values),
               f'{what}: values', 'a non-empty list of numbers', self.values)
      # Vertex wants increasing values; the order means nothing here.
      object.__setattr__(self, 'values', tuple(sorted(set(self.values))))
    else:
      _require(self.values and all(isinstance(v, str) for v in self.values),
               f'{what}: values', 'a non-empty list of strings', self.values)
      _require(self.scale_type is None, f'{what}: scale_type',
               'none for a CATEGORICAL parameter', self.scale_type)

  def to_json(self):
    """This parameter's `StudySpec.ParameterSpec` as Vertex AI's JSON."""
    spec = {'parameterId': self.name}
    if self.type == 'DOUBLE':
      spec['doubleValueSpec'] = {'minValue': float(self.min_value),
                                 'maxValue': float(self.max_value)}
    elif self.type == 'INTEGER':
      spec['integerValueSpec'] = {'minValue': str(self.min_value),
                                  'maxValue': str(self.max_value)}
    elif self.type == 'DISCRETE':
      spec['discreteValueSpec'] = {'values': [float(v) for v in self.values]}
    else:
      spec['categoricalValueSpec'] = {'values': list(self.values)}
    if self.scale_type:
      spec['scaleType'] = self.scale_type
    return spec


@dataclasses.dataclass(frozen=True)
class StudySpec:
  """A hyperparameter tuning study: what to optimize, over what, how long.

  Example:
    >>> study = StudySpec('accuracy', 'MAXIMIZE',
    ...                   (ParameterSpec('hidden', 'INTEGER', 8, 64),),
    ...                   max_trial_count=10, parallel_trial_count=2)

  Attributes:
    metric: the metric the trainer reports (`hyperparameterMetricTag`).
    goal: 'MAXIMIZE' or 'MINIMIZE'.
    parameters: the `ParameterSpec`s searched.
    max_trial_count: how many trials in all.
    parallel_trial_count: how many at a time.
    max_failed_trial_count: failed trials tolerated before the job fails (0:
      Vertex's default).
    algorithm: 'GRID_SEARCH', 'RANDOM_SEARCH', or None for Vertex's default
      (Bayesian optimization).
    early_stopping: stop unpromising trials early (median rule).
    extra: other `StudySpec` fields, as Vertex AI's JSON (e.g.
      `measurementSelectionType`), merged into the request.
  """

  metric: str
  goal: str
  parameters: tuple[ParameterSpec, ...]
  max_trial_count: int
  parallel_trial_count: int
  max_failed_trial_count: int = 0
  algorithm: str | None = None
  early_stopping: bool = False
  extra: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: types.MappingProxyType({}))

  def __post_init__(self):
    _require(isinstance(self.metric, str) and self.metric, 'metric',
             'the name of the metric to optimize', self.metric)
    _require(self.goal in GOALS, 'goal', 'MAXIMIZE or MINIMIZE', self.goal)
    object.__setattr__(self, 'parameters', tuple(self.parameters))
    _require(bool(self.parameters), 'parameters',
             'at least one hyperparameter', self.parameters)
    names = [p.name for p in self.parameters]
    _require(len(set(names)) == len(names), 'parameters',
             'distinct names', names)
    for name in ('max_trial_count', 'parallel_trial_count'):
      value = getattr(self, name)
      _require(_is_count(value) and value >= 1, name, 'a positive integer',
               value)
    _require(_is_count(self.max_failed_trial_count),
             'max_failed_trial_count', 'a non-negative integer',
             self.max_failed_trial_count)
    _require(self.algorithm is None or self.algorithm in ALGORITHMS,
             'algorithm', f'one of {", ".join(ALGORITHMS)} or none',
             self.algorithm)

  def to_json(self):
    """The `StudySpec` as Vertex AI's JSON."""
    study = {
        'metrics': [{'metricId': self.metric, 'goal': self.goal}],
        'parameters': [p.to_json() for p in self.parameters],
    }
    if self.algorithm:
      study['algorithm'] = self.algorithm
    if self.early_stopping:
      study['medianAutomatedStoppingSpec'] = {}
    return _vertexschema.merge(study, self.extra)


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
      default_factory=lambda: types.MappingProxyType({}))
  service_account: str | None = None
  network: str | None = None
  timeout_seconds: int | None = None
  study: StudySpec | None = None
  trainer_image: str | None = None
  extra: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: types.MappingProxyType({}))
  job_spec_extra: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: types.MappingProxyType({}))

  def __post_init__(self):
    _require(isinstance(self.project, str) and bool(self.project), '--project',
             'the Google Cloud project to run the job in (or set '
             '$GOOGLE_CLOUD_PROJECT)', self.project)
    _require(bool(_PROJECT.match(self.project)), '--project',
             'a project id (6-30 lower-case letters, digits and hyphens)',
             self.project)
    _require(isinstance(self.region, str) and bool(self.region), '--region',
             'the Vertex AI region to run the job in, e.g. us-central1',
             self.region)
    _require(bool(_REGION.match(self.region)), '--region',
             'a region name such as us-central1', self.region)
    _require(isinstance(self.display_name, str) and
             0 < len(self.display_name) <= 128, '--job-name',
             'a job name of 1 to 128 characters', self.display_name)
    _require(isinstance(self.staging_location, str) and
             bool(self.staging_location), '--staging-bucket',
             'a gs:// location to stage the trainer package in (or a gs:// '
             '--job-dir)', self.staging_location)
    _storage.parse_gcs_uri(self.staging_location)
    if self.job_dir is not None:
      _require(str(self.job_dir).startswith('gs://'), '--job-dir',
               'a gs:// directory (Vertex AI jobs write to Cloud Storage)',
               self.job_dir)
      _storage.parse_gcs_uri(self.job_dir)
    for uri in self.package_uris:
      _require(str(uri).startswith('gs://'), 'package_uris',
               'gs:// URIs (staged packages)', uri)
    object.__setattr__(self, 'package_uris', tuple(self.package_uris))
    object.__setattr__(self, 'args', tuple(str(a) for a in self.args))
    _require(isinstance(self.chief, WorkerPool), 'chief', 'a WorkerPool',
             self.chief)
    _require(self.chief.replica_count == 1, 'chief replica_count',
             'exactly 1 (Vertex AI runs one chief)',
             self.chief.replica_count)
    for role in ROLES[1:]:
      pool = getattr(self, role)
      _require(pool is None or isinstance(pool, WorkerPool), role,
               'a WorkerPool or None', pool)
      if pool is not None and pool.replica_count == 0:
        object.__setattr__(self, role, None)
    needs_module = any(p is not None and not p.image_uri for p in self.pools())
    if needs_module:
      _require(isinstance(self.python_module, str) and
               bool(self.python_module), '--module-name',
               'the trainer module to run, e.g. trainer.task (or a '
               'container image for every pool)', self.python_module)
    labels = dict(self.labels or {})
    for key, value in labels.items():
      _require(isinstance(key, str) and bool(_LABEL_KEY.match(key)),
               '--labels', 'keys of lower-case letters, digits, "_" and '
               '"-", starting with a letter', key)
      _require(isinstance(value, str) and bool(_LABEL_VALUE.match(value)),
               '--labels', 'values of up to 63 lower-case letters, digits, '
               '"_" and "-"', f'{key}={value}')
    object.__setattr__(self, 'labels', types.MappingProxyType(labels))
    if self.timeout_seconds is not None:
      _require(_is_count(self.timeout_seconds) and self.timeout_seconds > 0,
               '--timeout', 'a positive duration', self.timeout_seconds)
    if self.service_account is not None:
      _require('@' in str(self.service_account), '--service-account',
               'a service account email', self.service_account)
    _require(self.study is None or isinstance(self.study, StudySpec),
             'study', 'a StudySpec or None', self.study)
    _require(self.trainer_image is None or (
        isinstance(self.trainer_image, str) and bool(self.trainer_image)),
             '--trainer-image', 'a container image URI', self.trainer_image)

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
    needs_package = any(p is not None and not p.image_uri
                        for p in self.pools())
    if needs_package and not self.package_uris:
      raise ConfigurationError(
          'package_uris: a Python trainer needs its package staged '
          '(--package-path, or gs:// --packages). Received: package_uris=()')
    pools = self.pools()
    while pools[-1] is None:
      pools.pop()
    spec = {'workerPoolSpecs': [
        {} if pool is None else pool.to_json(
            self.trainer_image or trainer_image(self.project, self.region,
                                                pool.gpu),
            self.package_uris, self.python_module, self.trainer_args)
        for pool in pools]}
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
      job = {'displayName': self.display_name,
             'jobSpec': self.job_spec_json()}
      if self.labels:
        job['labels'] = dict(self.labels)
      return {'parent': self.parent,
              'customJob': _vertexschema.merge(job, self.extra)}
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
    return {'parent': self.parent,
            'hyperparameterTuningJob': _vertexschema.merge(job, self.extra)}
