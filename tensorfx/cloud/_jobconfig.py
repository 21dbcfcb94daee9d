"""`JobSpec`s from command-line flags and a `--config` YAML file.

The config file is either form a user already has:

- Vertex AI's (what `gcloud ai custom-jobs create --config` and
  `gcloud ai hp-tuning-jobs create --config` read): `workerPoolSpecs`,
  `scheduling`, `serviceAccount`, `baseOutputDirectory`, ..., and for tuning
  `studySpec` with `maxTrialCount`/`parallelTrialCount` (optionally the job
  under `trialJobSpec`);
- legacy AI Platform Training's (`gcloud ai-platform jobs submit training
  --config`; the service was shut down on 2025-01-31): `trainingInput` with
  `scaleTier`, `masterType`, `workerType`, `parameterServerType`,
  `evaluatorType`, their counts and `*Config`s, and `hyperparameters`.
  It is translated: legacy machine names (`standard`, `large_model`,
  `complex_model_m`, `standard_gpu`, ...) become the Compute Engine machine
  types (and GPUs) they stood for, scale tiers become worker pools.

Every key is checked: an unknown or misspelled key, a negative count or a
bad value is an error naming the file, line and key, raised before anything
is built or uploaded. Flags override the file.
"""

import dataclasses
import logging
import os
import re
import types

from tensorfx import _yaml
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx.cloud import _jobspec
from tensorfx.cloud import _machines
from tensorfx.cloud import _studyspec
from tensorfx.cloud import _vertexschema
from tensorfx.cloud import _workerpool

_logger = logging.getLogger('tensorfx')

# Legacy AI Platform machine names -> (machine type, accelerator, count).
# The K80 GPUs of the *_gpu types are no longer offered; T4 replaces them.
LEGACY_MACHINE_TYPES = types.MappingProxyType({
    'standard': ('n1-standard-4', None, 0),
    'large_model': ('n1-highmem-8', None, 0),
    'complex_model_s': ('n1-highcpu-8', None, 0),
    'complex_model_m': ('n1-highcpu-16', None, 0),
    'complex_model_l': ('n1-highcpu-32', None, 0),
    'standard_gpu': ('n1-standard-8', 'NVIDIA_TESLA_T4', 1),
    'complex_model_m_gpu': ('n1-standard-16', 'NVIDIA_TESLA_T4', 4),
    'complex_model_l_gpu': ('n1-standard-32', 'NVIDIA_TESLA_T4', 8),
    'standard_p100': ('n1-standard-8', 'NVIDIA_TESLA_P100', 1),
    'complex_model_m_p100': ('n1-standard-16', 'NVIDIA_TESLA_P100', 4),
    'standard_v100': ('n1-standard-8', 'NVIDIA_TESLA_V100', 1),
    'large_model_v100': ('n1-highmem-8', 'NVIDIA_TESLA_V100', 1),
    'complex_model_m_v100': ('n1-standard-16', 'NVIDIA_TESLA_V100', 4),
    'complex_model_l_v100': ('n1-standard-32', 'NVIDIA_TESLA_V100', 8),
})

# Legacy scale tiers -> role: (legacy machine name, replicas). The legacy
# service never fixed their exact shapes; these are tensorfx's translation.
SCALE_TIERS = types.MappingProxyType({
    'BASIC': {'chief': ('standard', 1)},
    'BASIC_GPU': {'chief': ('standard_gpu', 1)},
    'STANDARD_1': {'chief': ('complex_model_m', 1),
                   'workers': ('complex_model_m', 4),
                   'parameter_servers': ('standard', 3)},
    'PREMIUM_1': {'chief': ('complex_model_l', 1),
                  'workers': ('complex_model_l', 19),
                  'parameter_servers': ('large_model', 11)},
    'CUSTOM': {},
})

# Role -> legacy key prefix and flag prefix.
_LEGACY = {'chief': 'master', 'workers': 'worker',
           'parameter_servers': 'parameterServer', 'evaluator': 'evaluator'}
FLAG_PREFIX = types.MappingProxyType({
    'chief': 'master', 'workers': 'worker',
    'parameter_servers': 'parameter_server', 'evaluator': 'evaluator'})

_MODERN_MACHINE = re.compile(r'^[a-z][a-z0-9]*-[a-z0-9-]+$')
_DURATION = re.compile(r'^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$')

_LEGACY_TOP = ('trainingInput', 'labels', 'jobId')
_LEGACY_INPUT = (
    'scaleTier', 'masterType', 'masterConfig', 'workerType', 'workerConfig',
    'workerCount', 'parameterServerType', 'parameterServerConfig',
    'parameterServerCount', 'evaluatorType', 'evaluatorConfig',
    'evaluatorCount', 'hyperparameters', 'region', 'jobDir', 'args',
    'packageUris', 'pythonModule', 'serviceAccount', 'network', 'scheduling',
    'runtimeVersion', 'pythonVersion', 'useChiefInTfConfig')
_LEGACY_REPLICA = ('acceleratorConfig', 'imageUri', 'containerCommand',
                   'containerArgs', 'diskConfig')
