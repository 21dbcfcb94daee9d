"""The training configuration of this process: its role, its strategy.

Read from `TF_CONFIG` (see `tensorfx.training._cluster.tfconfig`), it says what this
process is in the job (chief, worker, parameter server, evaluator), which
distribution strategy the cluster's shape calls for, and makes it.

TensorFlow is imported lazily, inside the members that need it, so that
reading a configuration (e.g. in a launcher or a CLI) stays cheap.
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.training._cluster import tfconfig as _tfconfig
from tensorfx.training._cluster.tfconfig import TaskSpec
from tensorfx.training._settings.job import JobSettings


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

  def __init__(
    self,
    task: TaskSpec,
    cluster: Optional[Mapping[str, Any]] = None,
    job: Optional[Dict[str, Any]] = None,
    env: str = 'local',
  ) -> None:
    self._init(task, cluster, job, env, 'Configuration argument', 'env')

  def _init(self, task, cluster, job, env, where, env_key='environment'):
    """Validates and normalises; `where` prefixes every error message."""
    if not isinstance(env, str):
      raise _tfconfig.error(
        where, env_key, "must be a string such as 'local' or 'cloud'", env
      )
    # The original tensorfx made a cluster of any non-empty `cluster`, one
    # whose jobs list no task included; it trains here as a lone chief.
    self._declared_cluster = (
      isinstance(cluster, dict)
      and bool(cluster)
      and all(isinstance(v, (list, tuple)) and not v for v in cluster.values())
    )
    # Its jobs, as `cluster` reports them: the original's ClusterSpec.
    self._declared_jobs = dict(cluster) if self._declared_cluster else None
    if self._declared_cluster:
      cluster = None
    self._cluster, raw_jobs = _tfconfig.normalise_cluster(cluster, where)
    self._task = _tfconfig.normalise_task(task, self._cluster, raw_jobs, where)
    # Remembered for the record only: `master` is true for chief either way.
    self._legacy_master = getattr(task, 'type', None) == 'master'
    self._job = job
    self._env = env

  @classmethod
  def environment(
    cls, environ: Optional[Mapping[str, str]] = None
  ) -> 'Configuration':
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
    return cls._from(*_tfconfig.read(environ))

  @classmethod
  def _from(cls, task, cluster, job, env, where):
    config: Configuration = cls.__new__(cls)
    config._init(task, cluster, job, env, where)
    return config

  @classmethod
  def local(cls) -> 'Configuration':
    """Creates the configuration of single-node training in this process.

    Returns:
      A `Configuration` for a lone chief, with no cluster.

    Example:
      >>> Configuration.local().distributed
      False
    """
    return cls(TaskSpec('chief', 0), None, None, 'local')

  @property
  def task(self) -> TaskSpec:
    """This process's `TaskSpec` (type normalised to TensorFlow's names).

    The chief's type is 'chief' and also equals 'master', the original
    tensorfx's name for it: `config.task.type == 'master'` holds on the
    chief, single-node training included.
    """
    if self._task.type == 'chief':
      return dataclasses.replace(self._task, type=_tfconfig.CHIEF)
    return self._task

  @property
  def cluster(self) -> Any:
    """The whole cluster, evaluator included, as a `tf.train.ClusterSpec`.

    None when there is no cluster (single-node training). A `cluster`
    whose jobs list no task (`{"hosts": []}`) is reported as the original
    tensorfx reported it, those jobs without tasks; it trains as a lone
    chief.
    """
    jobs = self._cluster or self._declared_jobs
    if not jobs:
      return None
    import tensorflow as tf

    return tf.train.ClusterSpec(jobs)

  @property
  def training_cluster(self) -> Any:
    """The cluster without the evaluator, as a `tf.train.ClusterSpec`.

    This is what strategies and servers use: the evaluator is a side task
    that reads checkpoints, not a member of the training cluster. None when
    no training job is left.
    """
    jobs = self._training_jobs()
    if not jobs:
      return None
    import tensorflow as tf

    return tf.train.ClusterSpec(jobs)

  @property
  def job(self) -> Optional[Dict[str, Any]]:
    """The job's arguments as the hosting environment gave them, or None."""
    return self._job

  @property
  def env(self) -> str:
    """Where the job runs: 'local' or 'cloud'."""
    return self._env

  @property
  def device(self) -> str:
    """This task's device ('/job:worker/task:1'); '' when not distributed."""
    if not self._multi_task():
      return ''
    return f'/job:{self._task.type}/task:{self._task.index}'

  @property
  def distributed(self) -> bool:
    """Whether the training cluster has more than one task.

    Also true, as the original tensorfx reported it, for a `cluster` whose
    jobs list no task at all (`{"hosts": []}`); such a job trains as a lone
    chief all the same.
    """
    return self._multi_task() or self._declared_cluster

  def _multi_task(self):
    return sum(len(a) for a in self._training_jobs().values()) > 1

  @property
  def master(self) -> bool:
    """Whether this is the chief (legacy AI Platform's master)."""
    return self._task.type == 'chief'

  @property
  def param_server(self) -> bool:
    """Whether this is a parameter server."""
    return self._task.type == 'ps'

  @property
  def worker(self) -> bool:
    """Whether this is a worker."""
    return self._task.type == 'worker'

  @property
  def evaluator(self) -> bool:
    """Whether this is the evaluator."""
    return self._task.type == 'evaluator'

  @property
  def trial(self) -> Optional[str]:
    """The hyperparameter tuning trial id, or None."""
    return self._task.trial

  @property
  def num_workers(self) -> int:
    """The number of worker tasks (the chief not counted)."""
    return len(self._cluster.get('worker', ()))

  @property
  def num_ps(self) -> int:
    """The number of parameter servers."""
    return len(self._cluster.get('ps', ()))

  @property
  def strategy_kind(self) -> str:
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
    if self._multi_task():
      return 'multi_worker_mirrored'
    import tensorflow as tf

    if len(tf.config.list_physical_devices('GPU')) > 1:
      return 'mirrored'
    return 'default'

  def create_device_setter(self, args: Any = None) -> Any:
    """Creates the strategy that places variables and ops.

    Args:
      args: the job's arguments (or their `JobSettings`): `--min-shard-bytes`
        is the smallest variable shard across several parameter servers.

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
    import tensorflow as tf

    settings = (
      args if isinstance(args, JobSettings) else JobSettings.from_args(args)
    )
    kind = self.strategy_kind
    if kind == 'parameter_server':
      partitioner = None
      # One parameter server holds whole variables; several share big ones.
      if self.num_ps > 1:
        partitioners = tf.distribute.experimental.partitioners
        partitioner = partitioners.MinSizePartitioner(
          min_shard_bytes=settings.min_shard_bytes, max_shards=self.num_ps
        )
      return tf.distribute.ParameterServerStrategy(
        self._cluster_resolver(), variable_partitioner=partitioner
      )
    if kind == 'multi_worker_mirrored':
      # No collective timeout: TensorFlow holds a watchdog thread per
      # collective for the whole timeout, so threads pile up at the step
      # rate (300 s of 50 collectives a step: thousands) until the process
      # aborts. A lost peer is still found: the coordination service's
      # heartbeats abort every collective once a task stops answering.
      return tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=self._cluster_resolver()
      )
    if kind == 'mirrored':
      return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()

  def create_server(self, start: bool = True) -> Any:
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
    if not self._multi_task() or self.evaluator:
      raise ConfigurationError(
        'create_server needs a task of a distributed training cluster '
        '(more than one task; the evaluator is not part of it). Received: '
        f'task={self._task}, cluster={_tfconfig.shorten(self._cluster)}'
      )
    import tensorflow as tf

    return tf.distribute.Server(
      self.training_cluster,
      job_name=self._task.type,
      task_index=self._task.index,
      protocol='grpc',
      start=start,
    )

  def to_dict(self) -> Dict[str, Any]:
    """Returns the configuration as a JSON-able dict, for the job record.

    Example:
      >>> Configuration.local().to_dict()['task']
      {'type': 'chief', 'index': 0, 'trial': None}
    """
    return {
      'task': dataclasses.asdict(self._task),
      'cluster': (
        {k: list(v) for k, v in self._cluster.items()}
        if self._cluster
        else None
      ),
      'job': self._job,
      'env': self._env,
    }

  def __eq__(self, other):
    if not isinstance(other, Configuration):
      return NotImplemented
    return self.to_dict() == other.to_dict()

  __hash__ = None  # type: ignore[assignment]

  def __repr__(self):
    d = self.to_dict()
    return (
      f'Configuration(task={self._task!r}, cluster={d["cluster"]!r}, '
      f'job={d["job"]!r}, env={d["env"]!r})'
    )

  def _training_jobs(self):
    return {k: v for k, v in self._cluster.items() if k != 'evaluator'}

  def _cluster_resolver(self):
    import tensorflow as tf

    return tf.distribute.cluster_resolver.SimpleClusterResolver(
      self.training_cluster,
      task_type=self._task.type,
      task_id=self._task.index,
      rpc_layer='grpc',
    )
