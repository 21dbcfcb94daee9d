"""Checks of the arguments of the job's typed values.

`WorkerPool`, `ParameterSpec`, `StudySpec` and `JobSpec` check every
argument in their constructors with these: an error names the argument,
says what was expected, then `Received: name=value`.
"""

from tensorfx._errors import ConfigurationError


def received(name, value):
  return f'Received: {name}={value!r}'


def require(condition, name, expected, value):
  if not condition:
    raise ConfigurationError(
      f'{name}: expected {expected}. {received(name.lstrip("-"), value)}'
    )


def is_count(value):
  return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_number(value):
  return isinstance(value, (int, float)) and not isinstance(value, bool)
