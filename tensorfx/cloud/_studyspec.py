"""`StudySpec` and `ParameterSpec`: a hyperparameter tuning study."""

import dataclasses
import types
from typing import Any, Mapping

from tensorfx.cloud import _argchecks
from tensorfx.cloud import _vertexschema

PARAMETER_TYPES = ('DOUBLE', 'INTEGER', 'DISCRETE', 'CATEGORICAL')
SCALE_TYPES = ('UNIT_LINEAR_SCALE', 'UNIT_LOG_SCALE', 'UNIT_REVERSE_LOG_SCALE')
GOALS = ('MAXIMIZE', 'MINIMIZE')
ALGORITHMS = ('GRID_SEARCH', 'RANDOM_SEARCH')


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
    _argchecks.require(
      isinstance(self.name, str) and self.name,
      'name',
      'a parameter name',
      self.name,
    )
    _argchecks.require(
      self.type in PARAMETER_TYPES,
      f'{what}: type',
      f'one of {", ".join(PARAMETER_TYPES)}',
      self.type,
    )
    _argchecks.require(
      self.scale_type is None or self.scale_type in SCALE_TYPES,
      f'{what}: scale_type',
      f'one of {", ".join(SCALE_TYPES)}',
      self.scale_type,
    )
    object.__setattr__(self, 'values', tuple(self.values))
    if self.type in ('DOUBLE', 'INTEGER'):
      kind = int if self.type == 'INTEGER' else (int, float)
      for bound in ('min_value', 'max_value'):
        value = getattr(self, bound)
        _argchecks.require(
          isinstance(value, kind) and not isinstance(value, bool),
          f'{what}: {bound}',
          'an integer' if self.type == 'INTEGER' else 'a number',
          value,
        )
      low: Any = self.min_value  # Numbers: checked above.
      high: Any = self.max_value
      _argchecks.require(
        low <= high,
        f'{what}: max_value',
        f'at least min_value {self.min_value}',
        self.max_value,
      )
      if self.scale_type in ('UNIT_LOG_SCALE', 'UNIT_REVERSE_LOG_SCALE'):
        _argchecks.require(
          low > 0,
          f'{what}: min_value',
          'a positive number on a log scale',
          self.min_value,
        )
    elif self.type == 'DISCRETE':
      _argchecks.require(
        self.values and all(_argchecks.is_number(v) for v in self.values),
        f'{what}: values',
        'a non-empty list of numbers',
        self.values,
      )
      # Vertex wants increasing values; the order means nothing here.
      object.__setattr__(self, 'values', tuple(sorted(set(self.values))))
    else:
      _argchecks.require(
        self.values and all(isinstance(v, str) for v in self.values),
        f'{what}: values',
        'a non-empty list of strings',
        self.values,
      )
      _argchecks.require(
        self.scale_type is None,
        f'{what}: scale_type',
        'none for a CATEGORICAL parameter',
        self.scale_type,
      )

  def to_json(self):
    """This parameter's `StudySpec.ParameterSpec` as Vertex AI's JSON."""
    spec: dict[str, Any] = {'parameterId': self.name}
    if self.type == 'DOUBLE':
      low: Any = self.min_value  # Numbers: checked when made.
      high: Any = self.max_value
      spec['doubleValueSpec'] = {
        'minValue': float(low),
        'maxValue': float(high),
      }
    elif self.type == 'INTEGER':
      spec['integerValueSpec'] = {
        'minValue': str(self.min_value),
        'maxValue': str(self.max_value),
      }
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
    default_factory=lambda: types.MappingProxyType({})
  )

  def __post_init__(self):
    _argchecks.require(
      isinstance(self.metric, str) and self.metric,
      'metric',
      'the name of the metric to optimize',
      self.metric,
    )
    _argchecks.require(
      self.goal in GOALS, 'goal', 'MAXIMIZE or MINIMIZE', self.goal
    )
    object.__setattr__(self, 'parameters', tuple(self.parameters))
    _argchecks.require(
      bool(self.parameters),
      'parameters',
      'at least one hyperparameter',
      self.parameters,
    )
    names = [p.name for p in self.parameters]
    _argchecks.require(
      len(set(names)) == len(names), 'parameters', 'distinct names', names
    )
    for name in ('max_trial_count', 'parallel_trial_count'):
      value = getattr(self, name)
      _argchecks.require(
        _argchecks.is_count(value) and value >= 1,
        name,
        'a positive integer',
        value,
      )
    _argchecks.require(
      _argchecks.is_count(self.max_failed_trial_count),
      'max_failed_trial_count',
      'a non-negative integer',
      self.max_failed_trial_count,
    )
    _argchecks.require(
      self.algorithm is None or self.algorithm in ALGORITHMS,
      'algorithm',
      f'one of {", ".join(ALGORITHMS)} or none',
      self.algorithm,
    )

  def to_json(self):
    """The `StudySpec` as Vertex AI's JSON."""
    study: dict[str, Any] = {
      'metrics': [{'metricId': self.metric, 'goal': self.goal}],
      'parameters': [p.to_json() for p in self.parameters],
    }
    if self.algorithm:
      study['algorithm'] = self.algorithm
    if self.early_stopping:
      study['medianAutomatedStoppingSpec'] = {}
    return _vertexschema.merge(study, self.extra)
