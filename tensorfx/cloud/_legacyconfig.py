"""The legacy AI Platform Training form of a `--config` file.

What `gcloud ai-platform jobs submit training --config` read (the service
was shut down on 2025-01-31): `trainingInput` with `scaleTier`,
`masterType`, `workerType`, `parameterServerType`, `evaluatorType`, their
counts and `*Config`s, and `hyperparameters`, translated to Vertex AI:
legacy machine names become Compute Engine machine types (and GPUs), scale
tiers become worker pools (`_machines`).
"""

from tensorfx._logging import logger
from tensorfx.cloud import _checks
from tensorfx.cloud import _machines
from tensorfx.cloud import _studyconfig

# Role -> legacy key prefix.
_LEGACY = {
  'chief': 'master',
  'workers': 'worker',
  'parameter_servers': 'parameterServer',
  'evaluator': 'evaluator',
}
_LEGACY_TOP = ('trainingInput', 'labels', 'jobId')
_LEGACY_INPUT = (
  'scaleTier',
  'masterType',
  'masterConfig',
  'workerType',
  'workerConfig',
  'workerCount',
  'parameterServerType',
  'parameterServerConfig',
  'parameterServerCount',
  'evaluatorType',
  'evaluatorConfig',
  'evaluatorCount',
  'hyperparameters',
  'region',
  'jobDir',
  'args',
  'packageUris',
  'pythonModule',
  'serviceAccount',
  'network',
  'scheduling',
  'runtimeVersion',
  'pythonVersion',
  'useChiefInTfConfig',
)
_LEGACY_REPLICA = (
  'acceleratorConfig',
  'imageUri',
  'containerCommand',
  'containerArgs',
  'diskConfig',
)


def _scale_tier(where, value):
  tier = str(value).upper() if isinstance(value, str) else value
  if tier == 'BASIC_TPU':
    raise _checks.fail(
      where,
      'TPU scale tiers are not translated to Vertex '
      'AI; use CUSTOM with a TPU machine type',
      value,
    )
  if tier not in _machines.SCALE_TIERS:
    raise _checks.fail(
      where,
      'expected a scale tier, one of ' + ', '.join(_machines.SCALE_TIERS),
      value,
    )
  return tier


def _legacy_replica_config(where, config, pool):
  """Applies a legacy `*Config`; returns its containerArgs, if any."""
  _checks.check_keys(where, config, _LEGACY_REPLICA, 'a legacy replica config')
  if 'acceleratorConfig' in config:
    at = where.at(config, 'acceleratorConfig')
    accel = _checks.mapping(
      at, config['acceleratorConfig'], 'acceleratorConfig'
    )
    _checks.check_keys(at, accel, ('count', 'type'), 'acceleratorConfig')
    if 'type' not in accel:
      raise _checks.fail(
        at, 'expected an accelerator type (type: NVIDIA_TESLA_T4)'
      )
    pool['accelerator_type'] = _machines.accelerator(
      accel['type'],
      lambda p: _checks.fail(at.at(accel, 'type'), p, accel['type']),
    )
    pool['accelerator_count'] = _checks.count(
      at.at(accel, 'count'), accel.get('count', 1), positive=True
    )
  if 'imageUri' in config:
    pool['image_uri'] = _checks.string(
      where.at(config, 'imageUri'), config['imageUri'], 'an image URI'
    )
  if 'containerCommand' in config:
    pool['command'] = _checks.strings(
      where.at(config, 'containerCommand'),
      config['containerCommand'],
      'the command',
    )
  if 'diskConfig' in config:
    at = where.at(config, 'diskConfig')
    disk = _checks.mapping(at, config['diskConfig'], 'diskConfig')
    _checks.check_keys(
      at, disk, ('bootDiskType', 'bootDiskSizeGb'), 'diskConfig'
    )
    _machines.set_disk(at, disk, pool)
  if 'containerArgs' in config:
    return _checks.strings(
      where.at(config, 'containerArgs'),
      config['containerArgs'],
      'the arguments',
    )
  return None


