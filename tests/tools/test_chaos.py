"""`tensorfx chaos`: the fault drill a user runs on their own job.

The drill runs the iris sample's trainer under a kill plan, restarts what
it kills as a cloud platform would, and reports. The release tier runs it
on a single node (preempted, killed, its newest checkpoint truncated, then
compared with its uninterrupted twin bit for bit), on a two-worker
MultiWorkerMirrored cluster killed as a whole, and on a parameter-server
cluster with an evaluator where a task of each kind is killed. The plan,
the record's verdicts and the checkpoint comparison are specified here
without processes.
"""

import json
import os
import random
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import IRIS
from conftest import IRIS_CLASSES
from conftest import IRIS_SMALL
from conftest import iris_labels
from tensorfx._errors import ConfigurationError
from tensorfx.tools import _chaos
from tensorfx.tools import _drill
from tensorfx.tools import _killplan

_PS = {'chief': 1, 'worker': 2, 'ps': 1, 'evaluator': 1}

# The plan.


def test_a_plan_names_each_kill_by_task_step_and_signal():
  plan = _killplan.parse(
    ['ps-0@300', 'chief@120:TERM', 'evaluator@200:KILL', 'job@400'],
    _PS,
    max_steps=None,
  )
  assert [str(k) for k in plan] == [
    'chief SIGTERM at step 120',
    'evaluator SIGKILL at step 200',
    'ps-0 SIGKILL at step 300',
    'job SIGKILL at step 400',
  ]


def test_random_steps_and_roles_are_drawn_from_the_seed_inside_the_run():
  def draw(seed):
    return [
      (k.role, k.step, k.signum)
      for k in _killplan.parse(
        ['worker', 'chief@random'], _PS, 1000, random_kills=6, seed=seed
      )
    ]

  assert draw(4) == draw(4)
  assert draw(4) != draw(5)
  kills = draw(4)
  assert len(kills) == 8
  assert [s for _, s, _ in kills] == sorted(s for _, s, _ in kills)
  assert all(100 <= step <= 900 for _, step, _ in kills)
  assert {r for r, _, _ in kills} <= {
    'chief',
    'worker-0',
    'worker-1',
    'ps-0',
    'evaluator',
  }


@pytest.mark.parametrize(
  'specs, counts, message',
  [
    (['chief@x'], {'chief': 1}, r'--kill takes ROLE\[@STEP\]\[:SIGNAL\]'),
    (['chief:STOP'], {'chief': 1}, r"Received: 'chief:STOP'"),
    (
      ['worker'],
      {'chief': 1},
      r"no 'worker'; its tasks are chief \(or job, .*under --cluster",
    ),
    (['ps-3@5'], _PS, r'its tasks are chief, worker-0, worker-1, ps-0, eval'),
    (['chief'], {'chief': 1}, r"below the trainer's --max-steps; give it"),
    (
      ['chief@120:TERM', 'chief@120'],
      {'chief': 1},
      r'chief SIGTERM at step 120 and chief SIGKILL at step 120 kill chief '
      'at the same step',
    ),
  ],
)
def test_a_wrong_kill_is_refused_naming_it(specs, counts, message):
  with pytest.raises(ConfigurationError, match=message):
    _killplan.parse(specs, counts, max_steps=None)


def test_the_trainer_flags_the_drill_reads():
  argv = ['--max-steps', '50', '--seed', '3', '--max-steps=600']
  assert _killplan.max_steps_of(argv) == 600
  assert _killplan.max_steps_of(['--epochs', '3']) is None
  assert _killplan.flag_given(argv, '--seed')
  assert not _killplan.flag_given(['--seed-file', 'x'], '--seed')


