"""A local TensorFlow cluster: one process per task on 127.0.0.1.

Each task runs the same trainer command with its own `TF_CONFIG`; every
line it prints is prefixed with its role, except TensorFlow's known
harmless lines (`tensorfx._logging.NoiseFilter`: a cluster's tasks print
dozens as a run ends), unless `--log-level-tensorflow debug|info` asks for
all of them. The chief's exit code is the
launcher's; when the chief ends, fails or the launcher is interrupted,
every process started here is stopped (SIGTERM, then SIGKILL).

With `restarts` (`tensorfx train --restart N`) a task that fails or is
killed is started again with the same `TF_CONFIG` on the same address, up
to N times per task, as a cloud platform restarts a failed replica: a
restarted chief resumes from the last checkpoint, a restarted parameter
server is refilled by it, a restarted worker or evaluator rejoins.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from tensorfx import _logging
from tensorfx._errors import ConfigurationError

_ROLES = {
  'ps': 'ps',
  'workers': 'worker',
  'worker': 'worker',
  'evaluator': 'evaluator',
  'evaluators': 'evaluator',
}
_GRACE_SECS = 15
JOB_STARTED = 'TENSORFX_JOB_STARTED'


def parse_cluster(text):
  """Parses `ps=1,workers=2,evaluator=1` into task counts by job name.

  The chief is always there (one task); `workers` and `ps` add tasks.

  Raises:
    ConfigurationError: naming the part that is wrong.
  """
  counts = {'chief': 1, 'worker': 0, 'ps': 0, 'evaluator': 0}
  for part in filter(None, (p.strip() for p in text.split(','))):
    name, sep, value = part.partition('=')
    role = _ROLES.get(name.strip())
    if not sep or role is None:
      raise ConfigurationError(
        '--cluster takes ps=N,workers=N,evaluator=N (any of them). '
        f'Received: {part!r}'
      )
    try:
      count = int(value)
    except ValueError:
      count = -1
    if count < 0 or (role == 'evaluator' and count > 1):
      raise ConfigurationError(
        f'--cluster: {name} must be a non-negative integer'
        f'{" (0 or 1)" if role == "evaluator" else ""}. '
        f'Received: {part!r}'
      )
    counts[role] = count
  if counts['ps'] and not counts['worker']:
    raise ConfigurationError(
      f'--cluster: parameter servers need workers to train. Received: {text!r}'
    )
  return counts


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def cluster_spec(counts):
  """Addresses on free loopback ports for each task."""
  return {
    job: [f'127.0.0.1:{_free_port()}' for _ in range(n)]
    for job, n in counts.items()
    if n
  }


class LocalCluster:
  """Starts, watches and stops the processes of a local cluster.

  Args:
    command: the trainer command each task runs (argv list).
    counts: tasks by job name, as `parse_cluster` returns.
    stream: where prefixed output goes.
    restarts: how many times each task is restarted when it fails or is
      killed (0: never; the job then stands or falls with the chief).
  """

  def __init__(self, command, counts, stream=None, restarts=0):
    self.command = list(command)
    self.cluster = cluster_spec(counts)
    self.stream = stream or sys.stdout
    self.restarts = int(restarts)
    self.restarted = {}  # Task name -> times restarted.
    self.processes = {}
    self._tasks = {}  # Task name -> (job, index).
    names = [
      job if job == 'chief' else f'{job}-{i}'
      for job, addresses in self.cluster.items()
      for i in range(len(addresses))
    ]
    self._width = max(len(n) for n in names + ['cluster'])
    self._lock = threading.Lock()
    self._threads = []
    self._started = time.time()
    self._filtered = not _logging.shows_all_tensorflow_lines(self.command)

  def _env(self, job, index):
    env = dict(os.environ)
    env['TF_CONFIG'] = json.dumps(
      {
        'cluster': self.cluster,
        'task': {'type': job, 'index': index},
        'environment': 'local',
      }
    )
    # gRPC honours proxy variables: keep loopback traffic direct.
    env['no_proxy'] = env['NO_PROXY'] = ','.join(
      filter(None, ['127.0.0.1,localhost', env.get('no_proxy', '')])
    )
    env['GRPC_FAIL_FAST'] = 'use_caller'
    env['PYTHONUNBUFFERED'] = '1'
    # When the job began: a task restarted after the chief recorded the
    # job's end knows that end is this job's.
    env[JOB_STARTED] = str(int(self._started))
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    return env

  def start(self):
    # Servers first, the chief last: it connects to everyone else.
    order = [
      (job, i)
      for job in ('ps', 'worker', 'evaluator', 'chief')
      for i in range(len(self.cluster.get(job, [])))
    ]
    for job, index in order:
      name = job if job == 'chief' else f'{job}-{index}'
      self._tasks[name] = (job, index)
      self._launch(name)
    self.say(
      f'started {len(order)} tasks: '
      + ', '.join(f'{name} (pid {p.pid})' for name, p in self.processes.items())
    )

  def _launch(self, name):
    job, index = self._tasks[name]
    process = subprocess.Popen(
      self.command,
      env=self._env(job, index),
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL,
      text=True,
      bufsize=1,
      start_new_session=True,
    )
    self.processes[name] = process
    thread = threading.Thread(
      target=self._pump, args=(name, process), daemon=True
    )
    thread.start()
    self._threads.append(thread)
    return process

  def _pump(self, name, process):
    # One filter per process: a block of noise is a run of its lines.
    lines = _logging.NoiseFilter() if self._filtered else None
    # Closed at the end: a pipe left to the garbage collector is a leak.
    with process.stdout:
      for line in process.stdout:
        if lines is None or lines.keep(line):
          self.say(line.rstrip('\n'), name)

  def say(self, text, name='cluster'):
    """Writes one line of `name`'s output, prefixed with its name."""
    with self._lock:
      self.stream.write(f'[{name:<{self._width}}] {text}\n')
      self.stream.flush()

  def wait(self):
    """Waits for the chief (restarting tasks); returns its exit code."""
    code = None
    try:
      code = self._watch()
    except KeyboardInterrupt:
      self.say('interrupted: asking the chief to checkpoint and stop')
      self._stop(self.processes['chief'], graceful=True)
      raise
    finally:
      # The evaluator finishes the last checkpoint of a completed job.
      self.stop(wait_for_evaluator=code == 0)
    self.say(f'the chief exited with code {code}')
    return code

  def _watch(self, poll_secs=0.2):
    """Waits for the chief to end for good, restarting failed tasks."""
    if not self.restarts:
      return self.processes['chief'].wait()
    while True:
      for name in list(self.processes):
        code = self._restart_if_failed(name)
        if name == 'chief' and code is not None:
          return code
      time.sleep(poll_secs)

  def _restart_if_failed(self, name):
    """Restarts task `name` if it failed and may restart.

    Returns:
      Its exit code when it has ended for good (0, or out of restarts),
      else None.
    """
    code = self.processes[name].poll()
    if code is None or code == 0:
      return code
    if self.restarted.get(name, 0) >= self.restarts:
      return code
    self.restarted[name] = self.restarted.get(name, 0) + 1
    new = self._launch(name)
    self.say(
      f'restarted {name} (pid {new.pid}) after it {_ended(code)} '
      f'(restart {self.restarted[name]} of {self.restarts})'
    )
    return None

  def stop(self, wait_for_evaluator=True, poll_secs=0.2):
    """Stops every process still running (the evaluator gets a grace)."""
    deadline = time.monotonic() + _GRACE_SECS * 4
    while (
      wait_for_evaluator
      and 'evaluator-0' in self.processes
      and time.monotonic() < deadline
    ):
      # Restarted if it fails while it evaluates the last checkpoints.
      if self._restart_if_failed('evaluator-0') is not None:
        break
      time.sleep(poll_secs)
    for name, process in self.processes.items():
      if process.poll() is None:
        self._stop(process, graceful=name != 'chief')
    for thread in self._threads:
      thread.join(timeout=5)

  @staticmethod
  def _stop(process, graceful):
    if process.poll() is None:
      process.send_signal(signal.SIGTERM)
      try:
        return process.wait(timeout=_GRACE_SECS if graceful else 5)
      except subprocess.TimeoutExpired:
        pass
      process.kill()
    return process.wait()


def _ended(code):
  if code < 0:
    return f'was killed by signal {-code}'
  return f'exited with code {code}'


def run_local_cluster(command, cluster_text, stream=None, restarts=0):
  """Runs `command` as every task of a local cluster; the chief's code.

  Args:
    command: the trainer command (argv list).
    cluster_text: `ps=N,workers=N,evaluator=N`.
    stream: where the tasks' prefixed output goes (stdout).
    restarts: how many times to restart each task that fails or is killed.
  """
  counts = parse_cluster(cluster_text)
  if not isinstance(restarts, int) or restarts < 0:
    raise ConfigurationError(
      '--restart must be a non-negative integer. '
      f'Received: --restart={restarts!r}'
    )
  cluster = LocalCluster(command, counts, stream, restarts)

  def terminate(signum, frame):
    del signum, frame
    raise KeyboardInterrupt

  # A launcher stopped by SIGTERM stops its cluster as Ctrl-C does.
  previous = signal.signal(signal.SIGTERM, terminate)
  cluster.start()
  start = time.monotonic()
  try:
    code = cluster.wait()
  finally:
    signal.signal(signal.SIGTERM, previous)
  cluster.say(f'cluster ran {time.monotonic() - start:.0f}s')
  return code
