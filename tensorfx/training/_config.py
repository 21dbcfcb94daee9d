"""The training configuration of this process, read from TF_CONFIG.

A hosting environment tells each process of a training job its role through
the `TF_CONFIG` environment variable: the cluster (job name -> addresses),
this process's task (type, index, hyperparameter trial), the job's arguments
and whether it runs locally or in the cloud. Legacy AI Platform wrote `master`
for the chief; Vertex AI writes `chief` (or positional `workerpool0..3`
names) and also a `CLUSTER_SPEC` variable of the same shape. All of them are
normalised here to the names TensorFlow's strategies use.

TensorFlow is imported lazily, inside the members that need it, so that
reading a configuration (e.g. in a launcher or a CLI) stays cheap.
"""

import dataclasses
import json
import os
import re

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
_ACCEPTED_JOBS = ', '.join(_JOB_NAMES)
_CHIEF_NAMES = 'chief (or master, workerpool0)'

# host:port, where host is a name, an IPv4 address or a bracketed IPv6 one.
_ADDRESS = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d{1,5})$')

_MAX_SHOWN = 200


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


class Configuration:
  """The training configuration of this process.

  Most code gets one from `Configuration.environment()`, which reads
  `TF_CONFIG`; `Configuration.local()` is single-node training. The cluster
  may use legacy (`master`) or Vertex AI (`workerpool0..3`) job names; they
  are normalised to `chief`, `worker`, `ps` and `evaluator`.

  Args:
    task: this process's `TaskSpec`.
    cluster: job name -> list of 'host:port' addresses, or None for a single
      process.
    job: the job's arguments as the hosting environment gave them, or None.
    env: 'local' or 'cloud'.

  Raises:
    ConfigurationError: when the task is not part of the cluster, or the
      cluster is malformed.

  Example:
    >>> config = Configuration(
    ...     TaskSpec('worker', 0),
    ...     {'chief': ['10.0.0.1:2222'], 'worker': ['10.0.0.2:2222'],
    ...      'ps': ['10.0.0.3:2222']})
    >>> config.device, config.strategy_kind
    ('/job:worker/task:0', 'parameter_server')
  """

  def __init__(self, task, cluster=None, job=None, env='local'):
    self._init(task, cluster, job, env, 'Configuration argument', 'env')

  def _init(self, task, cluster, job, env, where, env_key='environment'):
    """Validates and normalises; `where` prefixes every error message."""
    if not isinstance(env, str):
      raise _error(where, env_key, "must be a string such as 'local' or "
                   "'cloud'", env)
    self._cluster, raw_jobs = _normalise_cluster(cluster, where)
    self._task = _normalise_task(task, self._cluster, raw_jobs, where)
    # Remembered for the record only: `master` is true for chief either way.
    self._legacy_master = getattr(task, 'type', None) == 'master'
    self._job = job
    self._env = env

  @classmethod
  def environment(cls, environ=None):
    """Creates the configuration the hosting environment gave this process.

    Reads `TF_CONFIG`, or when it is unset or empty, `CLUSTER_SPEC` (which
    Vertex AI writes too). Neither set, or one without task and cluster,
    means single-node training. Outside the JSON, `CLOUD_ML_TRIAL_ID`
    supplies the trial when the task has none.

    Args:
      environ: the environment variables to read; defaults to `os.environ`.

    Returns:
      The `Configuration` of this process.

    Raises:
      ConfigurationError: when the variable is malformed; the message names
        the variable and the key.

    Example:
      >>> config = Configuration.environment({'TF_CONFIG': json.dumps({
      ...     'cluster': {'master': ['m:2222'], 'worker': ['w:2222']},
      ...     'task': {'type': 'master', 'index': 0, 'trial': 3},
      ...     'environment': 'cloud'})})
      >>> config.task, config.master
      (TaskSpec(type='chief', index=0, trial='3'), True)
    """
    environ = os.environ if environ is None else environ
    var, text = 'TF_CONFIG', environ.get('TF_CONFIG', '')
    if not text.strip():
      var, text = 'CLUSTER_SPEC', environ.get('CLUSTER_SPEC', '')
    if not text.strip():
      return cls._parsed(var, {}, environ)
    try:
      data = json.loads(text)
    except json.JSONDecodeError as e:
      raise ConfigurationError(
          f'{var} must hold a JSON object, but it is not valid JSON: {e.msg} '
          f'at line {e.lineno} column {e.colno} (char {e.pos}). '
          f'Received: {var}={_clip(text)}') from None
    if not isinstance(data, dict):
      raise ConfigurationError(
          f'{var} must hold a JSON object with `cluster`, `task` and '
          f'`environment` keys. Received: {var}={_clip(text)}')
    return cls._parsed(var, data, environ)

  @classmethod
  def _parsed(cls, var, data, environ):
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
      raise _error(where, 'job', "must be an object (the job's arguments)",
                   data.get('job'))
    cluster = data.get('cluster')
    if cluster is not None and not isinstance(cluster, dict):
      raise _error(where, 'cluster', "must be an object mapping job names to "
                   "lists of 'host:port' addresses", cluster)
    raw_task = data.get('task')
    if raw_task is not None and not isinstance(raw_task, dict):
      raise _error(where, 'task', 'must be an object with the `type` and '
                   '`index` of this process', raw_task)
    if not raw_task:
      if cluster:
        raise _error(where, 'task', 'must be an object with the `type` and '
                     '`index` of this process when `cluster` is set', raw_task)
      raw_task = {'type': 'chief'}
    if 'type' not in raw_task:
      raise _error(where, 'task.type', f'must be one of {_ACCEPTED_JOBS}',
                   None)
    trial = raw_task.get('trial')
    if trial is None or trial == '':
      trial = environ.get('CLOUD_ML_TRIAL_ID') or None
    task = TaskSpec(raw_task['type'], raw_task.get('index', 0), trial)
    config = cls.__new__(cls)
    config._init(task, cluster or None, job, env, where)
    return config

  @classmethod
  def local(cls):
    """Creates the configuration of single-node training in this process.

    Returns:
      A `Configuration` for a lone chief, with no cluster.

    Example:
      >>> Configuration.local().distributed
      False
    """
    return cls(TaskSpec('chief', 0), None, None, 'local')

  @property
  def task(self):
    """This process's `TaskSpec` (type normalised to TensorFlow's names)."""
    return self._task

  @property
  def cluster(self):
    """The whole cluster, evaluator included, as a `tf.train.ClusterSpec`.

    None when there is no cluster (single-node training).
    """
    if not self._cluster:
      return None
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.train.ClusterSpec(self._cluster)

  @property
  def training_cluster(self):
    """The cluster without the evaluator, as a `tf.train.ClusterSpec`.

    This is what strategies and servers use: the evaluator is a side task
    that reads checkpoints, not a member of the training cluster. None when
    no training job is left.
    """
    jobs = self._training_jobs()
    if not jobs:
      return None
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.train.ClusterSpec(jobs)

  @property
  def job(self):
    """The job's arguments as the hosting environment gave them, or None."""
    return self._job

  @property
  def env(self):
    """Where the job runs: 'local' or 'cloud'."""
    return self._env

  @property
  def device(self):
    """This task's device ('/job:worker/task:1'); '' when not distributed."""
    if not self.distributed:
      return ''
    return f'/job:{self._task.type}/task:{self._task.index}'

  @property
  def distributed(self):
    """Whether the training cluster has more than one task."""
    return sum(len(a) for a in self._training_jobs().values()) > 1

  @property
  def master(self):
    """Whether this is the chief (legacy AI Platform's master)."""
    return self._task.type == 'chief'

  @property
  def param_server(self):
    """Whether this is a parameter server."""
    return self._task.type == 'ps'

  @property
  def worker(self):
    """Whether this is a worker."""
    return self._task.type == 'worker'

  @property
  def evaluator(self):
    """Whether this is the evaluator."""
    return self._task.type == 'evaluator'

  @property
  def trial(self):
    """The hyperparameter tuning trial id, or None."""
    return self._task.trial

  @property
  def num_workers(self):
    """The number of worker tasks (the chief not counted)."""
    return len(self._cluster.get('worker', ()))

  @property
  def num_ps(self):
    """The number of parameter servers."""
    return len(self._cluster.get('ps', ()))

  @property
  def strategy_kind(self):
    """Which distribution strategy this cluster shape calls for.

    One of 'parameter_server' (parameter servers present),
    'multi_worker_mirrored' (workers, no parameter servers), 'mirrored' (one
    machine with several GPUs) or 'default' (anything else, and always for
    the evaluator, which evaluates on its own).
    """
    if self.evaluator:
      return 'default'
    if self.num_ps:
      return 'parameter_server'
    if self.distributed:
      return 'multi_worker_mirrored'
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if len(tf.config.list_physical_devices('GPU')) > 1:
      return 'mirrored'
    return 'default'

  def create_device_setter(self, args=None):
    """Creates the strategy that places variables and ops.

    Args:
      args: the job's arguments; `args.min_shard_bytes`, when present, is
        the smallest variable shard across several parameter servers.

    Returns:
      The `tf.distribute.Strategy` for `strategy_kind`. It is made once per
      configuration and returned again afterwards: a multi-worker strategy
      must be made before any other TensorFlow work and only once.

    Example:
      >>> strategy = Configuration.local().create_device_setter()
      >>> with strategy.scope():
      ...   v = tf.Variable(1.0)
    """
    if getattr(self, '_strategy', None) is None:
      self._strategy = self._create_strategy(args)
    return self._strategy

  def _create_strategy(self, args):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    kind = self.strategy_kind
    if kind == 'parameter_server':
      partitioner = None
      # One parameter server holds whole variables; several share big ones.
      if self.num_ps > 1:
        partitioners = tf.distribute.experimental.partitioners
        partitioner = partitioners.MinSizePartitioner(
            min_shard_bytes=getattr(args, 'min_shard_bytes', 256 << 10),
            max_shards=self.num_ps)
      return tf.distribute.ParameterServerStrategy(
          self._cluster_resolver(), variable_partitioner=partitioner)
    if kind == 'multi_worker_mirrored':
      # A lost peer fails a collective after this long instead of hanging.
      timeout = getattr(args, 'cluster_timeout_secs', None) or 300
      return tf.distribute.MultiWorkerMirroredStrategy(
          cluster_resolver=self._cluster_resolver(),
          communication_options=tf.distribute.experimental.CommunicationOptions(
              timeout_seconds=float(timeout)))
    if kind == 'mirrored':
      return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()

  def create_server(self, start=True):
    """Creates this task's `tf.distribute.Server` in the training cluster.

    Args:
      start: whether to start serving right away.

    Returns:
      The `tf.distribute.Server`; ps and worker tasks then `join()` it.

    Raises:
      ConfigurationError: when training is not distributed, or this task
        (the evaluator) is not part of the training cluster.

    Example:
      >>> server = Configuration.environment().create_server()
      >>> server.join()  # a ps or worker serves until the job ends
    """
    if not self.distributed or self.evaluator:
      raise ConfigurationError(
          'create_server needs a task of a distributed training cluster '
          '(more than one task; the evaluator is not part of it). Received: '
          f'task={self._task}, cluster={_shorten(self._cluster)}')
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.distribute.Server(
        self.training_cluster, job_name=self._task.type,
        task_index=self._task.index, protocol='grpc', start=start)

  def to_dict(self):
    """Returns the configuration as a JSON-able dict, for the job record.

    Example:
      >>> Configuration.local().to_dict()['task']
      {'type': 'chief', 'index': 0, 'trial': None}
    """
    return {
        'task': dataclasses.asdict(self._task),
        'cluster': ({k: list(v) for k, v in self._cluster.items()}
                    if self._cluster else None),
        'job': self._job,
        'env': self._env,
    }

  def __eq__(self, other):
    if not isinstance(other, Configuration):
      return NotImplemented
    return self.to_dict() == other.to_dict()

  __hash__ = None

  def __repr__(self):
    d = self.to_dict()
    return (f'Configuration(task={self._task!r}, cluster={d["cluster"]!r}, '
            f'job={d["job"]!r}, env={d["env"]!r})')

  def _training_jobs(self):
    return {k: v for k, v in self._cluster.items() if k != 'evaluator'}

  def _cluster_resolver(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        self.training_cluster, task_type=self._task.type,
        task_id=self._task.index, rpc_layer='grpc')


