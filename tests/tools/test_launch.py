"""The local cluster launcher: restarting failed tasks (`--restart N`).

The tasks here are small Python processes (no TensorFlow) that record the
TF_CONFIG they were started with, so a restart can be checked to reuse the
same address and role; each is killed by PID.
"""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tensorfx import ConfigurationError
from tensorfx.tools import _launch

# Each task appends its TF_CONFIG to TASKS/NAME.jsonl. The chief fails
# (exit 3) until TASKS/chief-may-finish exists, then exits 0; the others
# run until killed.
_TASK = """
import json, os, sys, time
config = json.loads(os.environ['TF_CONFIG'])
task = config['task']
name = task['type'] if task['type'] == 'chief' else \\
    f"{task['type']}-{task['index']}"
folder = sys.argv[1]
with open(os.path.join(folder, name + '.jsonl'), 'a') as f:
  f.write(json.dumps(config) + '\\n')
print('up', flush=True)
if name == 'chief':
  while not os.path.exists(os.path.join(folder, 'chief-may-finish')):
    if os.path.exists(os.path.join(folder, 'chief-fails')):
      os.remove(os.path.join(folder, 'chief-fails'))
      sys.exit(3)
    time.sleep(0.05)
  sys.exit(0)
time.sleep(600)
"""


def _configs(folder, name):
  path = folder / f'{name}.jsonl'
  if not path.exists():
    return []
  return [json.loads(line) for line in path.read_text().splitlines()]


def _wait(condition, timeout=30):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if condition():
      return
    time.sleep(0.05)
  raise AssertionError('timed out')


@pytest.fixture
def cluster(tmp_path):
  """Starts a LocalCluster of `_TASK` processes; kills them all after."""
  started = []

  def start(restarts, counts=None):
    counts = counts or {'chief': 1, 'worker': 2, 'ps': 1, 'evaluator': 0}
    stream = io.StringIO()
    local = _launch.LocalCluster(
      [sys.executable, '-c', _TASK, str(tmp_path)],
      counts,
      stream,
      restarts=restarts,
    )
    local.start()
    started.append(local)
    result = {}
    thread = threading.Thread(
      target=lambda: result.setdefault('code', local.wait()), daemon=True
    )
    thread.start()
    return local, stream, thread, result

  yield start
  for local in started:
    for process in local.processes.values():
      if process.poll() is None:
        process.kill()
        process.wait()


@pytest.mark.cluster
def test_a_killed_task_restarts_with_the_same_tf_config(cluster, tmp_path):
  local, stream, thread, result = cluster(restarts=2)
  _wait(lambda: len(_configs(tmp_path, 'worker-1')) == 1)
  first = local.processes['worker-1']
  os.kill(first.pid, signal.SIGKILL)
  _wait(lambda: len(_configs(tmp_path, 'worker-1')) == 2)
  assert local.processes['worker-1'].pid != first.pid
  before, after = _configs(tmp_path, 'worker-1')
  assert before == after  # Same role, index and cluster addresses.
  assert (
    f'restarted worker-1 (pid {local.processes["worker-1"].pid}) '
    'after it was killed by signal 9 (restart 1 of 2)' in stream.getvalue()
  )

  # A chief that fails is restarted too; its exit code 0 ends the cluster.
  (tmp_path / 'chief-fails').touch()
  _wait(lambda: len(_configs(tmp_path, 'chief')) == 2)
  assert 'restarted chief' in stream.getvalue()
  assert 'after it exited with code 3 (restart 1 of 2)' in stream.getvalue()
  (tmp_path / 'chief-may-finish').touch()
  thread.join(timeout=60)
  assert result['code'] == 0
  assert all(p.poll() is not None for p in local.processes.values())


