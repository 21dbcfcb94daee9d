"""Tuning studies in a `--config` file, read into a `StudySpec`.

Legacy AI Platform's `trainingInput.hyperparameters` or Vertex AI's
`studySpec` (with `maxTrialCount`, `parallelTrialCount` and
`maxFailedTrialCount` beside it).
"""

import types

from tensorfx._errors import ConfigurationError
from tensorfx.cloud import _checks
from tensorfx.cloud import _studyspec
from tensorfx.cloud import _vertexschema

_LEGACY_HYPER = (
  'goal',
  'params',
  'maxTrials',
  'maxParallelTrials',
  'maxFailedTrials',
  'hyperparameterMetricTag',
  'algorithm',
  'enableTrialEarlyStopping',
)
_LEGACY_PARAM = (
  'parameterName',
  'type',
  'minValue',
  'maxValue',
  'discreteValues',
  'categoricalValues',
  'scaleType',
)

# The Vertex AI fields tensorfx reads itself; the others are checked against
# aiplatform_v1's messages (_vertexschema) and sent as they are.
_MODELED_STUDY = {
  'metrics': True,
  'parameters': True,
  'algorithm': True,
  'medianAutomatedStoppingSpec': True,
}


def legacy_study(where, value):
  spec = _checks.mapping(where, value, 'hyperparameters')
  _checks.check_keys(where, spec, _LEGACY_HYPER, 'hyperparameters')
  _checks.require(
    where, spec, ('goal', 'params', 'maxTrials'), 'hyperparameters need'
  )
  goal = _checks.enum(
    where.at(spec, 'goal'), spec['goal'], _studyspec.GOALS, 'a goal'
  )
  params_at = where.at(spec, 'params')
  params = _checks.sequence(params_at, spec['params'], 'params')
  parameters = []
  for index, item in enumerate(params):
    at = params_at.at(params, index)
    param = _checks.mapping(at, item, 'a parameter')
    _checks.check_keys(at, param, _LEGACY_PARAM, 'a hyperparameter')
    _checks.require(
      at, param, ('parameterName', 'type'), 'a hyperparameter needs'
    )
    kind = _checks.enum(
      at.at(param, 'type'),
      param['type'],
      _studyspec.PARAMETER_TYPES,
      'a parameter type',
    )
    scale = param.get('scaleType')
    if scale is not None:
      scale = _choice(
        at.at(param, 'scaleType'), scale, _studyspec.SCALE_TYPES, 'NONE'
      )
    # Legacy names the list by the type: discreteValues, categoricalValues.
    kwargs = _values(
      at,
      param,
      kind,
      f'a {kind} hyperparameter needs',
      f'{kind.lower()}Values',
      whole=True,
    )
    kwargs['scale_type'] = scale
    parameters.append(_parameter(at, param, 'parameterName', kind, kwargs))
  counts = _trial_counts(
    where, spec, 'maxTrials', 'maxParallelTrials', 'maxFailedTrials'
  )
  algorithm = _algorithm(where, spec)
  early = spec.get('enableTrialEarlyStopping', False)
  if not isinstance(early, bool):
    raise _checks.fail(
      where.at(spec, 'enableTrialEarlyStopping'),
      'expected true or false',
      early,
    )
  return _study(
    where,
    spec.get('hyperparameterMetricTag', 'training/hptuning/metric'),
    goal,
    parameters,
    counts,
    algorithm,
    early,
  )


def _values(where, values, kind, needs, listed, whole=False):
  """The range or the values of a parameter, as `ParameterSpec` arguments.

  Args:
    where: the location of `values`.
    values: the mapping with minValue and maxValue (DOUBLE and INTEGER), or
      with the list `listed` (DISCRETE and CATEGORICAL).
    kind: the parameter's type.
    needs: what a message says needs a missing key.
    listed: the key of the list.
    whole: whether an INTEGER's bounds must be whole numbers (else cut).
  """
  if kind in ('DOUBLE', 'INTEGER'):
    bounds = {}
    for key, name in (('minValue', 'min_value'), ('maxValue', 'max_value')):
      _checks.require(where, values, (key,), needs)
      number = _checks.number(where.at(values, key), values[key])
      if kind == 'INTEGER':
        if whole and float(number) != int(number):
          raise _checks.fail(
            where.at(values, key), 'expected an integer', number
          )
        number = int(number)
      bounds[name] = number
    return bounds
  _checks.require(where, values, (listed,), needs)
  at = where.at(values, listed)
  if kind == 'CATEGORICAL':
    return {'values': _checks.strings(at, values[listed], listed)}
  items = _checks.sequence(at, values[listed], listed)
  return {
    'values': tuple(
      _checks.number(at.at(items, i), v) for i, v in enumerate(items)
    )
  }