_LEGACY_HYPER = ('goal', 'params', 'maxTrials', 'maxParallelTrials',
                 'maxFailedTrials', 'hyperparameterMetricTag', 'algorithm',
                 'enableTrialEarlyStopping')
_LEGACY_PARAM = ('parameterName', 'type', 'minValue', 'maxValue',
                 'discreteValues', 'categoricalValues', 'scaleType')

# The Vertex AI fields tensorfx reads itself; the others are checked against
# aiplatform_v1's messages (_vertexschema) and sent as they are.
_VERTEX_JOB = ('workerPoolSpecs', 'serviceAccount', 'network', 'scheduling',
               'baseOutputDirectory')
_MODELED_TOP = {'workerPoolSpecs': True, 'serviceAccount': True,
                'network': True, 'scheduling': {'timeout': True},
                'baseOutputDirectory': {'outputUriPrefix': True},
                'labels': True, 'displayName': True, 'studySpec': True,
                'maxTrialCount': True, 'parallelTrialCount': True,
                'maxFailedTrialCount': True, 'trialJobSpec': True}
_MODELED_JOB = {k: v for k, v in _MODELED_TOP.items() if k in _VERTEX_JOB}
_MODELED_POOL = {
    'machineSpec': {'machineType': True, 'acceleratorType': True,
                    'acceleratorCount': True},
    'replicaCount': True,
    'diskSpec': {'bootDiskType': True, 'bootDiskSizeGb': True},
    'pythonPackageSpec': {'executorImageUri': True, 'packageUris': True,
                          'pythonModule': True, 'args': True},
    'containerSpec': {'imageUri': True, 'command': True, 'args': True},
}
_MODELED_STUDY = {'metrics': True, 'parameters': True, 'algorithm': True,
                  'medianAutomatedStoppingSpec': True}


@dataclasses.dataclass(frozen=True)
class ConfigFile:
  """What a `--config` file says, before flags are applied.

  Attributes:
    source: the file's path.
    fields: `JobSpec` keyword arguments the file sets (region, job_dir,
      args, python_module, package_uris, labels, service_account, network,
      timeout_seconds, display_name, study).
    pools: role -> pool settings (dicts of `WorkerPool` fields), for the
      pools the file describes; empty when it describes none.
  """

  source: str
  fields: types.MappingProxyType
  pools: types.MappingProxyType


def _fail(where, problem, value=_yaml.NOTHING):
  return ConfigurationError(str(where.error(problem, value)))


def _check_keys(where, mapping, allowed, what):
  try:
    _yaml.check_keys(where, mapping, allowed, what)
  except DataError as e:
    raise ConfigurationError(str(e)) from None


def _mapping(where, value, what):
  if not isinstance(value, dict):
    raise _fail(where, f'expected a mapping ({what})', value)
  return value


def _list(where, value, what):
  if not isinstance(value, list):
    raise _fail(where, f'expected a list ({what})', value)
  return value


def _string(where, value, what='a string'):
  if not isinstance(value, str) or not value:
    raise _fail(where, f'expected {what}', value)
  return value


def _count(where, value, positive=False):
  # int64 fields arrive as strings in Vertex's JSON form ("replicaCount":
  # "2"); accept both.
  if isinstance(value, str) and re.fullmatch(r'-?\d+', value.strip()):
    value = int(value)
  if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (
      positive and value == 0):
    kind = 'a positive' if positive else 'a non-negative'
    raise _fail(where, f'expected {kind} integer', value)
  return value


def _number(where, value):
  if isinstance(value, str):
    try:
      value = float(value)
    except ValueError:
      pass
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise _fail(where, 'expected a number', value)
  return value


def _strings(where, value, what):
  items = _list(where, value, what)
  for index, item in enumerate(items):
    if not isinstance(item, (str, int, float)) or isinstance(item, bool):
      raise _fail(where.at(items, index), 'expected a string', item)
  return tuple(str(item) for item in items)


def parse_duration(text, name='--timeout'):
  """Seconds in a duration: '7200s', '2h', '1h30m', '90m', '3600', '1d'.

  Example:
    >>> parse_duration('1h30m')
    5400

  Raises:
    ConfigurationError: naming `name`, for anything else or zero.
  """
  if isinstance(text, int) and not isinstance(text, bool):
    seconds = text
  else:
    match = _DURATION.match(str(text).strip().lower())
    if not match or not str(text).strip():
      raise ConfigurationError(
          f'{name}: expected a duration such as 7200s, 2h or 1h30m. '
          f'Received: {name.lstrip("-")}={text!r}')
    days, hours, minutes, rest = (int(g or 0) for g in match.groups())
    seconds = ((days * 24 + hours) * 60 + minutes) * 60 + rest
  if seconds <= 0:
    raise ConfigurationError(
        f'{name}: expected a positive duration. '
        f'Received: {name.lstrip("-")}={text!r}')
  return seconds


