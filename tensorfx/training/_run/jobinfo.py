"""job.yaml: what a job ran with (arguments, TF_CONFIG, versions, git)."""

import datetime
import os
import platform
import socket
import subprocess
import sys

import tensorflow as tf

from tensorfx import _atomic
from tensorfx import _version
from tensorfx import _yaml
from tensorfx._logging import logger


def git_provenance(path):
  """The git commit and dirty flag of the repository holding `path`.

  Works on a detached HEAD, in CI and outside git (then `commit` is None).
  """
  directory = path if os.path.isdir(path) else os.path.dirname(path) or '.'

  def git(*args):
    result = subprocess.run(
      ['git', '-C', directory, *args],
      capture_output=True,
      text=True,
      timeout=10,
      check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else None

  try:
    commit = git('rev-parse', 'HEAD')
    if commit is None:
      return {'commit': None}
    branch = git('rev-parse', '--abbrev-ref', 'HEAD')
    status = git('status', '--porcelain', '--untracked-files=no')
  except (OSError, subprocess.SubprocessError):
    return {'commit': None}
  return {
    'commit': commit,
    'branch': None if branch in (None, 'HEAD') else branch,
    'dirty': bool(status),
  }


def source():
  """The running trainer's path (its `__main__`) and git provenance."""
  main = getattr(sys.modules.get('__main__'), '__file__', None) or os.getcwd()
  return {'path': os.path.abspath(main), **git_provenance(main)}


def versions():
  """Versions of the stack, for reproducing a job."""
  from importlib import metadata

  found = {
    'python': platform.python_version(),
    'tensorfx': _version.__version__,
    'tensorflow': tf.__version__,
  }
  # From the installed distributions: importing Beam to ask would cost
  # seconds of every job's start-up.
  for module, distribution in (
    ('tf_keras', 'tf-keras'),
    ('tensorflow_transform', 'tensorflow-transform'),
    ('apache_beam', 'apache-beam'),
  ):
    try:
      found[module] = metadata.version(distribution)
    except metadata.PackageNotFoundError:
      continue
  return found


class JobRecord:
  """Writes `job.yaml` under the output directory at start and at the end.

  Each write goes to a temporary file renamed into place: a kill leaves the
  previous record whole (the other tasks read it to know the job's end).

  Args:
    path: the path of job.yaml.
    arguments: the job's arguments (a dict).
    config: the `Configuration` dict.
  """

  def __init__(self, path, arguments, config):
    self._path = path
    self._record = {
      'tensorfx': _version.__version__,
      'status': 'running',
      'started': _now(),
      'host': socket.gethostname(),
      'command': list(sys.argv),
      'arguments': arguments,
      'config': config,
      'versions': versions(),
      'source': source(),
    }

  @property
  def arguments(self):
    """The job's arguments, as recorded (a dict)."""
    return dict(self._record['arguments'])

  @property
  def source(self):
    """The trainer's path and git provenance (commit, branch, dirty)."""
    return dict(self._record['source'])

  def write(self, **updates):
    """Updates fields and rewrites job.yaml."""
    self._record.update(updates)
    if updates.get('status') in ('completed', 'failed', 'interrupted'):
      self._record['ended'] = _now()
    self._write('job.yaml')

  def progress(self, **updates):
    """Updates fields of a running job (its step) and rewrites job.yaml.

    As `write`, under its own fault point (`job.yaml.progress`): a test
    kills the run's start or end record without counting these.
    """
    self._record.update(updates)
    self._write('job.yaml.progress')

  def _write(self, fault):
    _atomic.write_text(
      self._path, _yaml.dump_yaml(_plain(self._record)), fault=fault
    )

  def write_on_failure(self, **updates):
    """Rewrites job.yaml while a run fails; a failed write only warns.

    The run's own error (a full disk, say) is the one to report.
    """
    try:
      self.write(**updates)
    except (tf.errors.OpError, OSError) as e:
      logger.warning(
        "Could not record the job's end in %s: %s",
        self._path,
        str(getattr(e, 'message', e)).splitlines()[0],
      )


def _now():
  return datetime.datetime.now(datetime.timezone.utc).isoformat(
    timespec='seconds'
  )


def _plain(value):
  """Makes a value safe for yaml.safe_dump.

  NumPy values first: `numpy.float64` is a float that safe_dump cannot
  write, and a record that cannot be written would fail a finished run.
  """
  if hasattr(value, 'tolist') and not isinstance(value, str):
    value = value.tolist()  # NumPy scalars and arrays
  if isinstance(value, dict):
    return {str(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  return str(value)
