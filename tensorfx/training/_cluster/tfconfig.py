"""TF_CONFIG: what the hosting environment says of this process, checked.

A hosting environment tells each process of a training job its role through
the `TF_CONFIG` environment variable: the cluster (job name -> addresses),
this process's task (type, index, hyperparameter trial), the job's arguments
and whether it runs locally or in the cloud. Legacy AI Platform wrote `master`
for the chief; Vertex AI writes `chief` (or positional `workerpool0..3`
names) and also a `CLUSTER_SPEC` variable of the same shape. All of them are
normalised here to the names TensorFlow's strategies use, and anything
malformed is an error naming the variable and the key.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import dataclasses
import json
import os
import re
from typing import Any

from tensorfx._errors import ConfigurationError

# Every job name a TF_CONFIG may use, and the TensorFlow name it stands for.
# Vertex AI's worker pools are positional: 0 chief, 1 workers, 2 parameter
# servers, 3 evaluator.
_JOB_NAMES = {
  'chief': 'chief',
  'master': 'chief',
  'worker': 'worker',
  'ps': 'ps',
  'evaluator': 'evaluator',
  'workerpool0': 'chief',
  'workerpool1': 'worker',
  'workerpool2': 'ps',
  'workerpool3': 'evaluator',
}
ACCEPTED_JOBS = ', '.join(_JOB_NAMES)
_CHIEF_NAMES = 'chief (or master, workerpool0)'

# host:port, where host is a name, an IPv4 address or a bracketed IPv6 one.
_ADDRESS = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d{1,5})$')

_MAX_SHOWN = 200


class ChiefType(str):
  """The chief's task type, 'chief', that also equals 'master'.

  TensorFlow names the coordinating task `chief`; the original tensorfx (and
  legacy AI Platform) named it `master`, and code written for it tests
  `config.task.type == 'master'`. Both tests hold; the value (in device
  names, logs, JSON) is 'chief'.

  `Configuration.task` reports the chief's type as one; inside tensorfx
  (strategies, servers, records) the type is the plain 'chief'.

  Example:
    >>> CHIEF == 'chief', CHIEF == 'master', str(CHIEF)
    (True, True, 'chief')
  """

  __slots__ = ()

  def __eq__(self, other: object) -> bool:
    if isinstance(other, str) and other == 'master':
      return True
    return str.__eq__(self, other)

  def __ne__(self, other: object) -> bool:
    return not self.__eq__(other)

  __hash__ = str.__hash__

  def __str__(self) -> str:
    return 'chief'

  def __repr__(self) -> str:
    return "'chief'"


CHIEF = ChiefType('chief')


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  """The task this process runs in a training job.

  Attributes:
    type: the task's job: 'chief', 'worker', 'ps' or 'evaluator'.
    index: the task's index within its job.
    trial: the hyperparameter tuning trial id, or None outside tuning.

  Example:
    >>> TaskSpec('worker', 1)
    TaskSpec(type='worker', index=1, trial=None)
  """

  type: str
  index: int = 0
  trial: str | None = None


def read(environ=None):
  """Reads `TF_CONFIG` (else `CLUSTER_SPEC`) from `environ`.

  Args:
    environ: the environment variables; defaults to `os.environ`.

  Returns:
    `(task, cluster, job, env, where)`: the `TaskSpec` (as given, not yet
    normalised), the cluster dict (or None), the job's arguments (or
    None), 'local' or 'cloud', and the text errors about it start with.

  Raises:
    ConfigurationError: the variable is malformed; the message names the
      variable and the key.
  """
  environ = os.environ if environ is None else environ
  var, text = 'TF_CONFIG', environ.get('TF_CONFIG', '')
  if not text.strip():
    var, text = 'CLUSTER_SPEC', environ.get('CLUSTER_SPEC', '')
  if not text.strip():
    return _parsed(var, {}, environ)
  try:
    data = json.loads(text)
  except json.JSONDecodeError as e:
    raise ConfigurationError(
      f'{var} must hold a JSON object, but it is not valid JSON: {e.msg} '
      f'at line {e.lineno} column {e.colno} (char {e.pos}). '
      f'Received: {var}={clip(text)}'
    ) from None
  if not isinstance(data, dict):
    raise ConfigurationError(
      f'{var} must hold a JSON object with `cluster`, `task` and '
      f'`environment` keys. Received: {var}={clip(text)}'
    )
  return _parsed(var, data, environ)


def _parsed(var, data, environ):
  where = f'{var} key'
  env = data.get('environment')
  env = 'local' if env is None else env
  job = data.get('job')
  # Some launchers serialise the job's arguments as a JSON string.
  if isinstance(job, str):
    try:
      job = json.loads(job)
    except json.JSONDecodeError:
      pass
  if job is not None and not isinstance(job, dict):
    raise error(
      where, 'job', "must be an object (the job's arguments)", data.get('job')
    )
  cluster = data.get('cluster')
  if cluster is not None and not isinstance(cluster, dict):
    raise error(
      where,
      'cluster',
      "must be an object mapping job names to lists of 'host:port' addresses",
      cluster,
    )
  raw_task = data.get('task')
  if raw_task is not None and not isinstance(raw_task, dict):
    raise error(
      where,
      'task',
      'must be an object with the `type` and `index` of this process',
      raw_task,
    )
  if not raw_task:
    if cluster:
      raise error(
        where,
        'task',
        'must be an object with the `type` and '
        '`index` of this process when `cluster` is set',
        raw_task,
      )
    raw_task = {'type': 'chief'}
  if 'type' not in raw_task:
    raise error(where, 'task.type', f'must be one of {ACCEPTED_JOBS}', None)
  trial = raw_task.get('trial')
  if trial is None or trial == '':
    trial = environ.get('CLOUD_ML_TRIAL_ID') or None
  task = TaskSpec(raw_task['type'], raw_task.get('index', 0), trial)
  return task, cluster or None, job, env, where


def normalise_cluster(cluster, where):
  """Validates a cluster; returns it with TF job names, and their raw names."""
  if cluster is None:
    return {}, {}
  if hasattr(cluster, 'as_dict'):  # a tf.train.ClusterSpec
    cluster = cluster.as_dict()
  if not isinstance(cluster, dict):
    raise error(
      where,
      'cluster',
      "must be an object mapping job names to lists of 'host:port' addresses",
      cluster,
    )
  jobs: dict[str, Any] = {}
  raw_names: dict[str, Any] = {}
  seen: dict[str, Any] = {}
  for raw, addresses in cluster.items():
    name = _JOB_NAMES.get(raw) if isinstance(raw, str) else None
    if name is None:
      raise error(
        where,
        f'cluster.{raw}',
        f'is not a job name; expected one of {ACCEPTED_JOBS}',
        addresses,
      )
    if name in jobs:
      raise error(
        where,
        f'cluster.{raw}',
        f'names the same job ({name}) as '
        f'`cluster.{raw_names[name]}`; use only one of them',
        addresses,
      )
    if not isinstance(addresses, (list, tuple)) or not addresses:
      raise error(
        where,
        f'cluster.{raw}',
        "must be a non-empty list of 'host:port' addresses",
        addresses,
      )
    for i, address in enumerate(addresses):
      key = f'cluster.{raw}[{i}]'
      if not isinstance(address, str) or not _valid_address(address):
        raise error(
          where,
          key,
          "must be a 'host:port' address string (port 1-65535)",
          address,
        )
      # Two tasks on one address would each take the other's RPCs.
      if address in seen:
        raise error(
          where,
          key,
          f'must differ from `{seen[address]}`: two '
          'tasks cannot share an address',
          address,
        )
      seen[address] = key
    jobs[name] = list(addresses)
    raw_names[name] = raw
  if 'chief' in jobs and len(jobs['chief']) != 1:
    raw = raw_names['chief']
    raise error(
      where,
      f'cluster.{raw}',
      'must list exactly one address: a cluster has one chief',
      jobs['chief'],
    )
  if 'chief' not in jobs and ('worker' in jobs or 'ps' in jobs):
    raise error(
      where,
      'cluster',
      f'must have a {_CHIEF_NAMES} job, which '
      'coordinates training, when it has workers or parameter '
      'servers',
      cluster,
    )
  return jobs, raw_names


def normalise_task(task, jobs, raw_names, where):
  """Validates a task against the cluster; returns it with TF's job name."""
  if not isinstance(task, TaskSpec):
    raise error(where, 'task', 'must be a TaskSpec', task)
  raw = task.type
  name = _JOB_NAMES.get(raw) if isinstance(raw, str) else None
  if name is None:
    raise error(where, 'task.type', f'must be one of {ACCEPTED_JOBS}', raw)
  index = task.index
  if isinstance(index, bool) or not isinstance(index, int) or index < 0:
    raise error(where, 'task.index', 'must be a non-negative integer', index)
  trial = task.trial
  if isinstance(trial, bool) or not isinstance(trial, (str, int, type(None))):
    raise error(where, 'task.trial', 'must be a string or an integer', trial)
  trial = None if trial is None or trial == '' else str(trial)

  if not jobs:
    # No cluster: a lone chief, or an evaluator following a chief elsewhere.
    if name not in ('chief', 'evaluator'):
      raise error(
        where,
        'task.type',
        f'must be {_CHIEF_NAMES} or evaluator when there is no `cluster`',
        raw,
      )
    if name == 'chief' and index != 0:
      raise error(
        where,
        'task.index',
        'must be 0 for the only task when there is no `cluster`',
        index,
      )
  elif name in jobs:
    size = len(jobs[name])
    if index >= size:
      raise error(
        where,
        'task.index',
        f'must be below {size}, the number '
        f'of tasks in job `cluster.{raw_names[name]}`',
        index,
      )
  elif name != 'evaluator':
    # The evaluator may run beside the cluster rather than in it.
    names = ', '.join(raw_names[n] for n in jobs)
    raise error(
      where, 'task.type', f'must name a job of `cluster` ({names})', raw
    )
  return TaskSpec(name, index, trial)


def _valid_address(address):
  match = _ADDRESS.match(address)
  return match is not None and 0 < int(match.group(2)) < 65536


def error(where, key, expected, value):
  """The error of a malformed key: where, what was expected, what came."""
  return ConfigurationError(
    f'{where} `{key}` {expected}. Received: {key}={shorten(value)}'
  )


def shorten(value):
  """Shows a received value as JSON (repr when it is not JSON-able), clipped."""
  try:
    text = json.dumps(value)
  except (TypeError, ValueError):
    text = repr(value)
  return clip(text)


def clip(text):
  """`text`, cut to a length a message can show."""
  return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + '...'
