"""Cluster plumbing: reachability, serving roles, and the job's end."""

import datetime
import logging
import os
import socket
import sys
import time
from typing import Any

import tensorflow as tf
import yaml

from tensorfx._errors import ConfigurationError
from tensorfx._errors import TrainingError
from tensorfx._logging import logger

_TERMINAL = ('completed', 'failed', 'interrupted')


def wait_for_cluster(config, timeout_secs):
  """Waits until every other task of the training cluster accepts connections.

  Raises:
    ConfigurationError: naming the first address still unreachable after
      `timeout_secs` (instead of hanging in gRPC).
  """
  cluster = config.training_cluster
  if cluster is None:
    return
  own = config.task
  pending = []
  for job in cluster.jobs:
    for index, address in enumerate(cluster.job_tasks(job)):
      if job == own.type and index == own.index:
        continue
      pending.append((job, index, address))
  deadline = time.monotonic() + timeout_secs
  while pending:
    job, index, address = pending[0]
    host, _, port = address.rpartition(':')
    try:
      with socket.create_connection((host.strip('[]'), int(port)), timeout=2):
        pending.pop(0)
        continue
    except OSError:
      pass
    if time.monotonic() > deadline:
      raise ConfigurationError(
        f'Cannot reach {job} task {index} at {address} after '
        f'{timeout_secs:.0f}s: is it running, and is the address in '
        'TF_CONFIG right?'
      )
    time.sleep(0.5)


def job_finished(output, since, settle_secs=None):
  """Whether the chief recorded the job's end after `since` (a unix time).

  A completed job has ended. A failed or interrupted chief may be
  restarted (by the platform, or `tensorfx train --restart`) and resume:
  that job has ended only when its record has stayed so for `settle_secs`
  (None: never; whoever runs the cluster stops its tasks).
  """
  record = job_record(os.path.join(output, 'job.yaml'))
  if record is None:
    return False
  if record.get('status') not in _TERMINAL:
    return False
  ended: Any = record.get('ended')
  try:
    ended = datetime.datetime.fromisoformat(ended).timestamp()
  except (TypeError, ValueError):
    return False
  # job.yaml keeps whole seconds.
  if ended < int(since):
    return False
  if record['status'] == 'completed':
    return True
  return settle_secs is not None and time.time() - ended >= settle_secs


# The last text read of each job.yaml polled and its record. Every serving
# task polls it each second: parsing it each time (about 10 ms with PyYAML's
# Python loader) was 1.5% of a core per task, measured by perf on a
# parameter-server cluster. The chief rewrites it at its start and end, and
# with its step at most once a second as it trains (`_run.recovery`); a
# changed text is parsed by libyaml.
_RECORDS: dict[str, tuple[str, dict]] = {}

# libyaml's loader where PyYAML was built with it: the same records.
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def job_record(path):
  """The record in `path` (a dict), or None when it cannot be read now.

  What the serving tasks poll for the job's end, and what a restarted
  chief reads of how far the run before it got (`_run.recovery`).
  """
  try:
    with tf.io.gfile.GFile(path) as f:
      text = f.read()
  except (tf.errors.OpError, OSError):
    return None
  cached = _RECORDS.get(path)
  if cached is not None and cached[0] == text:
    return cached[1]
  try:
    record = yaml.load(text, Loader=_LOADER) or {}
  except yaml.YAMLError:
    return None
  if not isinstance(record, dict):
    return None
  _RECORDS[path] = (text, record)
  return record


def job_started():
  """When this job began (a unix time).

  As the local launcher says (`TENSORFX_JOB_STARTED`, the same for a
  restarted task), else now.
  """
  try:
    return float(os.environ['TENSORFX_JOB_STARTED'])
  except (KeyError, ValueError):
    return time.time()


def serve(config, output, poll_secs=1.0, grace_secs=30.0, settle_secs=300.0):
  """Runs this task's server until the chief records the end of the job.

  The server stays up `grace_secs` more, for the chief's last remote calls
  while it exits (a cluster manager ends it sooner when the chief exits).
  After a failed or interrupted chief it waits `settle_secs` for a
  restarted one before it ends.
  """
  start = job_started()
  server = config.create_server()
  logger.info(
    'Serving as %s at %s; waiting for the chief to finish',
    config.device,
    server.target,
  )
  while not job_finished(output, start, settle_secs):
    time.sleep(poll_secs)
  logger.info('The job has ended: %s stops serving', config.device)
  time.sleep(grace_secs)
  return server


def wait_for_analysis(dataset, directory, timeout_secs, poll_secs=1.0):
  """Waits for the chief's analysis of the data (non-chief tasks)."""
  deadline = time.monotonic() + timeout_secs
  while not dataset.use_analysis(directory):
    if time.monotonic() > deadline:
      raise ConfigurationError(
        f'No analysis appeared in {directory} within {timeout_secs:.0f}s; '
        'the chief analyzes the data when --data-metadata is not given.'
      )
    time.sleep(poll_secs)


def restart_in_place():
  """Replaces this process by a new run of the same command (never returns).

  What a chief does to grow an embedding table under parameter servers:
  the new process has the same PID, environment and output, so the other
  tasks and a launcher see one chief that paused; it resumes from the
  checkpoint just saved. An interactive session (a notebook's kernel, the
  REPL) is not replaced: the error says to run the job again.

  Raises:
    TrainingError: the process is an interactive session.
  """
  if hasattr(sys, 'ps1') or 'ipykernel' in sys.modules:
    raise TrainingError(
      'The chief stopped at a checkpoint to grow an embedding table '
      '(dynamic_expansion under parameter servers) and restarts in place '
      'only when run as a script; this is an interactive session. Run the '
      'same training again: it resumes with the grown table.'
    )
  for handler in logging.getLogger().handlers + logger.handlers:
    handler.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
