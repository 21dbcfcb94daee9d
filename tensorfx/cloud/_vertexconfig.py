"""The Vertex AI form of a `--config` file.

What `gcloud ai custom-jobs create --config` and `gcloud ai hp-tuning-jobs
create --config` read: `workerPoolSpecs`, `scheduling`, `serviceAccount`,
`baseOutputDirectory`, ..., and for tuning `studySpec` with
`maxTrialCount`/`parallelTrialCount` (optionally the job under
`trialJobSpec`). Every key is checked against aiplatform_v1's messages
(`_vertexschema`); the fields tensorfx does not read itself are sent as
they are.
"""

from typing import Any

from tensorfx import _yaml
from tensorfx.cloud import _checks
from tensorfx.cloud import _machines
from tensorfx.cloud import _studyconfig
from tensorfx.cloud import _vertexschema
from tensorfx.cloud import _workerpool

# The Vertex AI fields tensorfx reads itself; the others are checked against
# aiplatform_v1's messages (_vertexschema) and sent as they are.
_VERTEX_JOB = (
  'workerPoolSpecs',
  'serviceAccount',
  'network',
  'scheduling',
  'baseOutputDirectory',
)
_MODELED_TOP = {
  'workerPoolSpecs': True,
  'serviceAccount': True,
  'network': True,
  'scheduling': {'timeout': True},
  'baseOutputDirectory': {'outputUriPrefix': True},
  'labels': True,
  'displayName': True,
  'studySpec': True,
  'maxTrialCount': True,
  'parallelTrialCount': True,
  'maxFailedTrialCount': True,
  'trialJobSpec': True,
}
_MODELED_JOB = {k: v for k, v in _MODELED_TOP.items() if k in _VERTEX_JOB}
_MODELED_POOL = {
  'machineSpec': {
    'machineType': True,
    'acceleratorType': True,
    'acceleratorCount': True,
  },
  'replicaCount': True,
  'diskSpec': {'bootDiskType': True, 'bootDiskSizeGb': True},
  'pythonPackageSpec': {
    'executorImageUri': True,
    'packageUris': True,
    'pythonModule': True,
    'args': True,
  },
  'containerSpec': {'imageUri': True, 'command': True, 'args': True},
}


def _snake_free(mapping):
  """The mapping with snake_case keys spelled camelCase (as the API's JSON)."""
  if not isinstance(mapping, dict):
    return mapping
  camel = _vertexschema.camel
  result = _yaml.LineDict(
    ((camel(k), v) for k, v in mapping.items()),
    line=getattr(mapping, 'line', None),
  )
  lines = getattr(mapping, 'lines', {})
  result.lines = {camel(k): line for k, line in lines.items()}
  return result


def _vertex_pool(where, value, role):
  item = _snake_free(_checks.mapping(where, value, 'a worker pool spec'))
  if not item:
    return None  # A placeholder for an unused pool.
  pool, extra = {}, {}
  rest = _vertexschema.split(_snake_free(item), _MODELED_POOL)
  if rest:
    pool['extra'] = rest
  _checks.require(where, item, ('machineSpec',), 'a worker pool spec needs')
  mat = where.at(item, 'machineSpec')
  spec = _checks.mapping(mat, item['machineSpec'], 'machineSpec')
  _checks.require(mat, spec, ('machineType',), 'machineSpec needs')
  _machines.set_machine(
    pool,
    spec['machineType'],
    lambda p: _checks.fail(mat.at(spec, 'machineType'), p, spec['machineType']),
  )
  if 'acceleratorType' in spec:
    aat = mat.at(spec, 'acceleratorType')
    pool['accelerator_type'] = _machines.accelerator(
      spec['acceleratorType'],
      lambda p: _checks.fail(aat, p, spec['acceleratorType']),
    )
    pool['accelerator_count'] = 1
  if 'acceleratorCount' in spec:
    pool['accelerator_count'] = _checks.count(
      mat.at(spec, 'acceleratorCount'), spec['acceleratorCount']
    )
  pool['replica_count'] = _checks.count(
    where.at(item, 'replicaCount'), item.get('replicaCount', 1)
  )
  if role == 'chief' and pool['replica_count'] != 1:
    raise _checks.fail(
      where.at(item, 'replicaCount'),
      'expected 1 (pool 0 is the chief)',
      pool['replica_count'],
    )
  if 'diskSpec' in item:
    dat = where.at(item, 'diskSpec')
    disk = _checks.mapping(dat, item['diskSpec'], 'diskSpec')
    _machines.set_disk(dat, disk, pool)
  if 'pythonPackageSpec' in item:
    pat = where.at(item, 'pythonPackageSpec')
    package = _checks.mapping(
      pat, item['pythonPackageSpec'], 'pythonPackageSpec'
    )
    if 'executorImageUri' in package:
      pool['executor_image_uri'] = _checks.string(
        pat.at(package, 'executorImageUri'), package['executorImageUri']
      )
    if 'pythonModule' in package:
      extra['python_module'] = _checks.string(
        pat.at(package, 'pythonModule'), package['pythonModule']
      )
    if 'packageUris' in package:
      extra['package_uris'] = _checks.strings(
        pat.at(package, 'packageUris'), package['packageUris'], 'packageUris'
      )
    if 'args' in package:
      extra['args'] = _checks.strings(
        pat.at(package, 'args'), package['args'], 'args'
      )
  if 'containerSpec' in item:
    cat = where.at(item, 'containerSpec')
    container = _checks.mapping(cat, item['containerSpec'], 'containerSpec')
    _checks.require(cat, container, ('imageUri',), 'containerSpec needs')
    pool['image_uri'] = _checks.string(
      cat.at(container, 'imageUri'), container['imageUri']
    )
    if 'command' in container:
      pool['command'] = _checks.strings(
        cat.at(container, 'command'), container['command'], 'command'
      )
    if 'args' in container:
      extra['args'] = _checks.strings(
        cat.at(container, 'args'), container['args'], 'args'
      )
  return pool, extra