@pytest.mark.parametrize(
  'flags, message',
  [
    (['--kill', 'chief@5', '--twin'], "needs the trainer's --seed"),
    (
      ['--cluster', 'ps=1,workers=1', '--kill', 'chief@5', '--twin'],
      'parameter servers do not promise',
    ),
    (
      [
        '--truncate-checkpoint',
        '--kill',
        'evaluator@5',
        '--cluster',
        'evaluator=1',
      ],
      'add a kill that',
    ),
    ([], 'the drill has nothing to do'),
    (
      ['--kill', 'chief@5', '--log-level', 'WARNING'],
      '--log-level WARNING hides the progress lines the drill reads',
    ),
  ],
)
def test_what_the_drill_cannot_do_is_one_line(tmp_path, flags, message):
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'chaos',
      '--module',
      'trainer',
      '--output',
      str(tmp_path / 'job'),
      *flags,
      '--max-steps',
      '20',
    ],
    cwd=IRIS,
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  # An argument error: the usage line, then one line that says why.
  assert result.returncode == 2, result.stderr
  usage, error = result.stderr.strip().splitlines()
  assert usage.startswith('usage: tensorfx chaos')
  assert error.startswith('tensorfx chaos: error: ') and message in error
  assert 'Traceback' not in result.stderr
  assert not (tmp_path / 'job').exists()


# The record's verdicts.


def _record(**changes):
  record = {
    'exit_code': 0,
    'wall_secs': 30.0,
    'status': 'completed',
    'global_step': 60,
    'kills': [
      {
        'role': 'chief',
        'tasks': 'chief',
        'signal': 'SIGKILL',
        'planned_step': 41,
        'step': 41,
        'seconds_lost': 5.0,
        'resumed_step': 40,
        'steps_lost': 1,
      }
    ],
    'not_done': [],
    'job_restarts': 1,
    'task_restarts': {},
    'seconds_lost': 5.0,
    'steps_again': 1,
    'recovery': [{'event': 'resumed', 'steps_again': 1}],
    'truncated': None,
    'resumed_from': ['/j/checkpoints/ckpt-40'],
    'evaluations': [['eval', 20], ['eval', 40], ['eval', 60]],
    'evaluations_repeated': [],
    'evaluator_record': None,
    'truncate_asked': False,
  }
  record.update(changes)
  return record


def test_a_job_that_completed_and_kept_its_promises_has_no_problem():
  record = _record()
  assert _chaos.problems(record) == []
  record['problems'] = []
  text = _chaos.report(record, '/j/chaos.json')
  assert 'completed at step 60' in text
  assert 'chief: SIGKILL at step 41, resumed at step 40 (1 step lost)' in text
  assert 'exactly once: 3, steps 20 to 60' in text
  assert 'PROBLEM' not in text


@pytest.mark.parametrize(
  'changes, problem',
  [
    ({'exit_code': 1, 'status': 'failed'}, 'the job did not complete'),
    ({'not_done': ['ps-0 SIGKILL at step 900']}, 'kills never made'),
    (
      {'evaluator_record': [0, 100, 200, 100]},
      'the evaluator evaluated more than once: step 100',
    ),
    (
      # Resumed from an earlier checkpoint, but before the truncation.
      {'truncated': {'step': 50, 'files': [], 'resumes_before': 1}},
      'ckpt-50 was not set aside',
    ),
    ({'truncate_asked': True}, 'no checkpoint was truncated'),
    (
      {
        'twin': {
          'exit_code': 0,
          'checkpoint': '/j/checkpoints/ckpt-60',
          'twin_checkpoint': '/t/checkpoints/ckpt-60',
          'variables': 9,
          'differ': ['model/w'],
        }
      },
      "differs from the twin's in 1 of 9 variables: model/w",
    ),
  ],
)
def test_a_broken_promise_is_a_problem(changes, problem):
  found = _chaos.problems(_record(**changes))
  assert len(found) == 1 and problem in found[0], found


def test_an_evaluator_that_went_back_to_an_earlier_checkpoint_is_no_problem():
  # After a truncated checkpoint a lower step can come later: not twice.
  assert _chaos.problems(_record(evaluator_record=[0, 300, 200, 400])) == []