def _normalise_cluster(cluster, where):
  """Validates a cluster; returns it with TF job names, and their raw names."""
  if cluster is None:
    return {}, {}
  if hasattr(cluster, 'as_dict'):  # a tf.train.ClusterSpec
    cluster = cluster.as_dict()
  if not isinstance(cluster, dict):
    raise _error(where, 'cluster', "must be an object mapping job names to "
                 "lists of 'host:port' addresses", cluster)
  jobs, raw_names, seen = {}, {}, {}
  for raw, addresses in cluster.items():
    name = _JOB_NAMES.get(raw) if isinstance(raw, str) else None
    if name is None:
      raise _error(where, f'cluster.{raw}', 'is not a job name; expected one '
                   f'of {_ACCEPTED_JOBS}', addresses)
    if name in jobs:
      raise _error(where, f'cluster.{raw}', f'names the same job ({name}) as '
                   f'`cluster.{raw_names[name]}`; use only one of them',
                   addresses)
    if not isinstance(addresses, (list, tuple)) or not addresses:
      raise _error(where, f'cluster.{raw}', "must be a non-empty list of "
                   "'host:port' addresses", addresses)
    for i, address in enumerate(addresses):
      key = f'cluster.{raw}[{i}]'
      if not isinstance(address, str) or not _valid_address(address):
        raise _error(where, key, "must be a 'host:port' address string "
                     "(port 1-65535)", address)
      # Two tasks on one address would each take the other's RPCs.
      if address in seen:
        raise _error(where, key, f'must differ from `{seen[address]}`: two '
                     'tasks cannot share an address', address)
      seen[address] = key
    jobs[name] = list(addresses)
    raw_names[name] = raw
  if 'chief' in jobs and len(jobs['chief']) != 1:
    raw = raw_names['chief']
    raise _error(where, f'cluster.{raw}', 'must list exactly one address: a '
                 'cluster has one chief', jobs['chief'])
  if 'chief' not in jobs and ('worker' in jobs or 'ps' in jobs):
    raise _error(where, 'cluster', f'must have a {_CHIEF_NAMES} job, which '
                 'coordinates training, when it has workers or parameter '
                 'servers', cluster)
  return jobs, raw_names


