"""A Vertex AI `--config` file checked against the API's own messages.

The keys a config may hold are those of `google.cloud.aiplatform_v1`'s
messages (a `CustomJobSpec`, the fields of a `CustomJob` or
`HyperparameterTuningJob` around it), read from their protobuf
descriptors, so every field Vertex AI accepts is accepted here, new ones
included, at any depth: `scheduling.strategy`,
`restartJobOnWorkerRestart`, `tensorboard`, `enableWebAccess`,
`containerSpec.env`, ... Keys are camelCase, as gcloud writes them (the
API's snake_case names are accepted too). An unknown key is an error
naming the file, line and key, with the nearest field names ("did you
mean").

tensorfx models some fields itself (the worker pools' machines, images and
code, the timeout, the study); `split` separates the rest, which are sent
as they are.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx._yaml import NOTHING

# Messages whose JSON form is not a plain object of their fields.
_OPAQUE = frozenset(
  {
    'google.protobuf.Duration',
    'google.protobuf.Timestamp',
    'google.protobuf.Struct',
    'google.protobuf.Value',
    'google.protobuf.ListValue',
    'google.protobuf.Any',
    'google.protobuf.FieldMask',
    'google.protobuf.BoolValue',
    'google.protobuf.Int32Value',
    'google.protobuf.Int64Value',
    'google.protobuf.UInt32Value',
    'google.protobuf.UInt64Value',
    'google.protobuf.FloatValue',
    'google.protobuf.DoubleValue',
    'google.protobuf.StringValue',
    'google.protobuf.BytesValue',
  }
)


def _descriptor(name: str) -> Any:
  from google.cloud import aiplatform_v1

  return getattr(aiplatform_v1, name).pb().DESCRIPTOR


def _fields(descriptor: Any) -> dict[str, Any]:
  """Field descriptors by JSON name and by proto name."""
  found = {}
  for field in descriptor.fields:
    found[field.json_name] = field
    found[field.name] = field
  return found


def job_spec_fields() -> set[str]:
  """A CustomJobSpec's field names, camelCase (as configs are read)."""
  return {f.json_name for f in _descriptor('CustomJobSpec').fields}


def top_level_fields() -> dict[str, Any]:
  """What a config's top level may hold.

  A CustomJobSpec's fields, and a CustomJob's and HyperparameterTuningJob's
  around it (labels, displayName, studySpec, maxTrialCount, trialJobSpec,
  ...).
  """
  fields = {}
  for name in ('HyperparameterTuningJob', 'CustomJob', 'CustomJobSpec'):
    fields.update(_fields(_descriptor(name)))
  # The output-only fields of a job are not settable.
  for name in (
    'name',
    'state',
    'createTime',
    'startTime',
    'endTime',
    'updateTime',
    'error',
    'trials',
    'webAccessUris',
    'satisfiesPzs',
    'satisfiesPzi',
    'jobSpec',
    'create_time',
    'start_time',
    'end_time',
    'update_time',
    'web_access_uris',
    'satisfies_pzs',
    'satisfies_pzi',
    'job_spec',
  ):
    fields.pop(name, None)
  return fields


def _unknown(
  where: Any, mapping: dict, key: Any, fields: dict[str, Any], what: str
) -> ConfigurationError:
  names = sorted({f.json_name for f in fields.values()})
  near = difflib.get_close_matches(str(key), names, n=3, cutoff=0.6)
  hint = (
    f'did you mean {" or ".join(near)}'
    if near
    else f'Vertex AI accepts {", ".join(names)}'
  )
  error = where.at(mapping, key).error(
    f'unknown key {key!r} in {what}; {hint}', mapping[key]
  )
  return ConfigurationError(str(error))


def _fail(where: Any, problem: str, value: Any = NOTHING) -> ConfigurationError:
  return ConfigurationError(str(where.error(problem, value)))


