"""Chaos: a cluster trains while its tasks are killed, and finishes.

A parameter-server cluster with an evaluator finishes as if nothing had
happened.

The short version of benchmarks/chaos.py (which runs ~10 minutes of
random kills): one SIGKILL of each kind of task (a worker, the evaluator,
the parameter server, the chief) a few dozen steps of training apart, the
launcher restarting each (`tensorfx train --restart`). The job must end
at its target step with a model (and a best model) that predicts, the
evaluator's records must not repeat a step, and each chief or parameter
server kill may cost at most one checkpoint interval of steps.
"""

import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import chaos

pytestmark = [
  pytest.mark.chaos,
  pytest.mark.cluster,
  pytest.mark.slow,
  pytest.mark.release,
]


def test_a_killed_task_of_each_kind_is_survived(tmp_path, iris_analysis):
  # Kills by steps, not seconds, so a fast machine cannot finish the job
  # before the last kill: each comes 30 to 60 steps of training after the
  # previous one (after the chief's resume, for chief and ps kills), so all
  # four land by step ~450 even when each resume loses a checkpoint
  # interval (100), well before the 800th.
  run = chaos.ChaosRun(
    tmp_path / 'job',
    iris_analysis,
    max_steps=800,
    checkpoint_interval=100,
    kill_every_steps=(30, 60),
    kinds=chaos.KINDS,
    kills=len(chaos.KINDS),
    seed=3,
  )
  report = run.run(timeout=420)
  text = '\n'.join(run.lines[-60:])
  assert chaos.problems(report) == [], text
  assert report['kills'] == {
    'worker': 1,
    'evaluator': 1,
    'ps': 1,
    'chief': 1,
  }, text
  # Every kill was followed by a restart (the chief twice: once for its own
  # kill, once after failing over the lost parameter server).
  assert report['restarts'] >= 5, text
  assert len(report['steps_lost']) == 2
