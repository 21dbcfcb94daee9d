"""Tuning studies in a `--config` file, read into a `StudySpec`.

Legacy AI Platform's `trainingInput.hyperparameters` or Vertex AI's
`studySpec` (with `maxTrialCount`, `parallelTrialCount` and
`maxFailedTrialCount` beside it).
"""

import types
from typing import Any

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
  for key in ('goal', 'params', 'maxTrials'):
    if key not in spec:
      raise _checks.fail(where, f'hyperparameters need {key}')
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
    for key in ('parameterName', 'type'):
      if key not in param:
        raise _checks.fail(at, f'a hyperparameter needs {key}')
    kind = _checks.enum(
      at.at(param, 'type'),
      param['type'],
      _studyspec.PARAMETER_TYPES,
      'a parameter type',
    )
    scale = param.get('scaleType')
    if scale is not None:
      scale = _checks.enum(
        at.at(param, 'scaleType'),
        scale,
        _studyspec.SCALE_TYPES + ('NONE',),
        'a scale type',
      )
      scale = None if scale == 'NONE' else scale
    kwargs: dict[str, Any] = {'scale_type': scale}
    if kind in ('DOUBLE', 'INTEGER'):
      for key, name in (('minValue', 'min_value'), ('maxValue', 'max_value')):
        if key not in param:
          raise _checks.fail(at, f'a {kind} hyperparameter needs {key}')
        number = _checks.number(at.at(param, key), param[key])
        if kind == 'INTEGER':
          if float(number) != int(number):
            raise _checks.fail(at.at(param, key), 'expected an integer', number)
          number = int(number)
        kwargs[name] = number
    elif kind == 'DISCRETE':
      if 'discreteValues' not in param:
        raise _checks.fail(at, 'a DISCRETE hyperparameter needs discreteValues')
      vat = at.at(param, 'discreteValues')
      values = _checks.sequence(vat, param['discreteValues'], 'discreteValues')
      kwargs['values'] = tuple(
        _checks.number(vat.at(values, i), v) for i, v in enumerate(values)
      )
    else:
      if 'categoricalValues' not in param:
        raise _checks.fail(
          at, 'a CATEGORICAL hyperparameter needs categoricalValues'
        )
      kwargs['values'] = _checks.strings(
        at.at(param, 'categoricalValues'),
        param['categoricalValues'],
        'categoricalValues',
      )
    try:
      parameters.append(
        _studyspec.ParameterSpec(
          _checks.string(at.at(param, 'parameterName'), param['parameterName']),
          kind,
          **kwargs,
        )
      )
    except ConfigurationError as e:
      raise _checks.fail(at, str(e).rstrip('.')) from None
  max_trials = _checks.count(
    where.at(spec, 'maxTrials'), spec['maxTrials'], positive=True
  )
  parallel = _checks.count(
    where.at(spec, 'maxParallelTrials'),
    spec.get('maxParallelTrials', 1),
    positive=True,
  )
  failed = _checks.count(
    where.at(spec, 'maxFailedTrials'), spec.get('maxFailedTrials', 0)
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
    max_trials,
    parallel,
    failed,
    algorithm,
    early,
  )


def _study(
  where,
  metric,
  goal,
  parameters,
  max_trials,
  parallel,
  failed,
  algorithm,
  early,
  extra=None,
):
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
  for key in ('metrics', 'parameters'):
    if key not in spec:
      raise _checks.fail(at, f'studySpec needs {key}')
  mat = at.at(spec, 'metrics')
  metrics = _checks.sequence(mat, spec['metrics'], 'metrics')
  if len(metrics) != 1:
    raise _checks.fail(mat, 'expected exactly one metric', metrics)
  metric = _checks.mapping(mat.at(metrics, 0), metrics[0], 'a metric')
  for key in ('metricId', 'goal'):
    if key not in metric:
      raise _checks.fail(mat.at(metrics, 0), f'a metric needs {key}')
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
    if 'parameterId' not in param:
      raise _checks.fail(iat, 'a parameter needs parameterId')
    given = [(k, t) for k, t in kinds if k in param]
    if len(given) != 1:
      raise _checks.fail(
        iat,
        'a parameter needs exactly one of ' + ', '.join(k for k, _ in kinds),
      )
    key, kind = given[0]
    vat = iat.at(param, key)
    values = _checks.mapping(vat, param[key], key)
    kwargs: dict[str, Any] = {}
    if kind in ('DOUBLE', 'INTEGER'):
      for name, field in (('minValue', 'min_value'), ('maxValue', 'max_value')):
        if name not in values:
          raise _checks.fail(vat, f'{key} needs {name}')
        number = _checks.number(vat.at(values, name), values[name])
        kwargs[field] = int(number) if kind == 'INTEGER' else number
    else:
      if 'values' not in values:
        raise _checks.fail(vat, f'{key} needs values')
      lat = vat.at(values, 'values')
      if kind == 'DISCRETE':
        listed = _checks.sequence(lat, values['values'], 'values')
        kwargs['values'] = tuple(
          _checks.number(lat.at(listed, i), v) for i, v in enumerate(listed)
        )
      else:
        kwargs['values'] = _checks.strings(lat, values['values'], 'values')
    if 'scaleType' in param:
      scale = _checks.enum(
        iat.at(param, 'scaleType'),
        param['scaleType'],
        _studyspec.SCALE_TYPES + ('SCALE_TYPE_UNSPECIFIED',),
        'a scale type',
      )
      kwargs['scale_type'] = (
        None if scale == 'SCALE_TYPE_UNSPECIFIED' else scale
      )
    try:
      parameters.append(
        _studyspec.ParameterSpec(
          _checks.string(iat.at(param, 'parameterId'), param['parameterId']),
          kind,
          **kwargs,
        )
      )
    except ConfigurationError as e:
      raise _checks.fail(iat, str(e).rstrip('.')) from None
  algorithm = _algorithm(at, spec)
  early = 'medianAutomatedStoppingSpec' in spec
  for key in ('maxTrialCount',):
    if key not in doc:
      raise _checks.fail(where, f'a tuning config needs {key}')
  max_trials = _checks.count(
    where.at(doc, 'maxTrialCount'), doc['maxTrialCount'], positive=True
  )
  parallel = _checks.count(
    where.at(doc, 'parallelTrialCount'),
    doc.get('parallelTrialCount', 1),
    positive=True,
  )
  failed = _checks.count(
    where.at(doc, 'maxFailedTrialCount'), doc.get('maxFailedTrialCount', 0)
  )
  return _study(
    at,
    metric['metricId'],
    goal,
    parameters,
    max_trials,
    parallel,
    failed,
    algorithm,
    early,
    study_extra,
  )


def _algorithm(where, spec):
  """The search algorithm of a legacy or Vertex study spec.

  None for the service's default (absent or ALGORITHM_UNSPECIFIED).
  """
  algorithm = spec.get('algorithm')
  if algorithm is None:
    return None
  algorithm = _checks.enum(
    where.at(spec, 'algorithm'),
    algorithm,
    _studyspec.ALGORITHMS + ('ALGORITHM_UNSPECIFIED',),
    'an algorithm',
  )
  return None if algorithm == 'ALGORITHM_UNSPECIFIED' else algorithm