def machine(name, fail):
  """(machine type, accelerator, count) for a legacy or Compute Engine name.

  Example:
    >>> machine('complex_model_m', ValueError)
    ('n1-highcpu-16', None, 0)
    >>> machine('n2-standard-8', ValueError)
    ('n2-standard-8', None, 0)

  Args:
    name: a legacy AI Platform machine name or a Compute Engine machine type.
    fail: called with a problem to make the exception raised for bad names.
  """
  if isinstance(name, str) and name in LEGACY_MACHINE_TYPES:
    return LEGACY_MACHINE_TYPES[name]
  if isinstance(name, str) and _MODERN_MACHINE.match(name):
    return name, None, 0
  raise fail('expected a Compute Engine machine type (e.g. n1-standard-4) '
             'or a legacy AI Platform one (' +
             ', '.join(LEGACY_MACHINE_TYPES) + ')')


def accelerator(name, fail):
  """The Vertex AI accelerator type for a name such as nvidia-tesla-t4."""
  normalized = _machines.normalize_accelerator(name)
  known = _machines.accelerator_types()
  if normalized not in known:
    raise fail(f'expected an accelerator type, one of {", ".join(known)}')
  return normalized


def _tier_pools(tier):
  pools = {}
  for role, (legacy, replicas) in SCALE_TIERS[tier].items():
    machine_type, accel, count = LEGACY_MACHINE_TYPES[legacy]
    pools[role] = {'machine_type': machine_type, 'replica_count': replicas,
                   'accelerator_type': accel, 'accelerator_count': count}
  return pools


def _new_pool(pools, role):
  """The role's pool, made like the chief's when there is none yet.

  Workers and the evaluator get the chief's machine and accelerators (the
  same model runs on them); parameter servers only hold variables, so they
  get the chief's machine type without accelerators.
  """
  if role not in pools:
    pool = {key: value for key, value in pools['chief'].items()
            if key != 'replica_count'}
    if role == 'parameter_servers':
      pool['accelerator_type'], pool['accelerator_count'] = None, 0
    pools[role] = pool
  return pools[role]


def _set_machine(pool, name, fail):
  machine_type, accel, count = machine(name, fail)
  pool['machine_type'] = machine_type
  # A legacy GPU machine name brings its GPUs; an explicit accelerator
  # config (applied after this) overrides them.
  pool['accelerator_type'], pool['accelerator_count'] = accel, count


def _scale_tier(where, value):
  tier = str(value).upper() if isinstance(value, str) else value
  if tier == 'BASIC_TPU':
    raise _fail(where, 'TPU scale tiers are not translated to Vertex AI; '
                'use CUSTOM with a TPU machine type', value)
  if tier not in SCALE_TIERS:
    raise _fail(where, 'expected a scale tier, one of ' +
                ', '.join(SCALE_TIERS), value)
  return tier


def _legacy_replica_config(where, config, pool):
  """Applies a legacy `*Config`; returns its containerArgs, if any."""
  _check_keys(where, config, _LEGACY_REPLICA, 'a legacy replica config')
  if 'acceleratorConfig' in config:
    at = where.at(config, 'acceleratorConfig')
    accel = _mapping(at, config['acceleratorConfig'], 'acceleratorConfig')
    _check_keys(at, accel, ('count', 'type'), 'acceleratorConfig')
    if 'type' not in accel:
      raise _fail(at, 'expected an accelerator type (type: NVIDIA_TESLA_T4)')
    pool['accelerator_type'] = accelerator(
        accel['type'], lambda p: _fail(at.at(accel, 'type'), p, accel['type']))
    pool['accelerator_count'] = _count(
        at.at(accel, 'count'), accel.get('count', 1), positive=True)
  if 'imageUri' in config:
    pool['image_uri'] = _string(where.at(config, 'imageUri'),
                                config['imageUri'], 'an image URI')
  if 'containerCommand' in config:
    pool['command'] = _strings(where.at(config, 'containerCommand'),
                               config['containerCommand'], 'the command')
  if 'diskConfig' in config:
    at = where.at(config, 'diskConfig')
    disk = _mapping(at, config['diskConfig'], 'diskConfig')
    _check_keys(at, disk, ('bootDiskType', 'bootDiskSizeGb'), 'diskConfig')
    _disk(at, disk, pool)
  if 'containerArgs' in config:
    return _strings(where.at(config, 'containerArgs'),
                    config['containerArgs'], 'the arguments')
  return None


def _disk(where, disk, pool):
  if 'bootDiskType' in disk:
    pool['boot_disk_type'] = _string(where.at(disk, 'bootDiskType'),
                                     disk['bootDiskType'])
  if 'bootDiskSizeGb' in disk:
    pool['boot_disk_size_gb'] = _count(where.at(disk, 'bootDiskSizeGb'),
                                       disk['bootDiskSizeGb'], positive=True)