def _normalise_task(task, jobs, raw_names, where):
  """Validates a task against the cluster; returns it with TF's job name."""
  if not isinstance(task, TaskSpec):
    raise _error(where, 'task', 'must be a TaskSpec', task)
  raw = task.type
  name = _JOB_NAMES.get(raw) if isinstance(raw, str) else None
  if name is None:
    raise _error(where, 'task.type', f'must be one of {_ACCEPTED_JOBS}', raw)
  index = task.index
  if isinstance(index, bool) or not isinstance(index, int) or index < 0:
    raise _error(where, 'task.index', 'must be a non-negative integer', index)
  trial = task.trial
  if isinstance(trial, bool) or not isinstance(trial, (str, int, type(None))):
    raise _error(where, 'task.trial', 'must be a string or an integer', trial)
  trial = None if trial is None or trial == '' else str(trial)

  if not jobs:
    # No cluster: a lone chief, or an evaluator following a chief elsewhere.
    if name not in ('chief', 'evaluator'):
      raise _error(where, 'task.type', f'must be {_CHIEF_NAMES} or evaluator '
                   'when there is no `cluster`', raw)
    if name == 'chief' and index != 0:
      raise _error(where, 'task.index', 'must be 0 for the only task when '
                   'there is no `cluster`', index)
  elif name in jobs:
    size = len(jobs[name])
    if index >= size:
      raise _error(where, 'task.index', f'must be below {size}, the number '
                   f'of tasks in job `cluster.{raw_names[name]}`', index)
  elif name != 'evaluator':
    # The evaluator may run beside the cluster rather than in it.
    names = ', '.join(raw_names[n] for n in jobs)
    raise _error(where, 'task.type', f'must name a job of `cluster` '
                 f'({names})', raw)
  return TaskSpec(name, index, trial)


def _valid_address(address):
  match = _ADDRESS.match(address)
  return bool(match) and 0 < int(match.group(2)) < 65536


def _error(where, key, expected, value):
  return ConfigurationError(
      f'{where} `{key}` {expected}. Received: {key}={_shorten(value)}')


def _shorten(value):
  """Shows a received value as JSON (repr when it is not JSON-able), clipped."""
  try:
    text = json.dumps(value)
  except (TypeError, ValueError):
    text = repr(value)
  return _clip(text)


def _clip(text):
  return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + '...'
