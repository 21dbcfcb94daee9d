"""Experiment records with MLflow tracking (the optional `tracking` extra).

With `--experiment NAME` (or `--tracking-uri URI`) each run is an MLflow
run of that experiment, recording:

- parameters: the resolved arguments (what `job.yaml` holds);
- tags: git provenance of the trainer (`mlflow.source.git.commit`,
  `tensorfx.git.commit`, `tensorfx.git.dirty`, `tensorfx.git.branch`; on a
  detached HEAD, in CI and outside git too), the output directory, host and
  versions, and the checkpoints written (`tensorfx.checkpoint.latest`,
  `tensorfx.checkpoints`, `tensorfx.checkpoints.best`);
- metrics: `train/loss` and `train/examples_per_sec` every
  `--log-interval-steps`, `TARGET/METRIC` for each validation target at
  each validation, and `checkpoint` (the step) for each checkpoint written.

The store is `--tracking-uri` (any MLflow tracking URI: a server,
`postgresql+psycopg2://...`, `sqlite:////abs/path.db`), else
`MLFLOW_TRACKING_URI`, else an embedded SQLite database in the job output,
`OUTPUT/mlruns.db`. A job re-run on the same output and experiment resumes
its MLflow run, as the training resumes its checkpoint.

MLflow is imported only when tracking is asked for; without it nothing
changes, and asking for it without MLflow installed is an error that says
how to install it.
"""

import json
import logging
import os
import time
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.training._settings import tracking as _settings_tracking

DEFAULT_DB = 'mlruns.db'
# MLflow's limits on a parameter's and a tag's value.
_PARAM_LIMIT = 6000
TAG_LIMIT = 8000
_BATCH = 100  # Parameters per log_batch call (MLflow's limit).


def default_uri(output):
  """The embedded SQLite store of a job: `sqlite:////OUTPUT/mlruns.db`.

  Raises:
    ConfigurationError: the output is not a local directory (an SQLite
      file cannot live on gs://).
  """
  if '://' in str(output):
    raise ConfigurationError(
      'Experiment tracking needs --tracking-uri (an MLflow server or '
      'database) when --output is not a local directory: the default '
      f'store is an SQLite file in the output. Received: --output={output}'
    )
  return 'sqlite:///' + os.path.abspath(os.path.join(output, DEFAULT_DB))


def create(settings, output, enabled=True):
  """The tracker the arguments ask for: an `MlflowTracker` or a no-op one.

  Example:
    >>> tracker = create(TrackingSettings(experiment='iris'), '/tmp/job')
    >>> tracker.start(args.to_dict(), {'commit': 'abc', 'dirty': False})

  Args:
    settings: the `TrackingSettings` (`--experiment`, `--tracking-uri`).
    output: the job's output directory.
    enabled: False gives the no-op tracker (a task that is not the chief).

  Raises:
    ConfigurationError: tracking is asked for but MLflow is missing, or
      the store cannot be reached.
  """
  if not enabled or not settings.enabled:
    return Tracker()
  _settings_tracking.require_mlflow()
  uri = (
    settings.uri or os.environ.get('MLFLOW_TRACKING_URI') or default_uri(output)
  )
  experiment = settings.experiment or 'tensorfx'
  return MlflowTracker(uri, experiment, output)


class Tracker:
  """Records nothing: what a run without tracking uses."""

  enabled = False
  run_id = None

  def start(self, params, source, action='train', resume=True):
    """Starts (or resumes) the run; see `MlflowTracker.start`."""

  def log_train(self, step, values):
    """Records training metrics at `step`."""

  def log_validation(self, step, target, results):
    """Records the results of validation target `target` at `step`."""

  def log_checkpoint(self, step, path, recent=()):
    """Records a checkpoint written at `step` (and the recent ones kept)."""

  def set_tags(self, **tags):
    """Sets tags (`tensorfx.` is prefixed to each name)."""

  def finish(self, status):
    """Ends the run: 'completed', 'failed' or 'interrupted'."""


