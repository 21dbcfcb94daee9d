"""`job_spec`: a `JobSpec` from gcloud-style flags and a `--config` file.

The flags are those of `gcloud ai-platform jobs submit training` (what
`tensorfx submit` takes): `--scale-tier`, `--master-machine-type`,
`--worker-count`, `--labels`, `--timeout`, ... Flags override the file.
"""

import os
import types
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _checks
from tensorfx.cloud import _configfile
from tensorfx.cloud import _jobspec
from tensorfx.cloud import _machines
from tensorfx.cloud import _workerpool

# Role -> flag prefix.
FLAG_PREFIX = types.MappingProxyType(
  {
    'chief': 'master',
    'workers': 'worker',
    'parameter_servers': 'parameter_server',
    'evaluator': 'evaluator',
  }
)


def parse_accelerator(text, flag):
  """Reads gcloud's `type=nvidia-tesla-t4,count=2` accelerator flag value.

  Example:
    >>> parse_accelerator('type=nvidia-tesla-t4,count=2', '--x')
    ('NVIDIA_TESLA_T4', 2)
  """
  values = {}
  for part in str(text).split(','):
    key, sep, value = part.partition('=')
    if not sep or key.strip() not in ('type', 'count'):
      raise ConfigurationError(
        f'{flag}: expected type=TYPE[,count=N], e.g. '
        f'type=nvidia-tesla-t4,count=1. Received: {text!r}'
      )
    values[key.strip()] = value.strip()
  if 'type' not in values:
    raise ConfigurationError(
      f'{flag}: expected type=TYPE[,count=N]. Received: {text!r}'
    )
  kind = _machines.accelerator(
    values['type'],
    lambda p: ConfigurationError(
      f'{flag}: {p}. Received: type={values["type"]!r}'
    ),
  )
  count = values.get('count', '1')
  if not count.isdigit() or int(count) < 1:
    raise ConfigurationError(
      f'{flag}: expected count to be a positive '
      f'integer. Received: count={count!r}'
    )
  return kind, int(count)


def parse_labels(text):
  """Reads `k=v,k2=v2` into a dict (gcloud's --labels)."""
  labels = {}
  for part in str(text).split(','):
    if not part.strip():
      continue
    key, sep, value = part.partition('=')
    if not sep:
      raise ConfigurationError(
        f'--labels: expected KEY=VALUE[,...]. Received: {part!r}'
      )
    labels[key.strip()] = value.strip()
  return labels


def _flag_pools(pools, flags):
  """Applies per-role flags (`--worker-count`, ...) to the pools."""
  for role in _workerpool.ROLES:
    prefix = FLAG_PREFIX[role]
    flag = f'--{prefix.replace("_", "-")}'
    machine_type = flags.pop(f'{prefix}_machine_type', None)
    accel = flags.pop(f'{prefix}_accelerator', None)
    image = flags.pop(f'{prefix}_image_uri', None)
    count = flags.pop(f'{prefix}_count', None) if role != 'chief' else None
    if count is not None:
      if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ConfigurationError(
          f'{flag}-count: expected a non-negative integer. '
          f'Received: {prefix}_count={count!r}'
        )
      if count == 0:
        pools.pop(role, None)
        continue
      _machines.new_pool(pools, role)['replica_count'] = count
    if role not in pools and (machine_type or accel or image):
      if role == 'chief':
        pools[role] = {'replica_count': 1}
      else:
        raise ConfigurationError(
          f'{flag}-machine-type/-accelerator/-image-uri: the job has no '
          f'{role.replace("_", " ")}; set {flag}-count. '
          f'Received: {prefix}_count=0'
        )
    if machine_type:
      _machines.set_machine(
        pools[role],
        machine_type,
        lambda p, f=flag, m=machine_type: ConfigurationError(
          f'{f}-machine-type: {p}. Received: {m!r}'
        ),
      )
    if accel:
      kind, number = parse_accelerator(accel, f'{flag}-accelerator')
      pools[role]['accelerator_type'] = kind
      pools[role]['accelerator_count'] = number
    if image:
      pools[role]['image_uri'] = image
  # The master's image is every pool's unless another is named (gcloud).
  chief_image = pools.get('chief', {}).get('image_uri')
  if chief_image:
    for role in _workerpool.ROLES[1:]:
      if role in pools:
        pools[role].setdefault('image_uri', chief_image)