def check(where: Any, value: Any, fields: dict[str, Any], what: str) -> None:
  """Checks a mapping's keys (and its values' keys) against a message.

  Args:
    where: the `_yaml` location of `value`.
    value: the mapping read from YAML.
    fields: its message's fields (`_fields(descriptor)`).
    what: the message's name, for errors.

  Raises:
    ConfigurationError: an unknown key, or a value of the wrong shape,
      naming file, line and key.
  """
  if not isinstance(value, dict):
    raise _fail(where, f'expected a mapping ({what})', value)
  for key, item in value.items():
    field = fields.get(key)
    if field is None:
      raise _unknown(where, value, key, fields, what)
    _check_value(where.at(value, key), item, field)


def _check_value(where: Any, value: Any, field: Any) -> None:
  from google.protobuf import descriptor as pb

  message = field.message_type
  if message is not None and message.GetOptions().map_entry:
    if not isinstance(value, dict):
      raise _fail(where, f'expected a mapping ({field.json_name})', value)
    value_field = message.fields_by_name['value']
    for key, item in value.items():
      _check_value(where.at(value, key), item, value_field)
    return
  repeated = getattr(field, 'is_repeated', None)
  if repeated is None:  # protobuf before 5.29
    repeated = field.label == pb.FieldDescriptor.LABEL_REPEATED
  if repeated:
    if not isinstance(value, list):
      raise _fail(where, f'expected a list ({field.json_name})', value)
    for index, item in enumerate(value):
      _check_single(where.at(value, index), item, field)
    return
  _check_single(where, value, field)


def _check_single(where: Any, value: Any, field: Any) -> None:
  message = field.message_type
  if message is not None:
    if message.full_name in _OPAQUE:
      return
    check(where, value, _fields(message), field.json_name)
  elif field.enum_type is not None:
    names = [v.name for v in field.enum_type.values]
    if not (isinstance(value, str) and value in names) and not (
      isinstance(value, int) and not isinstance(value, bool)
    ):
      near = difflib.get_close_matches(str(value), names, n=1)
      hint = f' (did you mean {near[0]})' if near else ''
      raise _fail(where, f'expected one of {", ".join(names)}{hint}', value)


def split(value: Any, modeled: Any) -> Any:
  """The parts of `value` (a config mapping) that `modeled` does not name.

  Example:
    >>> split({'scheduling': {'timeout': '60s', 'strategy': 'SPOT'}},
    ...       {'scheduling': {'timeout': True}})
    {'scheduling': {'strategy': 'SPOT'}}

  Args:
    value: a mapping read from the config.
    modeled: a nested mapping of the keys tensorfx reads itself (`True`
      for a leaf it reads whole); keys in either spelling.

  Returns:
    A new mapping of the rest, in camelCase as Vertex AI's JSON has it;
    empty when nothing is left.
  """
  rest = {}
  for key, item in value.items():
    camel_key = camel(key)
    inner = modeled.get(key, modeled.get(camel_key)) if modeled else None
    if inner is True:
      continue
    if isinstance(inner, dict) and isinstance(item, dict):
      left = split(item, inner)
      if left:
        rest[camel_key] = left
      continue
    rest[camel_key] = copy.deepcopy(item)
  return rest


def camel(key: Any) -> Any:
  """'restart_job_on_worker_restart' -> 'restartJobOnWorkerRestart'."""
  if not isinstance(key, str) or '_' not in key:
    return key
  head, *tail = key.split('_')
  return head + ''.join(part[:1].upper() + part[1:] for part in tail)


def merge(base: dict, extra: Any) -> dict:
  """`base` (JSON from tensorfx's fields) with `extra` merged in, deeply.

  Example:
    >>> merge({'scheduling': {'timeout': '60s'}},
    ...       {'scheduling': {'strategy': 'SPOT'}, 'enableWebAccess': True})
    {'scheduling': {'timeout': '60s', 'strategy': 'SPOT'}, 'enableWebAccess': True}
  """
  merged = dict(base)
  for key, item in (extra or {}).items():
    if isinstance(item, dict) and isinstance(merged.get(key), dict):
      merged[key] = merge(merged[key], item)
    else:
      merged[key] = copy.deepcopy(item)
  return merged