def _legacy(where, doc):
  """Reads the legacy `trainingInput` form."""
  _check_keys(where, doc, _LEGACY_TOP, 'a legacy AI Platform job config')
  fields = {}
  at = where.at(doc, 'trainingInput')
  spec = _mapping(at, doc['trainingInput'], 'trainingInput')
  _check_keys(at, spec, _LEGACY_INPUT, 'trainingInput')

  def here(key):
    return at.at(spec, key)

  if 'masterType' in spec and 'scaleTier' not in spec:
    tier = 'CUSTOM'  # A master type alone meant a custom cluster.
  else:
    tier = _scale_tier(here('scaleTier'), spec.get('scaleTier', 'BASIC'))
  pools = _tier_pools(tier)
  if tier == 'CUSTOM' and 'masterType' not in spec:
    raise _fail(here('scaleTier'), 'scaleTier CUSTOM needs masterType', tier)
  for role, prefix in _LEGACY.items():
    type_key, count_key = f'{prefix}Type', f'{prefix}Count'
    config_key = f'{prefix}Config'
    if count_key in spec:
      count = _count(here(count_key), spec[count_key])
      if count == 0:
        pools.pop(role, None)
      else:
        _new_pool(pools, role)['replica_count'] = count
    if type_key in spec:
      if role not in pools and role != 'chief':
        raise _fail(here(type_key), f'{type_key} given without {count_key}',
                    spec[type_key])
      pool = pools.setdefault(role, {'replica_count': 1})
      _set_machine(pool, spec[type_key],
                   lambda p, k=type_key: _fail(here(k), p, spec[k]))
    if config_key in spec:
      if role not in pools:
        raise _fail(here(config_key), f'{config_key} given without '
                    f'{count_key}', spec[config_key])
      container_args = _legacy_replica_config(
          here(config_key),
          _mapping(here(config_key), spec[config_key], config_key),
          pools[role])
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
      _logger.warning('%s:%s: trainingInput.%s is ignored on Vertex AI (the '
                      'executor image decides the TensorFlow and Python '
                      'versions; the chief is always "chief").',
                      here(key).source, here(key).line, key)
  if 'args' in spec:
    fields['args'] = _strings(here('args'), spec['args'], 'the arguments')
  for key, field in (('region', 'region'), ('jobDir', 'job_dir'),
                     ('pythonModule', 'python_module'),
                     ('serviceAccount', 'service_account'),
                     ('network', 'network')):
    if key in spec:
      fields[field] = _string(here(key), spec[key])
  if 'packageUris' in spec:
    fields['package_uris'] = _strings(here('packageUris'), spec['packageUris'],
                                      'package URIs')
  if 'scheduling' in spec:
    sched_at = here('scheduling')
    scheduling = _mapping(sched_at, spec['scheduling'], 'scheduling')
    _check_keys(sched_at, scheduling, ('maxRunningTime', 'maxWaitTime'),
                'scheduling')
    if 'maxRunningTime' in scheduling:
      fields['timeout_seconds'] = _duration(
          sched_at.at(scheduling, 'maxRunningTime'),
          scheduling['maxRunningTime'])
    if 'maxWaitTime' in scheduling:
      wait_at = sched_at.at(scheduling, 'maxWaitTime')
      _logger.warning('%s:%s: trainingInput.scheduling.maxWaitTime is '
                      'ignored on Vertex AI.', wait_at.source, wait_at.line)
  if 'hyperparameters' in spec:
    fields['study'] = _legacy_study(here('hyperparameters'),
                                    spec['hyperparameters'])
  if 'labels' in doc:
    fields['labels'] = _labels(where.at(doc, 'labels'), doc['labels'])
  if 'jobId' in doc:
    fields['display_name'] = _string(where.at(doc, 'jobId'), doc['jobId'])
  return fields, pools


def _duration(where, value):
  try:
    return parse_duration(value, where.path)
  except ConfigurationError:
    raise _fail(where, 'expected a duration such as 7200s or 2h',
                value) from None


def _labels(where, value):
  labels = _mapping(where, value, 'labels: key: value')
  return {str(k): str(v) for k, v in labels.items()}


def _enum(where, value, choices, what):
  text = str(value).upper() if isinstance(value, str) else value
  if text not in choices:
    raise _fail(where, f'expected {what}, one of {", ".join(choices)}', value)
  return text