def job_spec(
  *,
  config=None,
  project=None,
  region=None,
  job_name=None,
  staging_bucket=None,
  module_name=None,
  package_uris=(),
  args=(),
  job_dir=None,
  scale_tier=None,
  labels=None,
  service_account=None,
  network=None,
  timeout=None,
  executor_image_uri=None,
  trainer_image=None,
  environ=None,
  **pool_flags,
):
  """A `JobSpec` from gcloud-style flags and an optional config file.

  Flags win over the file. Pool flags are `master_machine_type`,
  `master_accelerator` ('type=nvidia-tesla-t4,count=1'), `master_image_uri`,
  and the same for `worker`, `parameter_server` and `evaluator`, plus
  `worker_count`, `parameter_server_count`, `evaluator_count`.

  Example:
    >>> spec = job_spec(project='my-project', region='us-central1',
    ...                 job_name='iris_1', staging_bucket='gs://my-bucket',
    ...                 module_name='iris.trainer', scale_tier='STANDARD_1',
    ...                 environ={})
    >>> spec.workers.replica_count, spec.workers.machine_type
    (4, 'n1-highcpu-16')

  Args:
    config: a `--config` YAML path, or None.
    project: the project; default: the file's, else $GOOGLE_CLOUD_PROJECT.
    region: the region; default: the file's (legacy trainingInput.region).
    job_name: the job's display name; default: the file's (jobId,
      displayName), else '<module>_<YYYYmmdd_HHMMSS>'.
    staging_bucket: where packages are staged (gs://BUCKET[/PREFIX]);
      default: JOB_DIR/packages when `job_dir` is given.
    module_name: the trainer module (`python -m`).
    package_uris: gs:// packages already staged.
    args: the trainer's own arguments.
    job_dir: the job's gs:// output directory.
    scale_tier: a legacy scale tier (BASIC, BASIC_GPU, STANDARD_1,
      PREMIUM_1, CUSTOM); replaces the file's cluster.
    labels: a dict, or 'k=v,k2=v2'.
    service_account: the service account email to run as.
    network: the VPC network to peer with.
    timeout: the longest the job may run ('2h', '7200s', seconds).
    executor_image_uri: a prebuilt Vertex AI executor image for Python
      package pools (`pythonPackageSpec`) instead of the trainer image.
    trainer_image: the tensorfx trainer image Python package pools run on;
      default: `trainer_image(project, region, gpu)` per pool.
    environ: the environment for defaults; by default `os.environ`.
    **pool_flags: the per-role flags above.

  Returns:
    A validated `JobSpec`.

  Raises:
    ConfigurationError: a missing project, region or staging location, a
      bad flag value, or a bad config file (naming file, line and key).
  """
  import datetime

  environ = os.environ if environ is None else environ
  known = {
    f'{FLAG_PREFIX[r]}_{s}'
    for r in _workerpool.ROLES
    for s in ('machine_type', 'accelerator', 'image_uri', 'count')
  }
  unknown = sorted(set(pool_flags) - known)
  if unknown:
    raise TypeError(
      f'job_spec() got unexpected keyword arguments: {", ".join(unknown)}'
    )
  loaded = _configfile.load_config(config) if config else None
  fields = dict(loaded.fields) if loaded else {}
  pools = {
    role: dict(pool) for role, pool in (loaded.pools.items() if loaded else ())
  }
  if scale_tier:
    tier = str(scale_tier).upper().replace('-', '_')
    if tier not in _machines.SCALE_TIERS:
      raise ConfigurationError(
        f'--scale-tier: expected one of '
        f'{", ".join(_machines.SCALE_TIERS)}. '
        f'Received: scale_tier={scale_tier!r}'
      )
    pools = _machines.tier_pools(tier)
    if tier == 'CUSTOM' and not pool_flags.get('master_machine_type'):
      raise ConfigurationError(
        '--scale-tier CUSTOM needs --master-machine-type. '
        'Received: master_machine_type=None'
      )
  if not pools:
    pools = _machines.tier_pools('BASIC')
  _flag_pools(pools, dict(pool_flags))
  if executor_image_uri:
    for pool in pools.values():
      pool['executor_image_uri'] = executor_image_uri
  module = module_name or fields.get('python_module')
  name = (
    job_name
    or fields.get('display_name')
    or '{}_{}'.format(
      (module or 'tensorfx').replace('.', '_'),
      datetime.datetime.now().strftime('%Y%m%d_%H%M%S'),
    )
  )
  job_dir = job_dir or fields.get('job_dir')
  staging = staging_bucket or (
    f'{str(job_dir).rstrip("/")}/packages'
    if job_dir and str(job_dir).startswith('gs://')
    else None
  )
  merged_labels = dict(fields.get('labels', {}))
  if labels:
    merged_labels.update(
      parse_labels(labels) if isinstance(labels, str) else labels
    )
  timeout_seconds = (
    _checks.parse_duration(timeout)
    if timeout is not None
    else fields.get('timeout_seconds')
  )
  all_args = tuple(fields.get('args', ())) + tuple(args)
  roles: dict[str, Any] = {
    role: (_workerpool.WorkerPool(**pools[role]) if role in pools else None)
    for role in _workerpool.ROLES
  }
  return _jobspec.JobSpec(
    project=project
    or environ.get('GOOGLE_CLOUD_PROJECT')
    or environ.get('CLOUDSDK_CORE_PROJECT')
    or '',
    region=region or fields.get('region') or '',
    display_name=name,
    staging_location=staging or '',
    python_module=module,
    package_uris=tuple(package_uris) + tuple(fields.get('package_uris', ())),
    args=all_args,
    job_dir=job_dir,
    labels=types.MappingProxyType(merged_labels),
    service_account=service_account or fields.get('service_account'),
    network=network or fields.get('network'),
    timeout_seconds=timeout_seconds,
    study=fields.get('study'),
    trainer_image=trainer_image,
    extra=types.MappingProxyType(dict(fields.get('extra', {}))),
    job_spec_extra=types.MappingProxyType(
      dict(fields.get('job_spec_extra', {}))
    ),
    **roles,
  )
