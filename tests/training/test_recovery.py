"""The steps a job ran again after failures: logged, and in job.yaml.

A restarted chief compares the step it resumed at with the step the run
before wrote as it trained; a lost parameter-server worker's closure that
had applied some of its steps runs them again. Each event is logged and
kept, across restarts, under job.yaml's `recovery`.
"""

import logging
import types

import yaml

from tensorfx.training._cluster import cluster
from tensorfx.training._engine import ps_loop
from tensorfx.training._run import jobinfo
from tensorfx.training._run import recovery


def _record(tmp_path):
  return jobinfo.JobRecord(
    str(tmp_path / 'job.yaml'), {'max_steps': 100}, {'task': {}}
  )


def _job(tmp_path):
  return yaml.safe_load((tmp_path / 'job.yaml').read_text())


def test_a_chief_resumed_behind_the_step_the_run_before_reached_says_so(
  tmp_path, caplog
):
  record = _record(tmp_path)
  record.write()
  # The run before wrote its step as it trained, then was killed.
  record.progress(global_step=45)
  earlier = cluster.job_record(str(tmp_path / 'job.yaml'))
  record = _record(tmp_path)
  again = recovery.Recovery(record, earlier)
  record.write(**again.carried())
  # Until it writes its own, the new run's record keeps the step reached.
  assert _job(tmp_path)['global_step'] == 45
  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    again.resumed(40)
  assert (
    'Resumed at step 40; the run before reached step 45: 5 steps run '
    'again (5 in this job)' in caplog.text
  )
  assert _job(tmp_path)['recovery'] == {
    'steps_again': 5,
    'events': [
      {
        'event': 'resumed',
        'from_step': 40,
        'reached_step': 45,
        'steps_again': 5,
      }
    ],
  }


def test_events_are_kept_across_restarts_and_a_clean_stop_adds_none(tmp_path):
  earlier = {
    'status': 'interrupted',  # SIGTERM: it saved where it stopped.
    'global_step': 60,
    'recovery': {
      'steps_again': 5,
      'events': [{'event': 'resumed', 'steps_again': 5}],
    },
  }
  record = _record(tmp_path)
  again = recovery.Recovery(record, earlier)
  # Kept from the start: a run that dies before its first write loses none.
  record.write(**again.carried())
  assert _job(tmp_path)['recovery']['steps_again'] == 5
  again.resumed(60)
  assert again.steps_again == 5
  record.write(status='completed')
  assert _job(tmp_path)['recovery']['steps_again'] == 5


def test_a_restart_before_the_first_checkpoint_runs_every_step_again(
  tmp_path, caplog
):
  record = _record(tmp_path)
  again = recovery.Recovery(record, {'status': 'failed', 'global_step': 30})
  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    again.resumed(0, restored=False)
  assert (
    'Started again at step 0, with no checkpoint to resume; the run before '
    'reached step 30: 30 steps run again' in caplog.text
  )


def test_a_completed_job_run_again_ran_nothing_again(tmp_path):
  record = _record(tmp_path)
  again = recovery.Recovery(record, {'status': 'completed', 'global_step': 100})
  again.resumed(80)  # --resume-from an earlier checkpoint: not a loss.
  assert again.fields() == {}
  assert cluster.job_record(str(tmp_path / 'absent.yaml')) is None


def test_the_step_is_written_at_most_once_a_second_and_at_checkpoints(
  tmp_path, monkeypatch
):
  now = [100.0]
  monkeypatch.setattr(recovery.time, 'monotonic', lambda: now[0])
  record = _record(tmp_path)
  record.write()
  run = types.SimpleNamespace(steps_again=0)
  callback = recovery.ProgressCallback(
    record, recovery.Recovery(record, {}), run
  )
  callback.on_step_end(10, {})
  now[0] += 0.5
  callback.on_step_end(20, {})
  assert _job(tmp_path)['global_step'] == 10
  callback.on_checkpoint(20, 'ckpt-20')
  assert _job(tmp_path)['global_step'] == 20
  now[0] += 1.0
  # A lost worker's closure ran 3 steps again since the last write.
  run.steps_again = 3
  callback.on_step_end(30, {})
  job = _job(tmp_path)
  assert job['global_step'] == 30 and job['status'] == 'running'
  assert job['recovery']['events'] == [
    {'event': 'worker lost', 'step': 30, 'steps_again': 3}
  ]


def test_a_lost_closures_steps_are_counted_and_logged(caplog):
  engine = types.SimpleNamespace(run=types.SimpleNamespace(steps_again=2))
  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    ps_loop._count_steps_again(engine, 0)
    assert not caplog.text
    ps_loop._count_steps_again(engine, 4)
  assert engine.run.steps_again == 6
  assert (
    'A worker was lost with a closure in flight: 4 of its steps ran again '
    'on another worker (6 in this run)' in caplog.text
  )


def test_slow_writes_are_spaced_to_keep_to_a_small_share_of_the_run(
  tmp_path, monkeypatch
):
  # An object store: each rewrite of job.yaml takes a tenth of a second.
  now = [0.0]
  monkeypatch.setattr(recovery.time, 'monotonic', lambda: now[0])
  record = _record(tmp_path)
  written = []

  def slow(**fields):
    now[0] += 0.1
    written.append(fields['global_step'])

  monkeypatch.setattr(record, 'progress', slow)
  callback = recovery.ProgressCallback(
    record, recovery.Recovery(record, {}), types.SimpleNamespace(steps_again=0)
  )
  for step in range(10, 310, 10):  # A log interval every half second.
    callback.on_step_end(step, {})
    now[0] += 0.5
  # 0.1 s in 2% of the time: one write in five seconds, not one a second.
  assert written == [10, 110, 210]