def _legacy_study(where, value):
  spec = _mapping(where, value, 'hyperparameters')
  _check_keys(where, spec, _LEGACY_HYPER, 'hyperparameters')
  for key in ('goal', 'params', 'maxTrials'):
    if key not in spec:
      raise _fail(where, f'hyperparameters need {key}')
  goal = _enum(where.at(spec, 'goal'), spec['goal'], _studyspec.GOALS, 'a goal')
  params_at = where.at(spec, 'params')
  params = _list(params_at, spec['params'], 'params')
  parameters = []
  for index, item in enumerate(params):
    at = params_at.at(params, index)
    param = _mapping(at, item, 'a parameter')
    _check_keys(at, param, _LEGACY_PARAM, 'a hyperparameter')
    for key in ('parameterName', 'type'):
      if key not in param:
        raise _fail(at, f'a hyperparameter needs {key}')
    kind = _enum(at.at(param, 'type'), param['type'],
                 _studyspec.PARAMETER_TYPES, 'a parameter type')
    scale = param.get('scaleType')
    if scale is not None:
      scale = _enum(at.at(param, 'scaleType'), scale,
                    _studyspec.SCALE_TYPES + ('NONE',), 'a scale type')
      scale = None if scale == 'NONE' else scale
    kwargs = {'scale_type': scale}
    if kind in ('DOUBLE', 'INTEGER'):
      for key, name in (('minValue', 'min_value'), ('maxValue', 'max_value')):
        if key not in param:
          raise _fail(at, f'a {kind} hyperparameter needs {key}')
        number = _number(at.at(param, key), param[key])
        if kind == 'INTEGER':
          if float(number) != int(number):
            raise _fail(at.at(param, key), 'expected an integer', number)
          number = int(number)
        kwargs[name] = number
    elif kind == 'DISCRETE':
      if 'discreteValues' not in param:
        raise _fail(at, 'a DISCRETE hyperparameter needs discreteValues')
      vat = at.at(param, 'discreteValues')
      values = _list(vat, param['discreteValues'], 'discreteValues')
      kwargs['values'] = tuple(_number(vat.at(values, i), v)
                               for i, v in enumerate(values))
    else:
      if 'categoricalValues' not in param:
        raise _fail(at, 'a CATEGORICAL hyperparameter needs '
                    'categoricalValues')
      kwargs['values'] = _strings(at.at(param, 'categoricalValues'),
                                  param['categoricalValues'],
                                  'categoricalValues')
    try:
      parameters.append(_studyspec.ParameterSpec(
          _string(at.at(param, 'parameterName'), param['parameterName']),
          kind, **kwargs))
    except ConfigurationError as e:
      raise _fail(at, str(e).rstrip('.')) from None
  max_trials = _count(where.at(spec, 'maxTrials'), spec['maxTrials'],
                      positive=True)
  parallel = _count(where.at(spec, 'maxParallelTrials'),
                    spec.get('maxParallelTrials', 1), positive=True)
  failed = _count(where.at(spec, 'maxFailedTrials'),
                  spec.get('maxFailedTrials', 0))
  algorithm = spec.get('algorithm')
  if algorithm is not None:
    algorithm = _enum(where.at(spec, 'algorithm'), algorithm,
                      _studyspec.ALGORITHMS + ('ALGORITHM_UNSPECIFIED',),
                      'an algorithm')
    algorithm = None if algorithm == 'ALGORITHM_UNSPECIFIED' else algorithm
  early = spec.get('enableTrialEarlyStopping', False)
  if not isinstance(early, bool):
    raise _fail(where.at(spec, 'enableTrialEarlyStopping'),
                'expected true or false', early)
  return _study(where, spec.get('hyperparameterMetricTag',
                                'training/hptuning/metric'),
                goal, parameters, max_trials, parallel, failed, algorithm,
                early)


def _study(where, metric, goal, parameters, max_trials, parallel, failed,
           algorithm, early, extra=None):
  try:
    return _studyspec.StudySpec(metric, goal, tuple(parameters), max_trials,
                                parallel, failed, algorithm, early,
                                types.MappingProxyType(extra or {}))
  except ConfigurationError as e:
    raise _fail(where, str(e).rstrip('.')) from None


def _snake_free(mapping):
  """The mapping with snake_case keys spelled camelCase (as the API's JSON)."""
  if not isinstance(mapping, dict):
    return mapping
  camel = _vertexschema.camel
  result = _yaml.LineDict(((camel(k), v) for k, v in mapping.items()),
                          line=getattr(mapping, 'line', None))
  lines = getattr(mapping, 'lines', {})
  result.lines = {camel(k): line for k, line in lines.items()}
  return result


def _vertex_pool(where, value, role):
  item = _snake_free(_mapping(where, value, 'a worker pool spec'))
  if not item:
    return None  # A placeholder for an unused pool.
  pool, extra = {}, {}
  rest = _vertexschema.split(_snake_free(item), _MODELED_POOL)
  if rest:
    pool['extra'] = rest
  if 'machineSpec' not in item:
    raise _fail(where, 'a worker pool spec needs machineSpec')
  mat = where.at(item, 'machineSpec')
  spec = _mapping(mat, item['machineSpec'], 'machineSpec')
  if 'machineType' not in spec:
    raise _fail(mat, 'machineSpec needs machineType')
  _set_machine(pool, spec['machineType'],
               lambda p: _fail(mat.at(spec, 'machineType'), p,
                               spec['machineType']))
  if 'acceleratorType' in spec:
    aat = mat.at(spec, 'acceleratorType')
    pool['accelerator_type'] = accelerator(
        spec['acceleratorType'], lambda p: _fail(aat, p,
                                                 spec['acceleratorType']))
    pool['accelerator_count'] = 1
  if 'acceleratorCount' in spec:
    pool['accelerator_count'] = _count(mat.at(spec, 'acceleratorCount'),
                                       spec['acceleratorCount'])
  pool['replica_count'] = _count(where.at(item, 'replicaCount'),
                                 item.get('replicaCount', 1))
  if role == 'chief' and pool['replica_count'] != 1:
    raise _fail(where.at(item, 'replicaCount'),
                'expected 1 (pool 0 is the chief)', pool['replica_count'])
  if 'diskSpec' in item:
    dat = where.at(item, 'diskSpec')
    disk = _mapping(dat, item['diskSpec'], 'diskSpec')
    _disk(dat, disk, pool)
  if 'pythonPackageSpec' in item:
    pat = where.at(item, 'pythonPackageSpec')
    package = _mapping(pat, item['pythonPackageSpec'], 'pythonPackageSpec')
    if 'executorImageUri' in package:
      pool['executor_image_uri'] = _string(
          pat.at(package, 'executorImageUri'), package['executorImageUri'])
    if 'pythonModule' in package:
      extra['python_module'] = _string(pat.at(package, 'pythonModule'),
                                       package['pythonModule'])
    if 'packageUris' in package:
      extra['package_uris'] = _strings(pat.at(package, 'packageUris'),
                                       package['packageUris'], 'packageUris')
    if 'args' in package:
      extra['args'] = _strings(pat.at(package, 'args'), package['args'],
                               'args')
  if 'containerSpec' in item:
    cat = where.at(item, 'containerSpec')
    container = _mapping(cat, item['containerSpec'], 'containerSpec')
    if 'imageUri' not in container:
      raise _fail(cat, 'containerSpec needs imageUri')
    pool['image_uri'] = _string(cat.at(container, 'imageUri'),
                                container['imageUri'])
    if 'command' in container:
      pool['command'] = _strings(cat.at(container, 'command'),
                                 container['command'], 'command')
    if 'args' in container:
      extra['args'] = _strings(cat.at(container, 'args'), container['args'],
                               'args')
  return pool, extra


