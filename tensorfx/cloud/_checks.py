"""Checks of the values a `--config` file gives.

Each takes `where` (the file, line and key of the value, from
`tensorfx._yaml`) and raises a `ConfigurationError` that names them when the
value is not what is expected; otherwise it returns the value, converted
where the file may spell it more than one way (counts as strings,
durations, enum names in lower case).
"""

import re

from tensorfx import _yaml
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError

_DURATION = re.compile(r'^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$')


def fail(where, problem, value=_yaml.NOTHING):
  return ConfigurationError(str(where.error(problem, value)))


def check_keys(where, mapping, allowed, what):
  try:
    _yaml.check_keys(where, mapping, allowed, what)
  except DataError as e:
    raise ConfigurationError(str(e)) from None


def require(where, mapping, keys, needs):
  """Fails naming the first of `keys` not in `mapping`: '{needs} {key}'."""
  for key in keys:
    if key not in mapping:
      raise fail(where, f'{needs} {key}')


def mapping(where, value, what):
  if not isinstance(value, dict):
    raise fail(where, f'expected a mapping ({what})', value)
  return value


def sequence(where, value, what):
  if not isinstance(value, list):
    raise fail(where, f'expected a list ({what})', value)
  return value


def string(where, value, what='a string'):
  if not isinstance(value, str) or not value:
    raise fail(where, f'expected {what}', value)
  return value


def count(where, value, positive=False):
  # int64 fields arrive as strings in Vertex's JSON form ("replicaCount":
  # "2"); accept both.
  if isinstance(value, str) and re.fullmatch(r'-?\d+', value.strip()):
    value = int(value)
  if (
    isinstance(value, bool)
    or not isinstance(value, int)
    or value < 0
    or (positive and value == 0)
  ):
    kind = 'a positive' if positive else 'a non-negative'
    raise fail(where, f'expected {kind} integer', value)
  return value


def number(where, value):
  if isinstance(value, str):
    try:
      value = float(value)
    except ValueError:
      pass
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise fail(where, 'expected a number', value)
  return value


def strings(where, value, what):
  items = sequence(where, value, what)
  for index, item in enumerate(items):
    if not isinstance(item, (str, int, float)) or isinstance(item, bool):
      raise fail(where.at(items, index), 'expected a string', item)
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
        f'Received: {name.lstrip("-")}={text!r}'
      )
    days, hours, minutes, rest = (int(g or 0) for g in match.groups())
    seconds = ((days * 24 + hours) * 60 + minutes) * 60 + rest
  if seconds <= 0:
    raise ConfigurationError(
      f'{name}: expected a positive duration. '
      f'Received: {name.lstrip("-")}={text!r}'
    )
  return seconds


def duration(where, value):
  try:
    return parse_duration(value, where.path)
  except ConfigurationError:
    raise fail(
      where, 'expected a duration such as 7200s or 2h', value
    ) from None


def labels(where, value):
  labels = mapping(where, value, 'labels: key: value')
  return {str(k): str(v) for k, v in labels.items()}


def enum(where, value, choices, what):
  text = str(value).upper() if isinstance(value, str) else value
  if text not in choices:
    raise fail(where, f'expected {what}, one of {", ".join(choices)}', value)
  return text
