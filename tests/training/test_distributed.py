"""Distributed training on real local clusters of processes, with faults.

Each test runs `tensorfx train --cluster ...` (one process per task on
127.0.0.1, free ports) on the iris sample, watches its prefixed output,
injects a fault by PID, and checks the outcome. Every process started is
killed at the end whatever happens.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from conftest import IRIS_CLASSES
from conftest import iris_labels
from test_trainer import _scalars

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TIMEOUT = 240
_PID = re.compile(r'(\S+) \(pid (\d+)\)')


class Cluster:
  """A `tensorfx train --cluster` run whose output lines are collected."""

  def __init__(self, output, cluster, analysis, *extra):
    command = [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      str(output),
      '--cluster',
      cluster,
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      analysis,
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
      '--log-interval-steps',
      '50',
      '--seed',
      '7',
      *extra,
    ]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    self.process = subprocess.Popen(
      command,
      cwd=IRIS,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
      bufsize=1,
      start_new_session=True,
    )
    self.lines = []
    self.pids = {}
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    with self.process.stdout:
      for line in self.process.stdout:
        self.lines.append(line.rstrip('\n'))
        if 'started' in line and '(pid' in line:
          self.pids.update((n, int(p)) for n, p in _PID.findall(line))

  def wait_for(self, pattern, timeout=TIMEOUT):
    """Waits for an output line matching `pattern`; returns the match."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
      for line in self.lines[seen:]:
        match = regex.search(line)
        if match:
          return match
      seen = len(self.lines)
      if self.process.poll() is not None and seen == len(self.lines):
        self._reader.join(timeout=5)
        if not any(regex.search(line) for line in self.lines):
          break
      time.sleep(0.2)
    raise AssertionError(f'no line matched {pattern!r}:\n' + self.text[-4000:])

  def wait(self, timeout=TIMEOUT):
    code = self.process.wait(timeout=timeout)
    self._reader.join(timeout=10)
    return code

  @property
  def text(self):
    return '\n'.join(self.lines)

  def kill(self, name, signum=signal.SIGKILL):
    os.kill(self.pids[name], signum)

  def close(self):
    """Kills the launcher and every task it reported, by PID."""
    pids = [self.process.pid, *self.pids.values()]
    for pid in pids:
      try:
        os.kill(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    self.process.wait(timeout=30)

  def assert_all_exited(self):
    for name, pid in self.pids.items():
      assert not _alive(pid), f'{name} (pid {pid}) is still running'


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  # A zombie of ours counts as gone: it has exited.
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().split()[2] != 'Z'
  except OSError:
    return False


@pytest.fixture
def cluster(tmp_path, iris_analysis):
  started = []

  def start(name, spec, *extra):
    run = Cluster(tmp_path / name, spec, iris_analysis, *extra)
    started.append(run)
    return run

  yield start
  for run in started:
    run.close()


def _job(output):
  return yaml.safe_load((output / 'job.yaml').read_text())


def _step(output):
  return int(
    tf.train.latest_checkpoint(str(output / 'checkpoints')).rsplit('-', 1)[1]
  )


@pytest.mark.release
def test_parameter_servers_absorb_a_preempted_worker(cluster, tmp_path):
  # A preempted worker VM: SIGTERM, and the cluster manager (here the
  # launcher's --restart) starts it again. The chief goes on throughout.
  run = cluster(
    'ps',
    'ps=1,workers=2,evaluator=1',
    '--max-steps',
    '1500',
    '--checkpoint-interval-steps',
    '300',
    '--restart',
    '2',
  )
  run.wait_for(r'\[chief\s*\] .*step 300/1500')
  run.kill('worker-0', signal.SIGTERM)
  assert run.wait() == 0, run.text[-4000:]
  output = tmp_path / 'ps'
  assert 'the chief exited with code 0' in run.text
  launcher = [line for line in run.lines if line.startswith('[cluster')]
  assert any('restarted worker-0' in line for line in launcher), run.text
  assert not any('restarted chief' in line for line in launcher), run.text
  chief = [line for line in run.lines if line.startswith('[chief')]
  assert sum('Resumed from' in line for line in chief) == 0
  job = _job(output)
  assert job['global_step'] >= 1500
  # Steps of the closure lost with the worker ran again: logged and kept.
  again = [
    e['steps_again']
    for e in job.get('recovery', {}).get('events', [])
    if e['event'] == 'worker lost'
  ]
  logged = [line for line in chief if 'ran again on another worker' in line]
  assert len(again) <= len(logged) and all(n > 0 for n in again)
  assert bool(again) == bool(logged)
  # The chief's export and the evaluator's best model both serve.
  for name in ('model', 'best_model'):
    assert iris_labels(output / name) == IRIS_CLASSES, name
  evaluated = yaml.safe_load(
    (output / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  assert evaluated['evaluated'] == sorted(set(evaluated['evaluated']))
  assert evaluated['evaluated'][-1] == _step(output)
  assert evaluated['best'] >= 0.93
  run.assert_all_exited()


@pytest.mark.release
def test_evaluator_task_honours_the_validation_flags(cluster, tmp_path):
  # The evaluator evaluates as the chief would: every target, the interval,
  # step 0 first, the batches asked for, the best metric and the K best.
  run = cluster(
    'ev',
    'evaluator=1',
    '--max-steps',
    '300',
    '--checkpoint-interval-steps',
    '50',
    '--keep-checkpoints',
    '10',
    '--eval-interval-steps',
    '100',
    '--validate-first',
    '--eval-batches',
    '2',
    '--eval-batch-size',
    '5',
    '--eval-target',
    'holdout',
    'data=data/eval.csv',
    'batches=1',
    'batch_size=8',
    '--best-metric',
    'holdout/accuracy:max',
    '--keep-best-checkpoints',
    '2',
    '--eval-slices',
    'species',
  )
  assert run.wait() == 0, run.text[-4000:]
  output = tmp_path / 'ev'
  evaluated = yaml.safe_load(
    (output / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  assert evaluated['evaluated'] == [0, 100, 200, 300]
  evaluator = [line for line in run.lines if line.startswith('[evaluator')]
  assert (
    sum(
      'Evaluation at step' in line and 'on 10 examples' in line
      for line in evaluator
    )
    == 4
  ), '\n'.join(evaluator)
  assert (
    sum(
      'Validation holdout at step' in line and 'on 8 examples' in line
      for line in evaluator
    )
    == 4
  ), '\n'.join(evaluator)
  # The chief left validation to the evaluator.
  assert not any(
    'Evaluation at step' in line
    for line in run.lines
    if line.startswith('[chief')
  )
  holdout = dict(
    _scalars(str(output / 'summaries' / 'eval_holdout'))['accuracy']
  )
  assert sorted(holdout) == [0, 100, 200, 300]
  assert sorted(dict(_scalars(str(output / 'summaries' / 'eval'))['loss'])) == [
    0,
    100,
    200,
    300,
  ]
  # The best two by holdout accuracy are kept; the best model is the best.
  kept = yaml.safe_load(
    (output / 'checkpoints' / 'best' / 'best.json').read_text()
  )['best']
  ranked = sorted(holdout.items(), key=lambda item: -item[1])
  assert [e['value'] for e in kept] == [v for _, v in ranked[:2]]
  assert evaluated['best'] == ranked[0][1]
  assert holdout[evaluated['best_step']] == ranked[0][1]
  assert (output / 'best_model' / 'saved_model.pb').exists()
  # --eval-slices: each target's slices, of the same examples as the target.
  for directory, examples in (('eval', 10), ('eval_holdout', 8)):
    scalars = _scalars(str(output / 'summaries' / directory))
    counts = [
      dict(values)
      for tag, values in scalars.items()
      if tag.startswith(f'{directory}/slice/species=')
      and tag.endswith('/examples')
    ]
    assert counts, sorted(scalars)
    for step in (0, 100, 200, 300):
      assert sum(c.get(step, 0) for c in counts) == examples
  run.assert_all_exited()


@pytest.mark.release
def test_multi_worker_mirrored(cluster, tmp_path):
  run = cluster('mw', 'workers=2', '--max-steps', '600')
  assert run.wait() == 0, run.text[-4000:]
  output = tmp_path / 'mw'
  job = _job(output)
  assert job['global_step'] == 600
  assert job['metrics']['accuracy'] >= 0.93
  assert not (output / '.workers').exists()
  # The chief prints the predictions; the tasks' lines interleave.
  assert any(
    'virginica' in line
    for line in run.text.splitlines()
    if line.startswith('[chief')
  )
  # No TensorFlow noise: the engine votes in a traced function, and the
  # evaluation's read of a distributed dataset warns nothing.
  assert 'eagerly has significant overhead' not in run.text
  assert 'To make it possible to preserve tf.data options' not in run.text
  run.assert_all_exited()


@pytest.mark.release
def test_multi_worker_mirrored_lost_worker_is_named(cluster, tmp_path):
  """A killed worker stops the chief within seconds, naming the worker."""
  run = cluster('mwlost', 'workers=1', '--max-steps', '1000000')
  run.wait_for(r'\[chief +\] .* step \d+')
  run.kill('worker-0')
  # The coordination service's heartbeats find it (no collective waits
  # out a timeout).
  assert run.wait(timeout=120) == 1, run.text[-4000:]
  # The peer's connection resets or its heartbeats stop, whichever TensorFlow
  # notices first.
  assert re.search(
    r'Task worker 0 of the cluster stopped answering \(.+\)\. '
    'Restart the job: it resumes from the last checkpoint',
    run.text,
  ), run.text[-4000:]
  assert _job(tmp_path / 'mwlost')['status'] == 'failed'
  run.assert_all_exited()


@pytest.mark.release
def test_chief_sigterm_checkpoints_then_sigkill_and_resume(cluster, tmp_path):
  args = (
    '--max-steps',
    '1500',
    '--checkpoint-interval-steps',
    '600',
    '--log-interval-steps',
    '20',
  )
  run = cluster('chief', 'ps=1,workers=1', *args)
  match = run.wait_for(r'\[chief\s*\] .*step (\d+)/1500')
  # A preemption's grace window of 10 s: the chief must save and exit in
  # it, or the machine goes with what it has.
  run.kill('chief', signal.SIGTERM)
  try:
    run.process.wait(timeout=10)
  except subprocess.TimeoutExpired:
    run.close()
  # 143 = 128 + SIGTERM: "preempted, restart me".
  assert run.wait() == 143, run.text[-4000:]
  output = tmp_path / 'chief'
  stopped = _step(output)
  assert stopped >= int(match.group(1))
  assert _job(output)['status'] == 'interrupted'
  run.assert_all_exited()

  # The same command again resumes from that checkpoint, and the workers'
  # input where it was; kill it hard between its next two checkpoints.
  run = cluster('chief', 'ps=1,workers=1', *args)
  run.wait_for(rf'Resumed from .*ckpt-{stopped} at step {stopped}')
  run.wait_for(rf'Resuming the training input after the {stopped} batches')
  match = run.wait_for(r'Saved checkpoint .*ckpt-(\d+)')
  saved = int(match.group(1))
  assert saved > stopped
  reached = int(
    run.wait_for(
      rf'\[chief\s*\] .*step ({saved + 100}|{saved + 120})/1500'
    ).group(1)
  )
  # The chief writes its step at log intervals, at most once a second.
  time.sleep(1.5)
  run.kill('chief', signal.SIGKILL)
  assert run.wait() != 0
  run.assert_all_exited()

  run = cluster('chief', 'ps=1,workers=1', *args)
  resumed = int(run.wait_for(r'Resumed from .*at step (\d+)').group(1))
  # No more lost than one checkpoint interval, and what ran again is said.
  assert resumed >= saved
  again = run.wait_for(
    rf'Resumed at step {resumed}; the run before reached step (\d+): '
    r'(\d+) steps run again'
  )
  assert int(again.group(1)) >= reached
  assert run.wait() == 0, run.text[-4000:]
  job = _job(output)
  assert job['global_step'] >= 1500
  assert job['recovery']['steps_again'] == int(again.group(2))
  assert job['recovery']['events'][0]['from_step'] == resumed
  run.assert_all_exited()


@pytest.mark.release
def test_lost_parameter_server_fails_clearly_and_restart_resumes(
  cluster, tmp_path
):
  args = ('--max-steps', '1000', '--checkpoint-interval-steps', '200')
  run = cluster('lostps', 'ps=1,workers=1', *args)
  run.wait_for(r'Saved checkpoint .*ckpt-\d+')
  run.kill('ps-0')
  code = run.wait(timeout=TIMEOUT)
  assert code == 1, run.text[-4000:]
  assert 'became unavailable' in run.text
  assert 'resumes from the last checkpoint' in run.text
  run.assert_all_exited()
  output = tmp_path / 'lostps'
  saved = _step(output)
  run = cluster('lostps', 'ps=1,workers=1', *args)
  run.wait_for(rf'Resumed from .*ckpt-{saved}')
  assert run.wait() == 0, run.text[-4000:]
  run.assert_all_exited()


def test_unreachable_task_is_named(tmp_path, iris_analysis, monkeypatch):
  """A chief whose parameter server never comes up fails with its address."""
  import json
  import socket

  ports = []
  for _ in range(3):
    with socket.socket() as s:
      s.bind(('127.0.0.1', 0))
      ports.append(s.getsockname()[1])
  config = {
    'cluster': {
      'chief': [f'127.0.0.1:{ports[0]}'],
      'worker': [f'127.0.0.1:{ports[1]}'],
      'ps': [f'127.0.0.1:{ports[2]}'],
    },
    'task': {'type': 'chief', 'index': 0},
  }
  env = dict(os.environ, TF_CONFIG=json.dumps(config))
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      str(tmp_path),
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      iris_analysis,
      '--cluster-timeout-secs',
      '3',
    ],
    cwd=IRIS,
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 1
  assert f'Cannot reach worker task 0 at 127.0.0.1:{ports[1]}' in result.stderr