def _parameter(where, param, name_key, kind, kwargs):
  """The `ParameterSpec` of a parameter; its errors name `where`."""
  try:
    return _studyspec.ParameterSpec(
      _checks.string(where.at(param, name_key), param[name_key]),
      kind,
      **kwargs,
    )
  except ConfigurationError as e:
    raise _checks.fail(where, str(e).rstrip('.')) from None


def _trial_counts(where, doc, most, parallel, failed):
  """(max trials, parallel trials, max failed trials) under these keys."""
  return (
    _checks.count(where.at(doc, most), doc[most], positive=True),
    _checks.count(where.at(doc, parallel), doc.get(parallel, 1), positive=True),
    _checks.count(where.at(doc, failed), doc.get(failed, 0)),
  )


def _study(
  where, metric, goal, parameters, counts, algorithm, early, extra=None
):
  max_trials, parallel, failed = counts
  try:
    return _studyspec.StudySpec(
      metric,
      goal,
      tuple(parameters),
      max_trials,
      parallel,
      failed,
      algorithm,
      early,
      types.MappingProxyType(extra or {}),
    )
  except ConfigurationError as e:
    raise _checks.fail(where, str(e).rstrip('.')) from None


def vertex_study(where, doc):
  at = where.at(doc, 'studySpec')
  spec = _checks.mapping(at, doc['studySpec'], 'studySpec')
  study_extra = _vertexschema.split(spec, _MODELED_STUDY)
  _checks.require(at, spec, ('metrics', 'parameters'), 'studySpec needs')
  mat = at.at(spec, 'metrics')
  metrics = _checks.sequence(mat, spec['metrics'], 'metrics')
  if len(metrics) != 1:
    raise _checks.fail(mat, 'expected exactly one metric', metrics)
  metric = _checks.mapping(mat.at(metrics, 0), metrics[0], 'a metric')
  _checks.require(
    mat.at(metrics, 0), metric, ('metricId', 'goal'), 'a metric needs'
  )
  goal = _checks.enum(
    mat.at(metrics, 0).at(metric, 'goal'),
    metric['goal'],
    _studyspec.GOALS,
    'a goal',
  )
  pat = at.at(spec, 'parameters')
  items = _checks.sequence(pat, spec['parameters'], 'parameters')
  parameters = []
  kinds = (
    ('doubleValueSpec', 'DOUBLE'),
    ('integerValueSpec', 'INTEGER'),
    ('discreteValueSpec', 'DISCRETE'),
    ('categoricalValueSpec', 'CATEGORICAL'),
  )
  for index, item in enumerate(items):
    iat = pat.at(items, index)
    param = _checks.mapping(iat, item, 'a parameter')
    _checks.require(iat, param, ('parameterId',), 'a parameter needs')
    given = [(k, t) for k, t in kinds if k in param]
    if len(given) != 1:
      raise _checks.fail(
        iat,
        'a parameter needs exactly one of ' + ', '.join(k for k, _ in kinds),
      )
    key, kind = given[0]
    vat = iat.at(param, key)
    values = _checks.mapping(vat, param[key], key)
    kwargs = _values(vat, values, kind, f'{key} needs', 'values')
    if 'scaleType' in param:
      kwargs['scale_type'] = _choice(
        iat.at(param, 'scaleType'),
        param['scaleType'],
        _studyspec.SCALE_TYPES,
        'SCALE_TYPE_UNSPECIFIED',
      )
    parameters.append(_parameter(iat, param, 'parameterId', kind, kwargs))
  algorithm = _algorithm(at, spec)
  early = 'medianAutomatedStoppingSpec' in spec
  _checks.require(where, doc, ('maxTrialCount',), 'a tuning config needs')
  return _study(
    at,
    metric['metricId'],
    goal,
    parameters,
    _trial_counts(
      where, doc, 'maxTrialCount', 'parallelTrialCount', 'maxFailedTrialCount'
    ),
    algorithm,
    early,
    study_extra,
  )


def _algorithm(where, spec):
  """The search algorithm of a legacy or Vertex study spec.

  None for the service's default (absent or ALGORITHM_UNSPECIFIED).
  """
  algorithm = spec.get('algorithm')
  return (
    None
    if algorithm is None
    else _choice(
      where.at(spec, 'algorithm'),
      algorithm,
      _studyspec.ALGORITHMS,
      'ALGORITHM_UNSPECIFIED',
      'an algorithm',
    )
  )


def _choice(where, value, choices, unset, what='a scale type'):
  """One of `choices`, or None for `unset` (the service's default)."""
  value = _checks.enum(where, value, choices + (unset,), what)
  return None if value == unset else value
