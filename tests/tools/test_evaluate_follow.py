"""Continuous evaluation and runs until interrupted, with real processes.

`tensorfx train --max-steps 0` trains until Ctrl-C (SIGINT), which saves a
checkpoint and exits 130; `tensorfx evaluate --follow` beside it evaluates
each of its checkpoints once, with the evaluator task's engine, and stops
when the job records its end. Every process started is killed by PID at
the end whatever happens.
"""

import json
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

TIMEOUT = 240
_DATA = [
  '--data-train',
  'data/train.csv',
  '--data-schema',
  'schema.yaml',
  '--data-features',
  'features.yaml',
  '--hidden-layers:1',
  '8',
]


class Process:
  """A `tensorfx` command whose stdout and stderr lines are collected."""

  def __init__(self, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    self.process = subprocess.Popen(
      [sys.executable, '-m', 'tensorfx', *args],
      cwd=IRIS,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
      bufsize=1,
    )
    self.out, self.err = [], []
    self._readers = [
      threading.Thread(target=self._read, args=(stream, lines), daemon=True)
      for stream, lines in (
        (self.process.stdout, self.out),
        (self.process.stderr, self.err),
      )
    ]
    for reader in self._readers:
      reader.start()

  @staticmethod
  def _read(stream, lines):
    with stream:
      for line in stream:
        lines.append(line.rstrip('\n'))

  def wait_until(self, condition, what, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      if condition():
        return
      if self.process.poll() is not None:
        break
      time.sleep(0.2)
    raise AssertionError(f'{what}: not seen\n' + '\n'.join(self.err[-40:]))

  def wait(self, timeout=TIMEOUT):
    code = self.process.wait(timeout=timeout)
    for reader in self._readers:
      reader.join(timeout=10)
    return code

  @property
  def results(self):
    return [json.loads(line) for line in self.out if line.startswith('{')]

  def kill(self):
    if self.process.poll() is None:
      os.kill(self.process.pid, signal.SIGKILL)
      self.process.wait(timeout=30)


@pytest.fixture
def processes():
  started = []
  yield lambda *args: started.append(Process(*args)) or started[-1]
  for process in started:
    process.kill()


def _follow(output, analysis):
  return (
    'evaluate',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--follow',
    *_DATA,
    '--data-eval',
    'data/eval.csv',
    '--data-metadata',
    analysis,
  )


@pytest.mark.release
@pytest.mark.slow
def test_follow_evaluates_each_checkpoint_of_a_run_until_interrupted(
  tmp_path, iris_analysis, processes
):
  output = tmp_path / 'job'
  # No --data-eval: evaluation is the follower's job.
  trainer = processes(
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    *_DATA,
    '--data-metadata',
    iris_analysis,
    '--max-steps',
    '0',
    '--checkpoint-interval-secs',
    '2',
    '--log-interval-steps',
    '500',
  )
  follower = processes(*_follow(output, iris_analysis))
  follower.wait_until(
    lambda: len(follower.results) >= 2,
    'two checkpoints evaluated while training ran',
  )
  assert trainer.process.poll() is None, '\n'.join(trainer.err[-40:])

  # Ctrl-C: the trainer saves a checkpoint and exits 130.
  os.kill(trainer.process.pid, signal.SIGINT)
  assert trainer.wait() == 130, '\n'.join(trainer.err[-40:])
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'interrupted'
  last = job['global_step']
  assert tf.train.latest_checkpoint(str(output / 'checkpoints')).endswith(
    f'ckpt-{last}'
  )

  # The follower sees the job's end, evaluates the last checkpoint, stops.
  assert follower.wait() == 0, '\n'.join(follower.err[-40:])
  steps = [r['step'] for r in follower.results]
  assert steps == sorted(set(steps)), 'a checkpoint evaluated twice'
  assert steps[-1] == last
  for result in follower.results:
    assert 0.0 <= result['results']['eval']['accuracy'] <= 1.0
    assert result['checkpoint'] == str(
      output / 'checkpoints' / f'ckpt-{result["step"]}'
    )
    assert (output / 'evaluations' / f'ckpt-{result["step"]}.json').exists()
  state = json.loads(
    (output / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  assert state['evaluated'] == steps
  assert state['best_step'] in steps
  assert (output / 'best_model' / 'saved_model.pb').exists()

  # A restarted follower carries on from its state: nothing is left.
  again = processes(*_follow(output, iris_analysis))
  assert again.wait() == 0, '\n'.join(again.err[-40:])
  assert again.results == []
  assert (
    json.loads((output / 'summaries' / 'eval' / 'evaluated.json').read_text())[
      'evaluated'
    ]
    == steps
  )

  # The interrupted run resumes from its last checkpoint.
  resumed = processes(
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    *_DATA,
    '--data-metadata',
    iris_analysis,
    '--max-steps',
    str(last + 20),
  )
  assert resumed.wait() == 0, '\n'.join(resumed.err[-40:])
  assert any(
    re.search(rf'Training from step {last}\b', line) for line in resumed.err
  ), '\n'.join(resumed.err[-40:])


@pytest.mark.slow
def test_ctrl_c_stops_a_follower_with_130(tmp_path, iris_analysis, processes):
  follower = processes(*_follow(tmp_path / 'not-started', iris_analysis))
  follower.wait_until(
    lambda: any('Evaluator following' in line for line in follower.err),
    'the follower waiting for checkpoints',
  )
  os.kill(follower.process.pid, signal.SIGINT)
  assert follower.wait() == 130
  assert any('tensorfx evaluate: interrupted' in line for line in follower.err)


def test_follow_takes_no_checkpoint(capsys):
  from tensorfx.tools import main

  code = main(
    [
      'evaluate',
      '--module',
      'trainer',
      '--output',
      '/tmp/x',
      '--follow',
      '--checkpoint',
      '/tmp/x/checkpoints',
    ]
  )
  assert code == 1
  assert (
    '--follow evaluates every new checkpoint; it takes no '
    '--checkpoint' in capsys.readouterr().err
  )