@pytest.mark.cluster
def test_restarts_stop_at_the_budget(cluster, tmp_path):
  local, stream, thread, result = cluster(restarts=1)
  _wait(lambda: _configs(tmp_path, 'ps-0'))
  os.kill(local.processes['ps-0'].pid, signal.SIGKILL)
  _wait(lambda: len(_configs(tmp_path, 'ps-0')) == 2)
  os.kill(local.processes['ps-0'].pid, signal.SIGKILL)
  local.processes['ps-0'].wait(timeout=10)
  time.sleep(1)
  assert len(_configs(tmp_path, 'ps-0')) == 2
  # The chief out of restarts: its code is the cluster's.
  (tmp_path / 'chief-fails').touch()
  _wait(lambda: len(_configs(tmp_path, 'chief')) == 2)
  (tmp_path / 'chief-fails').touch()
  thread.join(timeout=60)
  assert result['code'] == 3
  assert stream.getvalue().count('restarted') == 2


@pytest.mark.cluster
def test_without_restarts_the_cluster_ends_with_the_chief(cluster, tmp_path):
  local, stream, thread, result = cluster(restarts=0)
  _wait(lambda: _configs(tmp_path, 'chief') and _configs(tmp_path, 'ps-0'))
  os.kill(local.processes['ps-0'].pid, signal.SIGKILL)
  time.sleep(1)
  assert len(_configs(tmp_path, 'ps-0')) == 1
  (tmp_path / 'chief-fails').touch()
  thread.join(timeout=60)
  assert result['code'] == 3
  assert 'restarted' not in stream.getvalue()


def test_restart_needs_a_cluster_and_a_count():
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      '/tmp/x',
      '--restart',
      '2',
    ],
    capture_output=True,
    text=True,
    timeout=60,
    check=False,
  )
  assert result.returncode == 1
  assert (
    'tensorfx train: error: --restart restarts the tasks of a local '
    'cluster: give --cluster too. Received: --restart 2' in result.stderr
  )
  with pytest.raises(
    ConfigurationError,
    match='--restart must be a non-negative integer. Received: --restart=-1',
  ):
    _launch.run_local_cluster(['true'], 'workers=1', restarts=-1)


# A task that prints what TensorFlow's tasks print as a cluster's run ends,
# among lines of its own (the block as the chief printed it in a real run).
_NOISY_TASK = r"""
import sys
block = (
  "E0000 00:00:1795860713.000878    5113 context.cc:911] Failed to remove "
  "function remotely due to Tried to remove non-existent function "
  "'__inference_pruned_1001'.\n"
  "Additional GRPC error information from remote target "
  "/job:worker/replica:0/task:1 while calling "
  "/tensorflow.eager.EagerService/Enqueue:\n"
  ":UNKNOWN:Error received from peer  {grpc_status:3, grpc_message:"
  "\"Tried to remove non-existent function '__inference_pruned_1001'.\"}\n"
  "This could happen if the remote target has been disconnected from the "
  "client.\n"
)
print('before', flush=True)
sys.stderr.write(block * 3)
sys.stderr.write("E0000 00:00:1795860713.1    5113 op_kernel.cc:1] real error\n")
sys.stderr.flush()
print('after', flush=True)
"""


@pytest.mark.cluster
@pytest.mark.parametrize('level', [None, 'debug'])
def test_known_harmless_lines_are_not_relayed(level):
  stream = io.StringIO()
  command = [sys.executable, '-c', _NOISY_TASK]
  if level:
    # A trainer flag; the task ignores it.
    command += ['--log-level-tensorflow', level]
  local = _launch.LocalCluster(
    command, {'chief': 1, 'worker': 0, 'ps': 0, 'evaluator': 0}, stream
  )
  local.start()
  assert local.wait() == 0
  relayed = [
    line.partition('] ')[2]
    for line in stream.getvalue().splitlines()
    if line.startswith('[chief')
  ]
  if level is None:
    assert relayed == [
      'before',
      'E0000 00:00:1795860713.1    5113 op_kernel.cc:1] real error',
      'after',
    ]
  else:
    # TensorFlow's debug lines asked for: every line, the noise too.
    assert len(relayed) == 3 * 4 + 3
