"""Where a tfutils experiment lives: MLflow for the database, a directory.

tfutils kept each experiment in MongoDB, located by `host`, `port`,
`dbname`, `collname` and `exp_id` (in order of increasing specificity),
with its checkpoints cached in a local directory. Here:

- `host`/`port` locate the MLflow tracking store: `host` may be a whole
  tracking URI (`sqlite:////abs/path.db`, `postgresql+psycopg2://user@
  host:5432/db`, `http://host:5000`), else `host` and `port` name an MLflow
  tracking server (`http://HOST:PORT`). Without `host`, `MLFLOW_TRACKING_URI`,
  else an SQLite database in `TFUTILS_HOME` (default `~/.tfutils`) that
  every experiment shares, as they shared a MongoDB server;
- `dbname` and `collname` name the MLflow experiment, `DBNAME/COLLNAME`:
  the runs one query reads, as a collection was;
- `exp_id` names the run (tags `mlflow.runName` and `tfutils.exp_id`) and
  the job's output directory (its checkpoints, summaries, model):
  `cache_dir` when given, else the directory the store recorded for the
  experiment, else `TFUTILS_HOME/DBNAME/COLLNAME/EXP_ID`.

A run records its model's fingerprint (`tfutils.fingerprint`); the same
`exp_id` again resumes the run and its latest checkpoint.
"""

import dataclasses
import json
import os
from typing import Any, Mapping, Optional, Self, Sequence
from urllib import parse

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _keys
from tensorfx.training import internal as _training

LOCATION_KEYS = ('host', 'port', 'dbname', 'collname', 'exp_id')
# The file, in the job's output, that records what the experiment is.
RECORD = 'tfutils.json'
_ACTION = 'tensorfx.action'
_EXP_ID = 'tfutils.exp_id'


def home() -> str:
  """tfutils' home directory: `TFUTILS_HOME`, else `~/.tfutils`."""
  return os.environ.get('TFUTILS_HOME') or os.path.join(
    os.path.expanduser('~'), '.tfutils'
  )


@dataclasses.dataclass(frozen=True)
class Location:
  """An experiment's place: its store, experiment, run and directory.

  Example:
    >>> location = Location(host='sqlite:////tmp/db.sqlite', dbname='mnist',
    ...                     collname='convnet', exp_id='lr0.01')
    >>> location.experiment, location.uri
    ('mnist/convnet', 'sqlite:////tmp/db.sqlite')

  Attributes:
    host: the store's host, or a whole tracking URI; None for the default.
    port: the tracking server's port (with a plain `host`).
    dbname: the database name (the experiment's first part).
    collname: the collection name (the experiment's second part).
    exp_id: the experiment id (the run's name).
    cache_dir: the job's output directory, when given.
  """

  host: Optional[str]
  port: Optional[int]
  dbname: str
  collname: str
  exp_id: str
  cache_dir: Optional[str] = None

  @classmethod
  def from_params(
    cls, params: _keys.Params, fallback: Optional[_keys.Params] = None
  ) -> Self:
    """The location of a `save_params` or `load_params` dict.

    As tfutils' `DBInterface`, each key absent from one dict is read from
    the other: save_params without `dbname` saves in the loaded
    experiment's database, load_params without `exp_id` loads the saving
    one's.

    Args:
      params: the dict as `Params`.
      fallback: the other dict as `Params`, where absent keys are read.

    Raises:
      ConfigurationError: a required key is missing or malformed, naming
        the dict it was read from.
    """
    values: dict[str, Any] = {}
    found: dict[str, _keys.Params] = {}
    for key in LOCATION_KEYS:
      found[key] = params
      if params.get(key) is None and fallback and fallback.get(key) is not None:
        found[key] = fallback
      values[key] = found[key].get(key)
    for key in ('dbname', 'collname', 'exp_id'):
      where = found[key].where(key)
      if values[key] is None:
        params.required(
          key,
          {
            'dbname': 'the database: the first part of the MLflow experiment',
            'collname': 'the collection: the second part of the MLflow '
            'experiment',
            'exp_id': "the experiment id: the MLflow run's name",
          }[key]
          + (f' (or give it in {fallback.path})' if fallback else ''),
        )
      if (
        not isinstance(values[key], str)
        or not values[key].strip()
        or '/' in values[key]
        or "'" in values[key]
      ):
        raise ConfigurationError(
          f'{where} must be a non-empty name without "/" or '
          f'"\'". Received: {where}={values[key]!r}'
        )
    port = values['port']
    if port is not None and (
      isinstance(port, bool) or not isinstance(port, int) or port <= 0
    ):
      where = found['port'].where('port')
      raise ConfigurationError(
        f'{where} must be a port number. Received: {where}={port!r}'
      )
    host = values['host']
    if host is not None and (not isinstance(host, str) or not host):
      where = found['host'].where('host')
      raise ConfigurationError(
        f'{where} must be a host name or a tracking URI. '
        f'Received: {where}={host!r}'
      )
    if (
      host
      and '://' in host
      and port is not None
      and parse.urlsplit(host).port not in (None, port)
    ):
      raise ConfigurationError(
        f'{found["port"].where("port")} differs from the port of the URI '
        f'{found["host"].where("host")}; give the port in the URI only. '
        f'Received: host={host!r} port={port!r}'
      )
    cache_dir = params.get('cache_dir')
    if (
      'cache_dir' not in params
      and fallback is not None
      and fallback.get('exp_id', values['exp_id']) == values['exp_id']
    ):
      # The other dict's directory, when it names the same experiment.
      cache_dir = fallback.get('cache_dir')
    return cls(
      host=host,
      port=port,
      dbname=values['dbname'],
      collname=values['collname'],
      exp_id=values['exp_id'],
      cache_dir=str(cache_dir) if cache_dir else None,
    )

  @property
  def experiment(self) -> str:
    """The MLflow experiment: `DBNAME/COLLNAME`."""
    return f'{self.dbname}/{self.collname}'

  @property
  def uri(self) -> str:
    """The MLflow tracking URI of the store."""
    if self.host and '://' in self.host:
      return self.host
    if self.host:
      if self.port is None:
        raise ConfigurationError(
          f'host {self.host!r} names an MLflow tracking server: give its '
          'port too (or a whole tracking URI as host).'
        )
      return f'http://{self.host}:{self.port}'
    return os.environ.get('MLFLOW_TRACKING_URI') or 'sqlite:///' + os.path.join(
      os.path.abspath(home()), _training.tracking.DEFAULT_DB
    )

  def same_experiment(self, other: 'Location') -> bool:
    """Whether `other` names the same store, experiment and exp_id."""
    return (self.uri, self.experiment, self.exp_id) == (
      other.uri,
      other.experiment,
      other.exp_id,
    )

  def default_output(self) -> str:
    """The output directory when neither given nor recorded."""
    return self.cache_dir or os.path.join(
      home(), self.dbname, self.collname, self.exp_id
    )