class MlflowTracker(Tracker):
  """Records one run in an MLflow tracking store.

  Errors reaching the store when the run starts stop the job (tracking was
  asked for); later ones are logged once and the job trains on.

  Args:
    uri: the MLflow tracking URI.
    experiment: the experiment name (made if missing).
    output: the job's output directory (identifies the run to resume).
  """

  enabled = True

  def __init__(self, uri, experiment, output):
    # The store's own start-up chatter (creating tables) is noise here.
    for name in ('mlflow.store.db.utils', 'alembic'):
      logging.getLogger(name).setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    self.uri = uri
    self.experiment = experiment
    self.output = output if '://' in output else os.path.abspath(output)
    try:
      self.client = MlflowClient(tracking_uri=uri)
    except Exception as e:
      raise ConfigurationError(
        f'Cannot open the MLflow tracking store {safe_uri(uri)}: {e}'
      ) from None
    self.run_id: Any = None
    self.experiment_id: Any = None
    self._failed = False

  def start(self, params, source, action='train', resume=True):
    """Starts the run, or resumes this output's last run of the experiment.

    Args:
      params: the resolved arguments (a dict).
      source: git provenance: `path`, `commit`, `dirty`, `branch`.
      action: 'train', 'evaluate' or 'export' (a tag).
      resume: whether a run of the same experiment and output is resumed.

    Returns:
      The MLflow run id.

    Raises:
      ConfigurationError: the store cannot be reached.
    """
    from mlflow.entities import Param

    try:
      self.experiment_id = self._experiment_id()
      run = self._find_run() if resume else None
      params = {
        k: clipped_text(v, _PARAM_LIMIT) for k, v in _flatten(params).items()
      }
      if run is not None:
        self.run_id = run.info.run_id
        self.client.update_run(self.run_id, status='RUNNING')
        recorded = run.data.params
        changed = sorted(
          k for k, v in params.items() if k in recorded and recorded[k] != v
        )
        if changed:
          logger.warning(
            'Resuming MLflow run %s with changed arguments '
            '(kept as first recorded): %s',
            self.run_id,
            ', '.join(changed),
          )
          self.set_tags(
            changed_params=json.dumps({k: params[k] for k in changed})
          )
        params = {k: v for k, v in params.items() if k not in recorded}
        logger.info(
          'Resuming MLflow run %s of experiment %r (%s)',
          self.run_id,
          self.experiment,
          safe_uri(self.uri),
        )
      else:
        tags = _source_tags(source)
        tags.update(
          {
            'tensorfx.output': self.output,
            'tensorfx.action': action,
            'tensorfx.host': _host(),
          }
        )
        run = self.client.create_run(
          self.experiment_id,
          tags=tags,
          run_name=os.path.basename(self.output.rstrip('/')) or None,
        )
        self.run_id = run.info.run_id
        logger.info(
          'Recording MLflow run %s of experiment %r (%s)',
          self.run_id,
          self.experiment,
          safe_uri(self.uri),
        )
      items = [Param(k, v) for k, v in params.items()]
      for i in range(0, len(items), _BATCH):
        self.client.log_batch(self.run_id, params=items[i : i + _BATCH])
      if source:
        # Where the code is now, on this (possibly resumed) run.
        self.set_tags(
          **{
            'git.commit': source.get('commit') or 'none',
            'git.dirty': str(source.get('dirty')).lower(),
          }
        )
    except ConfigurationError:
      raise
    except Exception as e:
      raise ConfigurationError(
        f'Cannot record the run in the MLflow tracking store '
        f'{safe_uri(self.uri)}: {type(e).__name__}: {e}'
      ) from None
    return self.run_id

  def _experiment_id(self):
    experiment = self.client.get_experiment_by_name(self.experiment)
    if experiment is not None:
      if experiment.lifecycle_stage != 'active':
        raise ConfigurationError(
          f'The MLflow experiment {self.experiment!r} is deleted; restore '
          'it or choose another --experiment.'
        )
      return experiment.experiment_id
    artifacts = None
    if self.uri.startswith('sqlite:') and '://' not in self.output:
      # Beside the embedded store, not in the current directory.
      artifacts = os.path.join(
        os.path.dirname(self.uri[len('sqlite:///') :]), 'mlartifacts'
      )
    return self.client.create_experiment(
      self.experiment, artifact_location=artifacts
    )

  def _find_run(self):
    if "'" in self.output:
      return None  # Cannot be quoted in a filter; start a new run.
    runs = self.client.search_runs(
      [self.experiment_id],
      filter_string=f"tags.`tensorfx.output` = '{self.output}' and "
      "tags.`tensorfx.action` = 'train'",
      order_by=['attributes.start_time DESC'],
      max_results=1,
    )
    return runs[0] if runs else None

  def _log(self, metrics=(), tags=()):
    if self._failed or self.run_id is None:
      return
    try:
      self.client.log_batch(self.run_id, metrics=list(metrics), tags=list(tags))
    except Exception as e:
      # Training matters more than its record: warn once, train on.
      self._failed = True
      logger.warning(
        'MLflow tracking failed (%s: %s); training goes on without it.',
        type(e).__name__,
        e,
      )

  def log_train(self, step, values):
    self._log(
      metrics=mlflow_metrics({f'train/{k}': v for k, v in values.items()}, step)
    )

  def log_validation(self, step, target, results):
    self._log(
      metrics=mlflow_metrics(
        {f'{target}/{k}': v for k, v in results.items()}, step
      )
    )

  def log_checkpoint(self, step, path, recent=()):
    from mlflow.entities import RunTag

    tags = [RunTag('tensorfx.checkpoint.latest', path)]
    if recent:
      tags.append(
        RunTag(
          'tensorfx.checkpoints',
          clipped_text(json.dumps(list(recent)), TAG_LIMIT),
        )
      )
    self._log(metrics=mlflow_metrics({'checkpoint': step}, step), tags=tags)

  def set_tags(self, **tags):
    from mlflow.entities import RunTag

    self._log(
      tags=[
        RunTag(f'tensorfx.{k}', clipped_text(v, TAG_LIMIT))
        for k, v in tags.items()
      ]
    )

  def finish(self, status):
    if self.run_id is None:
      return
    state = {
      'completed': 'FINISHED',
      'failed': 'FAILED',
      'interrupted': 'KILLED',
    }.get(status, 'FINISHED')
    self.set_tags(status=status)
    try:
      self.client.set_terminated(self.run_id, status=state)
    except Exception as e:
      logger.warning('Could not end the MLflow run %s: %s', self.run_id, e)