def test_a_checkpoint_differing_in_one_bit_is_found(tmp_path):
  def save(name, value):
    weights = tf.Variable(np.array([1.0, 2.0], np.float32))
    weights.assign(value)
    checkpoint = tf.train.Checkpoint(weights=weights, step=tf.Variable(3))
    return checkpoint.write(str(tmp_path / name))

  same = save('a', [1.0, 2.0])
  # Saved twice: the save count differs, and is not compared.
  tf.train.Checkpoint(weights=tf.Variable([1.0, 2.0])).save(
    str(tmp_path / 'twice')
  )
  names, differ = _drill.compare_checkpoints(same, save('b', [1.0, 2.0]))
  assert differ == [] and len(names) == 2
  bits = np.array([1.0, 2.0], np.float32).view(np.uint32)
  bits[1] ^= 1
  _, differ = _drill.compare_checkpoints(same, save('c', bits.view(np.float32)))
  assert differ == ['weights/.ATTRIBUTES/VARIABLE_VALUE']


def test_each_kill_of_one_point_fires_once_however_often_restarted(tmp_path):
  # What the drill's chief kills rely on: two steps of one point, each
  # killing one process, then none.
  code = (
    'from tensorfx import _faults\n'
    'import sys\n'
    'for step in range(1, 10):\n'
    "  _faults.point('train.step', step)\n"
  )
  env = dict(
    os.environ,
    TENSORFX_FAULT='train.step:3,train.step:6:TERM',
    TENSORFX_FAULT_ONCE=str(tmp_path),
  )
  codes = [
    subprocess.run(
      [sys.executable, '-c', code], env=env, timeout=60, check=False
    ).returncode
    for _ in range(3)
  ]
  assert codes == [-signal.SIGKILL, -signal.SIGTERM, 0]
  assert sorted(os.listdir(tmp_path)) == ['train.step:3', 'train.step:6']


# Drills on real processes.


def _drill_command(output, *flags):
  return [
    sys.executable,
    '-m',
    'tensorfx',
    'chaos',
    '--module',
    'trainer',
    '--output',
    str(output),
    *flags,
    '--data-train',
    'data/train.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
  ]


def _run_drill(command, analysis, timeout=600):
  result = subprocess.run(
    [*command, '--data-metadata', analysis],
    cwd=IRIS,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
    capture_output=True,
    text=True,
    timeout=timeout,
    check=False,
  )
  text = result.stdout + result.stderr
  return result.returncode, text


def _record_of(output):
  return json.loads((output / 'chaos.json').read_text())


@pytest.mark.slow
@pytest.mark.chaos
@pytest.mark.release
def test_a_single_node_job_preempted_killed_and_truncated_ends_as_its_twin(
  tmp_path, iris_analysis
):
  # Seven epochs of shuffled data without the cache (the data ends the
  # run), stopped at seeded-random steps between checkpoints.
  rng = random.Random(2)
  preempt = rng.choice([s for s in range(11, 30) if s % 10])
  kill = rng.choice([s for s in range(preempt + 12, 45) if s % 10])
  output = tmp_path / 'job'
  code, text = _run_drill(
    _drill_command(
      output,
      '--kill',
      f'chief@{preempt}:TERM',
      '--kill',
      f'chief@{kill}',
      '--truncate-checkpoint',
      '--twin',
      *IRIS_SMALL,
      '--log-interval-steps',
      '5',
      '--cache',
      'none',
      '--epochs',
      '7',
      '--max-steps',
      '0',
    ),
    iris_analysis,
  )
  assert code == 0, text[-4000:]
  record = _record_of(output)
  assert [(k['signal'], k['step']) for k in record['kills']] == [
    ('SIGTERM', preempt),
    ('SIGKILL', kill),
  ]
  assert record['job_restarts'] == 2
  # The preempted run saved at its step; that checkpoint was then cut in
  # half, set aside, and the one before it resumed.
  assert record['truncated']['step'] == preempt
  assert record['kills'][0]['resumed_step'] == preempt // 10 * 10
  assert record['kills'][1]['resumed_step'] == kill // 10 * 10
  assert record['steps_again'] >= preempt % 10
  twin = record['twin']
  # Seven epochs, not seven more after each resume: the same last step.
  assert twin['differ'] == [] and twin['variables'] > 4
  assert _chaos._step_of(twin['checkpoint']) == _chaos._step_of(
    twin['twin_checkpoint']
  )
  assert 'twin         bit-identical' in text
  assert f'ckpt-{preempt} truncated; resumed from ckpt-' in text


