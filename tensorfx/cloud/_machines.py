"""Machines: legacy AI Platform machine names and scale tiers, accelerators.

Legacy machine names (`standard`, `large_model`, `complex_model_m`,
`standard_gpu`, ...) become the Compute Engine machine types (and GPUs)
they stood for, and scale tiers become worker pools: settings of each
role's pool (dicts of `WorkerPool` fields) that the config file readers
and the command-line flags then change.
"""

import re
import types

from tensorfx.cloud import _checks

# Legacy AI Platform machine names -> (machine type, accelerator, count).
# The K80 GPUs of the *_gpu types are no longer offered; T4 replaces them.
LEGACY_MACHINE_TYPES = types.MappingProxyType(
  {
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
  }
)

# Legacy scale tiers -> role: (legacy machine name, replicas). The legacy
# service never fixed their exact shapes; these are tensorfx's translation.
SCALE_TIERS = types.MappingProxyType(
  {
    'BASIC': {'chief': ('standard', 1)},
    'BASIC_GPU': {'chief': ('standard_gpu', 1)},
    'STANDARD_1': {
      'chief': ('complex_model_m', 1),
      'workers': ('complex_model_m', 4),
      'parameter_servers': ('standard', 3),
    },
    'PREMIUM_1': {
      'chief': ('complex_model_l', 1),
      'workers': ('complex_model_l', 19),
      'parameter_servers': ('large_model', 11),
    },
    'CUSTOM': {},
  }
)

_MODERN_MACHINE = re.compile(r'^[a-z][a-z0-9]*-[a-z0-9-]+$')


def accelerator_types():
  """The accelerator type names Vertex AI accepts (from its API)."""
  from google.cloud import aiplatform_v1

  return tuple(
    n
    for n in aiplatform_v1.AcceleratorType.__members__
    if n != 'ACCELERATOR_TYPE_UNSPECIFIED'
  )


def normalize_accelerator(name):
  """'nvidia-tesla-t4' -> 'NVIDIA_TESLA_T4' (gcloud flags used lower case)."""
  return str(name).strip().upper().replace('-', '_')


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
  raise fail(
    'expected a Compute Engine machine type (e.g. n1-standard-4) '
    'or a legacy AI Platform one (' + ', '.join(LEGACY_MACHINE_TYPES) + ')'
  )


def accelerator(name, fail):
  """The Vertex AI accelerator type for a name such as nvidia-tesla-t4."""
  normalized = normalize_accelerator(name)
  known = accelerator_types()
  if normalized not in known:
    raise fail(f'expected an accelerator type, one of {", ".join(known)}')
  return normalized


def tier_pools(tier):
  pools = {}
  for role, (legacy, replicas) in SCALE_TIERS[tier].items():
    machine_type, accel, count = LEGACY_MACHINE_TYPES[legacy]
    pools[role] = {
      'machine_type': machine_type,
      'replica_count': replicas,
      'accelerator_type': accel,
      'accelerator_count': count,
    }
  return pools


def new_pool(pools, role):
  """The role's pool, made like the chief's when there is none yet.

  Workers and the evaluator get the chief's machine and accelerators (the
  same model runs on them); parameter servers only hold variables, so they
  get the chief's machine type without accelerators.
  """
  if role not in pools:
    pool = {
      key: value
      for key, value in pools['chief'].items()
      if key != 'replica_count'
    }
    if role == 'parameter_servers':
      pool['accelerator_type'], pool['accelerator_count'] = None, 0
    pools[role] = pool
  return pools[role]


def set_machine(pool, name, fail):
  machine_type, accel, count = machine(name, fail)
  pool['machine_type'] = machine_type
  # A legacy GPU machine name brings its GPUs; an explicit accelerator
  # config (applied after this) overrides them.
  pool['accelerator_type'], pool['accelerator_count'] = accel, count


def set_disk(where, disk, pool):
  if 'bootDiskType' in disk:
    pool['boot_disk_type'] = _checks.string(
      where.at(disk, 'bootDiskType'), disk['bootDiskType']
    )
  if 'bootDiskSizeGb' in disk:
    pool['boot_disk_size_gb'] = _checks.count(
      where.at(disk, 'bootDiskSizeGb'), disk['bootDiskSizeGb'], positive=True
    )