def read(where, doc):
  """Reads the legacy `trainingInput` form."""
  _checks.check_keys(where, doc, _LEGACY_TOP, 'a legacy AI Platform job config')
  fields = {}
  at = where.at(doc, 'trainingInput')
  spec = _checks.mapping(at, doc['trainingInput'], 'trainingInput')
  _checks.check_keys(at, spec, _LEGACY_INPUT, 'trainingInput')

  def here(key):
    return at.at(spec, key)

  if 'masterType' in spec and 'scaleTier' not in spec:
    tier = 'CUSTOM'  # A master type alone meant a custom cluster.
  else:
    tier = _scale_tier(here('scaleTier'), spec.get('scaleTier', 'BASIC'))
  pools = _machines.tier_pools(tier)
  if tier == 'CUSTOM' and 'masterType' not in spec:
    raise _checks.fail(
      here('scaleTier'), 'scaleTier CUSTOM needs masterType', tier
    )
  for role, prefix in _LEGACY.items():
    type_key, count_key = f'{prefix}Type', f'{prefix}Count'
    config_key = f'{prefix}Config'
    if count_key in spec:
      count = _checks.count(here(count_key), spec[count_key])
      if count == 0:
        pools.pop(role, None)
      else:
        _machines.new_pool(pools, role)['replica_count'] = count
    if type_key in spec:
      if role not in pools and role != 'chief':
        raise _checks.fail(
          here(type_key),
          f'{type_key} given without {count_key}',
          spec[type_key],
        )
      pool = pools.setdefault(role, {'replica_count': 1})
      _machines.set_machine(
        pool,
        spec[type_key],
        lambda p, k=type_key: _checks.fail(here(k), p, spec[k]),
      )
    if config_key in spec:
      if role not in pools:
        raise _checks.fail(
          here(config_key),
          f'{config_key} given without {count_key}',
          spec[config_key],
        )
      container_args = _legacy_replica_config(
        here(config_key),
        _checks.mapping(here(config_key), spec[config_key], config_key),
        pools[role],
      )
      if role == 'chief' and container_args is not None:
        fields['args'] = container_args
  # Legacy replicas ran the master's image unless given their own.
  chief_image = pools['chief'].get('image_uri')
  for pool in pools.values():
    if chief_image and 'image_uri' not in pool:
      pool['image_uri'] = chief_image
      pool.setdefault('command', pools['chief'].get('command', ()))
  for key in ('runtimeVersion', 'pythonVersion', 'useChiefInTfConfig'):
    if key in spec:
      logger.warning(
        '%s:%s: trainingInput.%s is ignored on Vertex AI (the '
        'executor image decides the TensorFlow and Python '
        'versions; the chief is always "chief").',
        here(key).source,
        here(key).line,
        key,
      )
  if 'args' in spec:
    fields['args'] = _checks.strings(
      here('args'), spec['args'], 'the arguments'
    )
  for key, field in (
    ('region', 'region'),
    ('jobDir', 'job_dir'),
    ('pythonModule', 'python_module'),
    ('serviceAccount', 'service_account'),
    ('network', 'network'),
  ):
    if key in spec:
      fields[field] = _checks.string(here(key), spec[key])
  if 'packageUris' in spec:
    fields['package_uris'] = _checks.strings(
      here('packageUris'), spec['packageUris'], 'package URIs'
    )
  if 'scheduling' in spec:
    sched_at = here('scheduling')
    scheduling = _checks.mapping(sched_at, spec['scheduling'], 'scheduling')
    _checks.check_keys(
      sched_at, scheduling, ('maxRunningTime', 'maxWaitTime'), 'scheduling'
    )
    if 'maxRunningTime' in scheduling:
      fields['timeout_seconds'] = _checks.duration(
        sched_at.at(scheduling, 'maxRunningTime'), scheduling['maxRunningTime']
      )
    if 'maxWaitTime' in scheduling:
      wait_at = sched_at.at(scheduling, 'maxWaitTime')
      logger.warning(
        '%s:%s: trainingInput.scheduling.maxWaitTime is ignored on Vertex AI.',
        wait_at.source,
        wait_at.line,
      )
  if 'hyperparameters' in spec:
    fields['study'] = _studyconfig.legacy_study(
      here('hyperparameters'), spec['hyperparameters']
    )
  if 'labels' in doc:
    fields['labels'] = _checks.labels(where.at(doc, 'labels'), doc['labels'])
  if 'jobId' in doc:
    fields['display_name'] = _checks.string(
      where.at(doc, 'jobId'), doc['jobId']
    )
  return fields, pools