@pytest.mark.slow
@pytest.mark.chaos
@pytest.mark.cluster
@pytest.mark.release
def test_a_multi_worker_mirrored_job_killed_as_a_whole_ends_as_its_twin(
  tmp_path, iris_analysis
):
  output = tmp_path / 'job'
  code, text = _run_drill(
    _drill_command(
      output,
      '--cluster',
      'workers=1',
      '--kill',
      'job:TERM',
      '--kill',
      'job',
      '--drill-seed',
      '3',
      '--twin',
      *IRIS_SMALL,
      '--log-interval-steps',
      '5',
      '--max-steps',
      '60',
    ),
    iris_analysis,
  )
  assert code == 0, text[-4000:]
  record = _record_of(output)
  assert [k['tasks'] for k in record['kills']] == ['chief, worker-0'] * 2
  assert record['job_restarts'] == 2
  assert record['twin']['differ'] == []
  # The worker resumed the chief's checkpoint, not its own scratch copy.
  assert any(
    line.startswith('[worker-0')
    and f'Resumed from {output}/checkpoints/' in line
    for line in text.splitlines()
  ), text[-4000:]


@pytest.mark.slow
@pytest.mark.chaos
@pytest.mark.cluster
@pytest.mark.release
def test_a_parameter_server_job_survives_a_kill_of_each_kind_of_task(
  tmp_path, iris_analysis
):
  # The launcher starts each killed task again (as Vertex AI restarts a
  # replica); the chief resumes after its own kill and the server's.
  output = tmp_path / 'job'
  code, text = _run_drill(
    _drill_command(
      output,
      '--cluster',
      'ps=1,workers=2,evaluator=1',
      '--kill',
      'worker@150',
      '--kill',
      'evaluator@250:TERM',
      '--kill',
      'ps@350',
      '--kill',
      'chief@450',
      '--truncate-checkpoint',
      '--data-eval',
      'data/eval.csv',
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
      '--seed',
      '7',
      '--checkpoint-interval-steps',
      '100',
      '--log-interval-steps',
      '10',
      '--max-steps',
      '800',
      '--cluster-timeout-secs',
      '120',
    ),
    iris_analysis,
  )
  assert code == 0, text[-4000:]
  record = _record_of(output)
  assert [k['tasks'] for k in record['kills']] == [
    'worker-1',
    'evaluator-0',
    'ps-0',
    'chief',
  ]
  assert record['kills'][-1]['step'] == 450  # The chief's, exact.
  assert {'chief', 'worker-1', 'evaluator-0', 'ps-0'} <= set(
    record['task_restarts']
  )
  assert record['job_restarts'] == 0
  # Steps run at least once: a closure lost with its worker runs again.
  assert 800 <= record['global_step'] < 820
  # The server's kill cost the truncated checkpoint's interval and the one
  # before; the chief's, at most one interval.
  kills = {k['tasks']: k for k in record['kills']}
  assert kills['ps-0']['steps_lost'] <= 200
  assert kills['chief']['steps_lost'] <= 100
  # The restarted chief counted what it ran again, from the step the run
  # before had written (at most a second of training short of the kill).
  resumed = [e for e in record['recovery'] if e['event'] == 'resumed']
  ps = kills['ps-0']
  assert resumed[0]['from_step'] == ps['resumed_step']
  assert ps['resumed_step'] + 100 <= resumed[0]['reached_step'] <= ps['step']
  for event in resumed[1:]:
    assert event['from_step'] == kills['chief']['resumed_step']
    assert event['from_step'] < event['reached_step'] <= 450
  assert record['evaluator_record'] == sorted(set(record['evaluator_record']))
  assert record['evaluations_repeated'] == []
  for name in ('model', 'best_model'):
    assert iris_labels(output / name) == IRIS_CLASSES, name