def _vertex_study(where, doc):
  at = where.at(doc, 'studySpec')
  spec = _mapping(at, doc['studySpec'], 'studySpec')
  study_extra = _vertexschema.split(spec, _MODELED_STUDY)
  for key in ('metrics', 'parameters'):
    if key not in spec:
      raise _fail(at, f'studySpec needs {key}')
  mat = at.at(spec, 'metrics')
  metrics = _list(mat, spec['metrics'], 'metrics')
  if len(metrics) != 1:
    raise _fail(mat, 'expected exactly one metric', metrics)
  metric = _mapping(mat.at(metrics, 0), metrics[0], 'a metric')
  for key in ('metricId', 'goal'):
    if key not in metric:
      raise _fail(mat.at(metrics, 0), f'a metric needs {key}')
  goal = _enum(mat.at(metrics, 0).at(metric, 'goal'), metric['goal'],
               _studyspec.GOALS, 'a goal')
  pat = at.at(spec, 'parameters')
  items = _list(pat, spec['parameters'], 'parameters')
  parameters = []
  kinds = (('doubleValueSpec', 'DOUBLE'), ('integerValueSpec', 'INTEGER'),
           ('discreteValueSpec', 'DISCRETE'),
           ('categoricalValueSpec', 'CATEGORICAL'))
  for index, item in enumerate(items):
    iat = pat.at(items, index)
    param = _mapping(iat, item, 'a parameter')
    if 'parameterId' not in param:
      raise _fail(iat, 'a parameter needs parameterId')
    given = [(k, t) for k, t in kinds if k in param]
    if len(given) != 1:
      raise _fail(iat, 'a parameter needs exactly one of ' +
                  ', '.join(k for k, _ in kinds))
    key, kind = given[0]
    vat = iat.at(param, key)
    values = _mapping(vat, param[key], key)
    kwargs = {}
    if kind in ('DOUBLE', 'INTEGER'):
      for name, field in (('minValue', 'min_value'),
                          ('maxValue', 'max_value')):
        if name not in values:
          raise _fail(vat, f'{key} needs {name}')
        number = _number(vat.at(values, name), values[name])
        kwargs[field] = int(number) if kind == 'INTEGER' else number
    else:
      if 'values' not in values:
        raise _fail(vat, f'{key} needs values')
      lat = vat.at(values, 'values')
      if kind == 'DISCRETE':
        listed = _list(lat, values['values'], 'values')
        kwargs['values'] = tuple(_number(lat.at(listed, i), v)
                                 for i, v in enumerate(listed))
      else:
        kwargs['values'] = _strings(lat, values['values'], 'values')
    if 'scaleType' in param:
      scale = _enum(iat.at(param, 'scaleType'), param['scaleType'],
                    _studyspec.SCALE_TYPES + ('SCALE_TYPE_UNSPECIFIED',),
                    'a scale type')
      kwargs['scale_type'] = None if scale == 'SCALE_TYPE_UNSPECIFIED' \
          else scale
    try:
      parameters.append(_studyspec.ParameterSpec(
          _string(iat.at(param, 'parameterId'), param['parameterId']), kind,
          **kwargs))
    except ConfigurationError as e:
      raise _fail(iat, str(e).rstrip('.')) from None
  algorithm = spec.get('algorithm')
  if algorithm is not None:
    algorithm = _enum(at.at(spec, 'algorithm'), algorithm,
                      _studyspec.ALGORITHMS + ('ALGORITHM_UNSPECIFIED',),
                      'an algorithm')
    algorithm = None if algorithm == 'ALGORITHM_UNSPECIFIED' else algorithm
  early = 'medianAutomatedStoppingSpec' in spec
  for key in ('maxTrialCount',):
    if key not in doc:
      raise _fail(where, f'a tuning config needs {key}')
  max_trials = _count(where.at(doc, 'maxTrialCount'), doc['maxTrialCount'],
                      positive=True)
  parallel = _count(where.at(doc, 'parallelTrialCount'),
                    doc.get('parallelTrialCount', 1), positive=True)
  failed = _count(where.at(doc, 'maxFailedTrialCount'),
                  doc.get('maxFailedTrialCount', 0))
  return _study(at, metric['metricId'], goal, parameters, max_trials,
                parallel, failed, algorithm, early, study_extra)