class Store:
  """The MLflow store of a location: finds and annotates its runs.

  Args:
    uri: the MLflow tracking URI.

  Raises:
    ConfigurationError: MLflow is not installed.
  """

  def __init__(self, uri: str) -> None:
    _training.tracking_settings.require_mlflow()
    from mlflow.tracking import MlflowClient

    self.uri = uri
    self.client = MlflowClient(tracking_uri=uri)

  def search(
    self, experiment: str, conditions: Sequence[str], max_results: int = 1000
  ) -> list[Any]:
    """The runs of `experiment` meeting `conditions`, newest first."""
    try:
      found = self.client.get_experiment_by_name(experiment)
      if found is None:
        return []
      return list(
        self.client.search_runs(
          [found.experiment_id],
          filter_string=' and '.join(conditions),
          order_by=['attributes.start_time DESC'],
          max_results=max_results,
        )
      )
    except Exception as e:
      raise ConfigurationError(
        'Cannot read the MLflow tracking store '
        f'{_training.tracking.safe_uri(self.uri)}: {type(e).__name__}: {e}'
      ) from None

  def _search(self, experiment: str, conditions: Sequence[str]) -> Any:
    runs = self.search(experiment, conditions, max_results=1)
    return runs[0] if runs else None

  def training_run(self, location: Location) -> Any:
    """The latest training run of `location`'s exp_id, or None."""
    return self._search(
      location.experiment,
      [
        f"tags.`{_EXP_ID}` = '{location.exp_id}'",
        f"tags.`{_ACTION}` = 'train'",
      ],
    )

  def run_of_output(self, experiment: str, output: str, action: str) -> Any:
    """The latest run that tensorfx started for `output` and `action`."""
    if "'" in output:
      return None
    return self._search(
      experiment,
      [
        f"tags.`tensorfx.output` = '{output}'",
        f"tags.`{_ACTION}` = '{action}'",
      ],
    )

  def set_tags(self, run_id: str, tags: Mapping[str, Any]) -> None:
    from mlflow.entities import RunTag

    self.client.log_batch(
      run_id,
      tags=[
        RunTag(k, v if isinstance(v, str) else json.dumps(v))
        for k, v in tags.items()
      ],
    )

  def log_metrics(
    self, run_id: str, step: int, values: Mapping[str, Any]
  ) -> None:
    # Through the tracker's conversion: numbers only, one timestamp.
    self.client.log_batch(
      run_id, metrics=_training.tracking.mlflow_metrics(values, step)
    )


def store_if_installed(uri: str) -> Optional[Store]:
  """The `Store` of `uri`, or None when MLflow is not installed.

  For what only reads the store when it can (finding an experiment's
  directory): its absence costs nothing where nothing is recorded.
  """
  import importlib.util

  if importlib.util.find_spec('mlflow') is None:
    return None
  return Store(uri)


def output_of(location: Location, store: Optional[Store]) -> str:
  """The output directory of `location`'s experiment.

  `cache_dir` when given; else the directory the store recorded for the
  experiment (so an experiment is found wherever it was run from); else
  `TFUTILS_HOME/DBNAME/COLLNAME/EXP_ID`.
  """
  if location.cache_dir:
    return location.cache_dir
  if store is not None:
    run = store.training_run(location)
    if run is not None and run.data.tags.get('tensorfx.output'):
      return run.data.tags['tensorfx.output']
  return location.default_output()


def read_record(output: str) -> Optional[dict[str, Any]]:
  """The experiment record in `output` (`tfutils.json`), or None."""
  import tensorflow as tf

  path = os.path.join(output, RECORD)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def write_record(output: str, record: Mapping[str, Any]) -> None:
  """Writes the experiment record into `output` (whole, or not at all)."""
  import tensorflow as tf

  path = os.path.join(output, RECORD)
  tf.io.gfile.makedirs(output)
  with tf.io.gfile.GFile(path + '.tmp', 'w') as f:
    f.write(json.dumps(record, indent=1, sort_keys=True) + '\n')
  tf.io.gfile.rename(path + '.tmp', path, overwrite=True)
