"""A local TensorFlow cluster: one process per task on 127.0.0.1.

Each task runs the same trainer command with its own `TF_CONFIG`; every
line it prints is prefixed with its role. The chief's exit code is the
launcher's; when the chief ends, fails or the launcher is interrupted,
every process started here is stopped (SIGTERM, then SIGKILL).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from tensorfx._errors import ConfigurationError

_ROLES = {'ps': 'ps', 'workers': 'worker', 'worker': 'worker',
          'evaluator': 'evaluator', 'evaluators': 'evaluator'}
_GRACE_SECS = 15


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
          f'Received: {part!r}')
    try:
      count = int(value)
    except ValueError:
      count = -1
    if count < 0 or (role == 'evaluator' and count > 1):
      raise ConfigurationError(
          f'--cluster: {name} must be a non-negative integer'
          f'{" (0 or 1)" if role == "evaluator" else ""}. '
          f'Received: {part!r}')
    counts[role] = count
  if counts['ps'] and not counts['worker']:
    raise ConfigurationError('--cluster: parameter servers need workers to '
                             f'train. Received: {text!r}')
  return counts


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def cluster_spec(counts):
  """Addresses on free loopback ports for each task."""
  return {job: [f'127.0.0.1:{_free_port()}' for _ in range(n)]
          for job, n in counts.items() if n}


class LocalCluster:
  """Starts, watches and stops the processes of a local cluster.

  Args:
    command: the trainer command each task runs (argv list).
    counts: tasks by job name, as `parse_cluster` returns.
    stream: where prefixed output goes.
  """

  def __init__(self, command, counts, stream=None):
    self.command = list(command)
    self.cluster = cluster_spec(counts)
    self.stream = stream or sys.stdout
    self.processes = {}
    names = [job if job == 'chief' else f'{job}-{i}'
             for job, addresses in self.cluster.items()
             for i in range(len(addresses))]
    self._width = max(len(n) for n in names + ['cluster'])
    self._lock = threading.Lock()
    self._threads = []

  def _env(self, job, index):
    env = dict(os.environ)
    env['TF_CONFIG'] = json.dumps({
        'cluster': self.cluster, 'task': {'type': job, 'index': index},
        'environment': 'local'})
    # gRPC honours proxy variables: keep loopback traffic direct.
    env['no_proxy'] = env['NO_PROXY'] = ','.join(
        filter(None, ['127.0.0.1,localhost', env.get('no_proxy', '')]))
    env['GRPC_FAIL_FAST'] = 'use_caller'
    env['PYTHONUNBUFFERED'] = '1'
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    return env

  def start(self):
    # Servers first, the chief last: it connects to everyone else.
    order = [(job, i) for job in ('ps', 'worker', 'evaluator', 'chief')
             for i in range(len(self.cluster.get(job, [])))]
    for job, index in order:
      name = job if job == 'chief' else f'{job}-{index}'
      process = subprocess.Popen(
          self.command, env=self._env(job, index), stdout=subprocess.PIPE,
          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
          bufsize=1, start_new_session=True)
      self.processes[name] = process
      thread = threading.Thread(target=self._pump, args=(name, process),
                                daemon=True)
      thread.start()
      self._threads.append(thread)
    self._say(f'started {len(order)} tasks: ' + ', '.join(
        f'{name} (pid {p.pid})' for name, p in self.processes.items()))

  def _pump(self, name, process):
    for line in process.stdout:
      self._say(line.rstrip('\n'), name)

  def _say(self, text, name='cluster'):
    with self._lock:
      self.stream.write(f'[{name:<{self._width}}] {text}\n')
      self.stream.flush()

  def wait(self):
    """Waits for the chief; returns its exit code."""
    chief = self.processes['chief']
    try:
      code = chief.wait()
    except KeyboardInterrupt:
      self._say('interrupted: asking the chief to checkpoint and stop')
      code = self._stop(self.processes['chief'], graceful=True)
      raise
    finally:
      self.stop()
    self._say(f'the chief exited with code {code}')
    return code

  def stop(self):
    """Stops every process still running (the evaluator gets a grace)."""
    evaluator = self.processes.get('evaluator-0')
    if evaluator is not None and evaluator.poll() is None:
      try:
        evaluator.wait(timeout=_GRACE_SECS * 4)
      except subprocess.TimeoutExpired:
        pass
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


def run_local_cluster(command, cluster_text, stream=None):
  """Runs `command` as every task of a local cluster; the chief's code."""
  counts = parse_cluster(cluster_text)
  cluster = LocalCluster(command, counts, stream)

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
  cluster._say(f'cluster ran {time.monotonic() - start:.0f}s')  # pylint: disable=protected-access
  return code