def read(where, doc):
  """Reads Vertex AI's form (a CustomJobSpec, or a tuning job's fields)."""
  _vertexschema.check(
    where, doc, _vertexschema.top_level_fields(), 'job config'
  )
  doc = _snake_free(doc)
  fields: dict[str, Any] = {}
  pools: dict[str, Any] = {}
  job, job_at = doc, where
  if 'trialJobSpec' in doc:
    clash = [k for k in _VERTEX_JOB if k in doc]
    if clash:
      raise _checks.fail(
        where.at(doc, clash[0]),
        f'{clash[0]} belongs under trialJobSpec when that is given',
      )
    job_at = where.at(doc, 'trialJobSpec')
    job = _snake_free(
      _checks.mapping(job_at, doc['trialJobSpec'], 'trialJobSpec')
    )
  for key in ('maxTrialCount', 'parallelTrialCount', 'maxFailedTrialCount'):
    if key in doc and 'studySpec' not in doc:
      raise _checks.fail(
        where.at(doc, key), f'{key} needs a studySpec', doc[key]
      )
  if 'workerPoolSpecs' in job:
    wat = job_at.at(job, 'workerPoolSpecs')
    items = _checks.sequence(wat, job['workerPoolSpecs'], 'workerPoolSpecs')
    if not items or len(items) > len(_workerpool.ROLES):
      raise _checks.fail(
        wat,
        'expected 1 to 4 worker pools (chief, workers, '
        'parameter servers, evaluator)',
        len(items),
      )
    for index, (role, item) in enumerate(zip(_workerpool.ROLES, items)):
      result = _vertex_pool(wat.at(items, index), item, role)
      if result is None:
        if role == 'chief':
          raise _checks.fail(
            wat.at(items, 0), 'pool 0 (the chief) cannot be empty'
          )
        continue
      pool, extra = result
      if pool.get('replica_count', 1) > 0:
        pools[role] = pool
      for key, value in extra.items():
        fields.setdefault(key, value)  # Pool 0's win: all pools run one job.
  if 'serviceAccount' in job:
    fields['service_account'] = _checks.string(
      job_at.at(job, 'serviceAccount'), job['serviceAccount']
    )
  if 'network' in job:
    fields['network'] = _checks.string(
      job_at.at(job, 'network'), job['network']
    )
  if 'scheduling' in job:
    sat = job_at.at(job, 'scheduling')
    scheduling = _checks.mapping(sat, job['scheduling'], 'scheduling')
    if 'timeout' in scheduling:
      fields['timeout_seconds'] = _checks.duration(
        sat.at(scheduling, 'timeout'), scheduling['timeout']
      )
  if 'baseOutputDirectory' in job:
    bat = job_at.at(job, 'baseOutputDirectory')
    base = _checks.mapping(
      bat, job['baseOutputDirectory'], 'baseOutputDirectory'
    )
    if 'outputUriPrefix' in base:
      fields['job_dir'] = _checks.string(
        bat.at(base, 'outputUriPrefix'), base['outputUriPrefix']
      )
  if 'labels' in doc:
    fields['labels'] = _checks.labels(where.at(doc, 'labels'), doc['labels'])
  if 'displayName' in doc:
    fields['display_name'] = _checks.string(
      where.at(doc, 'displayName'), doc['displayName']
    )
  if 'studySpec' in doc:
    fields['study'] = _studyconfig.vertex_study(where, doc)
  spec_names = _vertexschema.job_spec_fields()
  if 'trialJobSpec' in doc:
    top = doc
  else:  # The CustomJobSpec's fields are at the top level.
    job = {k: v for k, v in doc.items() if k in spec_names}
    top = {k: v for k, v in doc.items() if k not in spec_names}
  for key, found in (
    ('job_spec_extra', _vertexschema.split(job, _MODELED_JOB)),
    ('extra', _vertexschema.split(top, _MODELED_TOP)),
  ):
    if found:
      fields[key] = found
  return fields, pools
