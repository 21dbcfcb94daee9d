"""Reporting the tuning metric the way Vertex AI's tuning service reads it.

During a hyperparameter tuning job, Vertex AI runs each trial with
`CLOUD_ML_TRIAL_ID` set (and usually `CLOUD_ML_HP_METRIC_TAG`, the study's
metric), and reads the trial's measurements from a file of JSON lines:
`CLOUD_ML_HP_METRIC_FILE`, by default `/tmp/hypertune/output.metrics`. Each
line is what the `cloudml-hypertune` package writes, keys sorted:

  {"checkpoint_path": "", "global_step": "200", "timestamp": 1700000000.5,
   "trial": "3", "accuracy": "0.93"}

Values are strings except the timestamp, as that package writes them. The
file keeps the last 100 measurements, as that package does; older lines are
dropped so a long run's file stays small.

Nothing is written outside a tuning trial (no trial id), unless forced: a
local run must not litter /tmp.
"""

import json
import logging
import math
import os
import tempfile
import time

DEFAULT_METRIC_FILE = '/tmp/hypertune/output.metrics'
# The tag the tuning service assumes when a study names none.
DEFAULT_METRIC_TAG = 'training/hptuning/metric'
_MAX_ENTRIES = 100

METRIC_FILE = 'CLOUD_ML_HP_METRIC_FILE'
TRIAL_ID = 'CLOUD_ML_TRIAL_ID'
METRIC_TAG = 'CLOUD_ML_HP_METRIC_TAG'

_logger = logging.getLogger('tensorfx')


def trial_id(environ=None):
  """The tuning trial this process runs, or None outside tuning.

  Example:
    >>> trial_id({'CLOUD_ML_TRIAL_ID': '3'})
    '3'
  """
  environ = os.environ if environ is None else environ
  return environ.get(TRIAL_ID) or None


def _entry(tag, value, step, checkpoint_path, trial):
  return {
    'timestamp': time.time(),
    'trial': str(trial),
    tag: str(value),
    'global_step': str(int(step) if step else 0),
    'checkpoint_path': checkpoint_path,
  }


def report_metric(
  tag, value, step=None, *, checkpoint_path='', force=False, environ=None
):
  """Appends one measurement to the tuning metrics file.

  Example:
    >>> report_metric('accuracy', 0.93, step=200)  # doctest: +SKIP
    '/tmp/hypertune/output.metrics'

  Args:
    tag: the metric's name, the study's `hyperparameterMetricTag` (metric
      id); '' or None means 'training/hptuning/metric'.
    value: the metric value (a number, or a scalar tensor/array).
    step: the global step it was measured at.
    checkpoint_path: the checkpoint it was measured on, if any.
    force: write even when this is not a tuning trial (trial '0').
    environ: the environment to read; by default `os.environ`.

  Returns:
    The metrics file's path, or None when nothing was written: not a trial
    (and not forced), or a non-finite value (the tuning service cannot use
    it; a warning is logged).
  """
  environ = os.environ if environ is None else environ
  trial = trial_id(environ)
  if trial is None and not force:
    return None
  value = float(value)
  if not math.isfinite(value):
    _logger.warning(
      'Not reporting tuning metric %s=%s at step %s: not a finite number.',
      tag,
      value,
      step,
    )
    return None
  path = environ.get(METRIC_FILE) or DEFAULT_METRIC_FILE
  line = json.dumps(
    _entry(tag or DEFAULT_METRIC_TAG, value, step, checkpoint_path, trial or 0),
    sort_keys=True,
  )
  directory = os.path.dirname(path) or '.'
  os.makedirs(directory, exist_ok=True)
  lines = []
  if os.path.exists(path):
    with open(path) as f:
      lines = [line.rstrip('\n') for line in f if line.strip()]
  lines = lines[-(_MAX_ENTRIES - 1) :] + [line]
  # Written whole and renamed, so the service never reads half a line.
  handle, temporary = tempfile.mkstemp(dir=directory, prefix='.metrics-')
  try:
    with os.fdopen(handle, 'w') as f:
      f.write('\n'.join(lines) + '\n')
    os.replace(temporary, path)
  except BaseException:
    if os.path.exists(temporary):
      os.remove(temporary)
    raise
  return path


def report_metrics(
  metrics, step=None, *, checkpoint_path='', force=False, environ=None
):
  """Reports a trial's evaluation metrics; what the trainer calls.

  When the tuning service names its metric (`CLOUD_ML_HP_METRIC_TAG`), only
  that metric is reported (if present in `metrics`); otherwise every metric
  is, one line each, so whichever the study optimizes is found.

  Example:
    >>> report_metrics({'accuracy': 0.93, 'loss': 0.2}, step=200)  # doctest: +SKIP
    ['accuracy', 'loss']

  Args:
    metrics: metric name -> value.
    step: the global step they were measured at.
    checkpoint_path: the checkpoint they were measured on, if any.
    force: write even when this is not a tuning trial.
    environ: the environment to read; by default `os.environ`.

  Returns:
    The names of the metrics written (empty outside a trial).
  """
  environ = os.environ if environ is None else environ
  if trial_id(environ) is None and not force:
    return []
  wanted = environ.get(METRIC_TAG)
  names = [wanted] if wanted and wanted in metrics else sorted(metrics)
  return [
    name
    for name in names
    if report_metric(
      name,
      metrics[name],
      step,
      checkpoint_path=checkpoint_path,
      force=force,
      environ=environ,
    )
  ]
