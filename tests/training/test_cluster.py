"""Cluster plumbing: the job's end as tasks see it, the chief's restart."""

import os
import sys
import time

import numpy as np
import pytest
import yaml

from tensorfx import TrainingError
from tensorfx.training._cluster import cluster as _cluster
from tensorfx.training._run import jobinfo


def _job(output):
  return jobinfo.JobRecord(os.path.join(output, 'job.yaml'), {}, {})


def test_a_job_has_ended_when_its_chief_records_completion(tmp_path):
  since = time.time() - 1
  assert not _cluster.job_finished(str(tmp_path), since)
  job = _job(str(tmp_path))
  job.write()
  assert not _cluster.job_finished(str(tmp_path), since)
  job.write(status='completed')
  assert _cluster.job_finished(str(tmp_path), since)
  # An end recorded before this task started is an earlier run's.
  assert not _cluster.job_finished(str(tmp_path), time.time() + 5)


def test_numpy_values_do_not_keep_a_finished_job_from_its_record(tmp_path):
  # A validation's np.mean is a numpy.float64, which safe_dump refuses.
  since = time.time() - 1
  _job(str(tmp_path)).write(
    status='completed',
    metrics={'loss': np.float64(0.25), 'counts': np.array([1, 2])},
  )
  assert _cluster.job_finished(str(tmp_path), since)
  with open(tmp_path / 'job.yaml') as f:
    assert yaml.safe_load(f)['metrics'] == {'loss': 0.25, 'counts': [1, 2]}


def test_a_failed_chief_is_waited_for_until_the_record_settles(tmp_path):
  since = time.time() - 1
  _job(str(tmp_path)).write(status='failed')
  assert not _cluster.job_finished(str(tmp_path), since, settle_secs=300)
  assert not _cluster.job_finished(str(tmp_path), since)
  assert _cluster.job_finished(str(tmp_path), since, settle_secs=0)


def test_polling_parses_the_record_only_when_it_changes(tmp_path, monkeypatch):
  parsed = []
  load = yaml.load
  monkeypatch.setattr(
    yaml, 'load', lambda text, Loader: parsed.append(1) or load(text, Loader)
  )
  since = time.time() - 1
  job = _job(str(tmp_path))
  job.write()
  for _ in range(5):
    assert not _cluster.job_finished(str(tmp_path), since)
  assert len(parsed) == 1
  job.write(status='completed')
  assert _cluster.job_finished(str(tmp_path), since)
  assert len(parsed) == 2


def test_a_damaged_record_is_read_as_not_ended(tmp_path):
  (tmp_path / 'job.yaml').write_text('status: [completed\n')
  assert not _cluster.job_finished(str(tmp_path), 0)
  (tmp_path / 'job.yaml').write_text('- completed\n')
  assert not _cluster.job_finished(str(tmp_path), 0)


def test_a_script_is_replaced_by_the_same_command(monkeypatch):
  calls = []
  monkeypatch.setattr(os, 'execv', lambda *a: calls.append(a))
  monkeypatch.setattr(
    sys, 'orig_argv', ['python3', '-m', 'tensorfx', 'train', '--output', 'o']
  )
  monkeypatch.delitem(sys.modules, 'ipykernel', raising=False)
  monkeypatch.delattr(sys, 'ps1', raising=False)
  _cluster.restart_in_place()
  assert calls == [
    (
      sys.executable,
      [sys.executable, '-m', 'tensorfx', 'train', '--output', 'o'],
    )
  ]


def test_an_interactive_session_is_told_to_run_again(monkeypatch):
  monkeypatch.setattr(os, 'execv', lambda *a: pytest.fail('replaced'))
  monkeypatch.setitem(sys.modules, 'ipykernel', object())
  with pytest.raises(TrainingError, match='Run the same training again'):
    _cluster.restart_in_place()