def mlflow_metrics(values, step):
  """MLflow `Metric`s of the numbers in `values` at `step`, stamped now."""
  from mlflow.entities import Metric

  now = int(time.time() * 1000)
  return [
    Metric(key, float(value), now, int(step))
    for key, value in values.items()
    if isinstance(value, (int, float)) and not isinstance(value, bool)
  ]


def _source_tags(source):
  source = source or {}
  tags = {
    'tensorfx.git.commit': source.get('commit') or 'none',
    'tensorfx.git.dirty': str(source.get('dirty')).lower(),
  }
  if source.get('commit'):
    tags['mlflow.source.git.commit'] = source['commit']
  if source.get('branch'):
    tags['tensorfx.git.branch'] = source['branch']
    tags['mlflow.source.git.branch'] = source['branch']
  if source.get('path'):
    tags['mlflow.source.name'] = source['path']
  return tags


def _flatten(params, prefix=''):
  flat = {}
  for key, value in (params or {}).items():
    name = f'{prefix}{key}'
    if isinstance(value, dict) and value:
      flat.update(_flatten(value, name + '.'))
    else:
      flat[name] = value
  return flat


def clipped_text(value, limit):
  """`value` as text (JSON for containers), cut to `limit` characters."""
  if isinstance(value, str):
    text = value
  elif isinstance(value, (list, tuple, dict)):
    text = json.dumps(value)
  else:
    text = str(value)
  return text if len(text) <= limit else text[: limit - 3] + '...'


def _host():
  import socket

  return socket.gethostname()


def safe_uri(uri):
  """The URI without a password."""
  if '@' in uri and '://' in uri:
    scheme, rest = uri.split('://', 1)
    credentials, host = rest.rsplit('@', 1)
    user = credentials.split(':', 1)[0]
    return f'{scheme}://{user}@{host}'
  return uri