def _vertex(where, doc):
  """Reads Vertex AI's form (a CustomJobSpec, or a tuning job's fields)."""
  _vertexschema.check(where, doc, _vertexschema.top_level_fields(),
                      'job config')
  doc = _snake_free(doc)
  fields, pools = {}, {}
  job, job_at = doc, where
  if 'trialJobSpec' in doc:
    clash = [k for k in _VERTEX_JOB if k in doc]
    if clash:
      raise _fail(where.at(doc, clash[0]), f'{clash[0]} belongs under '
                  'trialJobSpec when that is given')
    job_at = where.at(doc, 'trialJobSpec')
    job = _snake_free(_mapping(job_at, doc['trialJobSpec'], 'trialJobSpec'))
  for key in ('maxTrialCount', 'parallelTrialCount', 'maxFailedTrialCount'):
    if key in doc and 'studySpec' not in doc:
      raise _fail(where.at(doc, key), f'{key} needs a studySpec', doc[key])
  if 'workerPoolSpecs' in job:
    wat = job_at.at(job, 'workerPoolSpecs')
    items = _list(wat, job['workerPoolSpecs'], 'workerPoolSpecs')
    if not items or len(items) > len(_workerpool.ROLES):
      raise _fail(wat, 'expected 1 to 4 worker pools (chief, workers, '
                  'parameter servers, evaluator)', len(items))
    for index, (role, item) in enumerate(zip(_workerpool.ROLES, items)):
      result = _vertex_pool(wat.at(items, index), item, role)
      if result is None:
        if role == 'chief':
          raise _fail(wat.at(items, 0), 'pool 0 (the chief) cannot be empty')
        continue
      pool, extra = result
      if pool.get('replica_count', 1) > 0:
        pools[role] = pool
      for key, value in extra.items():
        fields.setdefault(key, value)  # Pool 0's win: all pools run one job.
  if 'serviceAccount' in job:
    fields['service_account'] = _string(
        job_at.at(job, 'serviceAccount'), job['serviceAccount'])
  if 'network' in job:
    fields['network'] = _string(job_at.at(job, 'network'), job['network'])
  if 'scheduling' in job:
    sat = job_at.at(job, 'scheduling')
    scheduling = _mapping(sat, job['scheduling'], 'scheduling')
    if 'timeout' in scheduling:
      fields['timeout_seconds'] = _duration(
          sat.at(scheduling, 'timeout'), scheduling['timeout'])
  if 'baseOutputDirectory' in job:
    bat = job_at.at(job, 'baseOutputDirectory')
    base = _mapping(bat, job['baseOutputDirectory'], 'baseOutputDirectory')
    if 'outputUriPrefix' in base:
      fields['job_dir'] = _string(bat.at(base, 'outputUriPrefix'),
                                  base['outputUriPrefix'])
  if 'labels' in doc:
    fields['labels'] = _labels(where.at(doc, 'labels'), doc['labels'])
  if 'displayName' in doc:
    fields['display_name'] = _string(where.at(doc, 'displayName'),
                                     doc['displayName'])
  if 'studySpec' in doc:
    fields['study'] = _vertex_study(where, doc)
  spec_names = _vertexschema.job_spec_fields()
  if 'trialJobSpec' in doc:
    top = doc
  else:  # The CustomJobSpec's fields are at the top level.
    job = {k: v for k, v in doc.items() if k in spec_names}
    top = {k: v for k, v in doc.items() if k not in spec_names}
  for key, found in (('job_spec_extra', _vertexschema.split(job,
                                                            _MODELED_JOB)),
                     ('extra', _vertexschema.split(top, _MODELED_TOP))):
    if found:
      fields[key] = found
  return fields, pools


def load_config(path):
  """Reads a `--config` file (Vertex AI or legacy AI Platform form).

  Example:
    >>> config = load_config('config.yaml')  # doctest: +SKIP
    >>> config.pools['workers']['replica_count']  # doctest: +SKIP
    9

  Args:
    path: a local YAML file.

  Returns:
    A `ConfigFile`.

  Raises:
    ConfigurationError: the file does not exist, is not valid YAML, or has
      an unknown key or a bad value; the message names the file, line and
      key.
  """
  path = os.fspath(path)
  if not os.path.isfile(path):
    raise ConfigurationError(f'--config: no such file. Received: '
                             f'config={path!r}')
  with open(path) as f:
    text = f.read()
  try:
    doc = _yaml.load_yaml(text, path)
  except DataError as e:
    raise ConfigurationError(str(e)) from None
  where = _yaml.root(doc, path)
  if not isinstance(doc, dict) or not doc:
    raise _fail(where, 'expected a mapping with trainingInput (legacy AI '
                'Platform) or workerPoolSpecs/studySpec (Vertex AI)',
                doc if doc is not None else {})
  if 'trainingInput' in doc:
    fields, pools = _legacy(where, doc)
  else:
    fields, pools = _vertex(where, doc)
  return ConfigFile(path, types.MappingProxyType(fields),
                    types.MappingProxyType(pools))


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
          f'type=nvidia-tesla-t4,count=1. Received: {text!r}')
    values[key.strip()] = value.strip()
  if 'type' not in values:
    raise ConfigurationError(f'{flag}: expected type=TYPE[,count=N]. '
                             f'Received: {text!r}')
  kind = accelerator(values['type'], lambda p: ConfigurationError(
      f'{flag}: {p}. Received: type={values["type"]!r}'))
  count = values.get('count', '1')
  if not count.isdigit() or int(count) < 1:
    raise ConfigurationError(f'{flag}: expected count to be a positive '
                             f'integer. Received: count={count!r}')
  return kind, int(count)


def parse_labels(text):
  """Reads `k=v,k2=v2` into a dict (gcloud's --labels)."""
  labels = {}
  for part in str(text).split(','):
    if not part.strip():
      continue
    key, sep, value = part.partition('=')
    if not sep:
      raise ConfigurationError(f'--labels: expected KEY=VALUE[,...]. '
                               f'Received: {part!r}')
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
            f'Received: {prefix}_count={count!r}')
      if count == 0:
        pools.pop(role, None)
        continue
      _new_pool(pools, role)['replica_count'] = count
    if role not in pools and (machine_type or accel or image):
      if role == 'chief':
        pools[role] = {'replica_count': 1}
      else:
        raise ConfigurationError(
            f'{flag}-machine-type/-accelerator/-image-uri: the job has no '
            f'{role.replace("_", " ")}; set {flag}-count. '
            f'Received: {prefix}_count=0')
    if machine_type:
      _set_machine(pools[role], machine_type, lambda p, f=flag, m=machine_type:
                   ConfigurationError(f'{f}-machine-type: {p}. '
                                      f'Received: {m!r}'))
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


def job_spec(*, config=None, project=None, region=None, job_name=None,
             staging_bucket=None, module_name=None, package_uris=(),
             args=(), job_dir=None, scale_tier=None, labels=None,
             service_account=None, network=None, timeout=None,
             executor_image_uri=None, trainer_image=None, environ=None,
             **pool_flags):
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
  import datetime  # pylint: disable=g-import-not-at-top
  environ = os.environ if environ is None else environ
  known = {f'{FLAG_PREFIX[r]}_{s}' for r in _workerpool.ROLES
           for s in ('machine_type', 'accelerator', 'image_uri', 'count')}
  unknown = sorted(set(pool_flags) - known)
  if unknown:
    raise TypeError(f'job_spec() got unexpected keyword arguments: '
                    f'{", ".join(unknown)}')
  loaded = load_config(config) if config else None
  fields = dict(loaded.fields) if loaded else {}
  pools = {role: dict(pool) for role, pool in
           (loaded.pools.items() if loaded else ())}
  if scale_tier:
    tier = str(scale_tier).upper().replace('-', '_')
    if tier not in SCALE_TIERS:
      raise ConfigurationError(
          f'--scale-tier: expected one of {", ".join(SCALE_TIERS)}. '
          f'Received: scale_tier={scale_tier!r}')
    pools = _tier_pools(tier)
    if tier == 'CUSTOM' and not pool_flags.get('master_machine_type'):
      raise ConfigurationError(
          '--scale-tier CUSTOM needs --master-machine-type. '
          'Received: master_machine_type=None')
  if not pools:
    pools = _tier_pools('BASIC')
  _flag_pools(pools, dict(pool_flags))
  if executor_image_uri:
    for pool in pools.values():
      pool['executor_image_uri'] = executor_image_uri
  module = module_name or fields.get('python_module')
  name = job_name or fields.get('display_name') or '{}_{}'.format(
      (module or 'tensorfx').replace('.', '_'),
      datetime.datetime.now().strftime('%Y%m%d_%H%M%S'))
  job_dir = job_dir or fields.get('job_dir')
  staging = staging_bucket or (f'{str(job_dir).rstrip("/")}/packages'
                               if job_dir and str(job_dir).startswith('gs://')
                               else None)
  merged_labels = dict(fields.get('labels', {}))
  if labels:
    merged_labels.update(parse_labels(labels) if isinstance(labels, str)
                         else labels)
  timeout_seconds = parse_duration(timeout) if timeout is not None \
      else fields.get('timeout_seconds')
  all_args = tuple(fields.get('args', ())) + tuple(args)
  roles = {role: (_workerpool.WorkerPool(**pools[role]) if role in pools
                  else None)
           for role in _workerpool.ROLES}
  return _jobspec.JobSpec(
      project=project or environ.get('GOOGLE_CLOUD_PROJECT') or
      environ.get('CLOUDSDK_CORE_PROJECT') or '',
      region=region or fields.get('region') or '',
      display_name=name,
      staging_location=staging or '',
      python_module=module,
      package_uris=tuple(package_uris) + tuple(
          fields.get('package_uris', ())),
      args=all_args,
      job_dir=job_dir,
      labels=merged_labels,
      service_account=service_account or fields.get('service_account'),
      network=network or fields.get('network'),
      timeout_seconds=timeout_seconds,
      study=fields.get('study'),
      trainer_image=trainer_image,
      extra=types.MappingProxyType(dict(fields.get('extra', {}))),
      job_spec_extra=types.MappingProxyType(
          dict(fields.get('job_spec_extra', {}))),
      **roles)
