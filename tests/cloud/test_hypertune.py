"""Tuning metrics in the format Vertex AI reads, and the AIP_* directories."""

import json
import math
import os

import pytest

from tensorfx import cloud

# What cloudml-hypertune writes per measurement (its keys, sorted).
HYPERTUNE_KEYS = ['checkpoint_path', 'global_step', 'timestamp', 'trial']


@pytest.fixture
def metrics_file(tmp_path, monkeypatch):
  path = tmp_path / 'hypertune' / 'output.metrics'
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_FILE', str(path))
  monkeypatch.delenv('CLOUD_ML_TRIAL_ID', raising=False)
  monkeypatch.delenv('CLOUD_ML_HP_METRIC_TAG', raising=False)
  return path


def _lines(path):
  return path.read_text().splitlines()


def test_trial_writes_the_hypertune_line(metrics_file, monkeypatch):
  monkeypatch.setenv('CLOUD_ML_TRIAL_ID', '7')
  written = cloud.report_metric(
    'accuracy', 0.875, step=200, checkpoint_path='gs://b/ckpt-200'
  )
  assert written == str(metrics_file)
  (line,) = _lines(metrics_file)
  entry = json.loads(line)
  assert sorted(entry) == sorted(HYPERTUNE_KEYS + ['accuracy'])
  assert {k: v for k, v in entry.items() if k != 'timestamp'} == {
    'accuracy': '0.875',
    'global_step': '200',
    'trial': '7',
    'checkpoint_path': 'gs://b/ckpt-200',
  }
  assert isinstance(entry['timestamp'], float)
  # Keys sorted, one JSON object per line, as the tuning service parses.
  assert line == json.dumps(entry, sort_keys=True)


def test_outside_a_trial_nothing_is_written_unless_forced(metrics_file):
  assert cloud.report_metric('accuracy', 0.5, 10) is None
  assert cloud.report_metrics({'accuracy': 0.5}, 10) == []
  assert not metrics_file.exists()
  assert cloud.report_metric('accuracy', 0.5, 10, force=True)
  entry = json.loads(_lines(metrics_file)[0])
  assert entry['trial'] == '0'
  assert entry['global_step'] == '10'


def test_default_tag_step_and_file(tmp_path, monkeypatch):
  monkeypatch.delenv('CLOUD_ML_HP_METRIC_FILE', raising=False)
  environ = {
    'CLOUD_ML_TRIAL_ID': '2',
    'CLOUD_ML_HP_METRIC_FILE': str(tmp_path / 'm'),
  }
  cloud.report_metric(None, 3, environ=environ)
  entry = json.loads(_lines(tmp_path / 'm')[0])
  assert entry['training/hptuning/metric'] == '3.0'
  assert entry['global_step'] == '0'
  assert cloud.report_metric('x', 1, environ={}) is None  # Not a trial.


def test_measurements_append_and_keep_the_last_hundred(
  metrics_file, monkeypatch
):
  monkeypatch.setenv('CLOUD_ML_TRIAL_ID', '1')
  for step in range(1, 106):
    cloud.report_metric('loss', 1.0 / step, step)
  lines = _lines(metrics_file)
  assert len(lines) == 100
  steps = [int(json.loads(line)['global_step']) for line in lines]
  assert steps == list(range(6, 106))
  assert [f for f in os.listdir(metrics_file.parent)] == ['output.metrics']


def test_report_metrics_reports_the_study_metric(metrics_file, monkeypatch):
  monkeypatch.setenv('CLOUD_ML_TRIAL_ID', '4')
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_TAG', 'accuracy')
  assert cloud.report_metrics({'loss': 0.3, 'accuracy': 0.9}, 50) == [
    'accuracy'
  ]
  monkeypatch.delenv('CLOUD_ML_HP_METRIC_TAG')
  assert cloud.report_metrics({'loss': 0.3, 'accuracy': 0.9}, 60) == [
    'accuracy',
    'loss',
  ]
  tags = [
    sorted(set(json.loads(line)) - set(HYPERTUNE_KEYS))[0]
    for line in _lines(metrics_file)
  ]
  assert tags == ['accuracy', 'accuracy', 'loss']


def test_non_finite_values_are_not_reported(metrics_file, monkeypatch, caplog):
  monkeypatch.setenv('CLOUD_ML_TRIAL_ID', '1')
  assert cloud.report_metric('loss', math.nan, 5) is None
  assert not metrics_file.exists()
  assert 'Not reporting tuning metric loss=nan' in caplog.text


def test_trial_id():
  assert cloud.trial_id({'CLOUD_ML_TRIAL_ID': '12'}) == '12'
  assert cloud.trial_id({}) is None


def test_output_dirs_default_layout(tmp_path):
  assert cloud.output_dirs(tmp_path, environ={}) == {
    'model': str(tmp_path / 'model'),
    'checkpoints': str(tmp_path / 'checkpoints'),
    'summaries': str(tmp_path / 'summaries'),
  }
  assert cloud.output_dirs('gs://b/job/', environ={}) == {
    'model': 'gs://b/job/model',
    'checkpoints': 'gs://b/job/checkpoints',
    'summaries': 'gs://b/job/summaries',
  }


def test_output_dirs_honour_vertex_variables(monkeypatch):
  # What Vertex AI sets for trial 3 of a tuning job with a base output dir.
  monkeypatch.setenv('AIP_MODEL_DIR', 'gs://b/job/3/model/')
  monkeypatch.setenv('AIP_CHECKPOINT_DIR', 'gs://b/job/3/checkpoints/')
  monkeypatch.setenv('AIP_TENSORBOARD_LOG_DIR', 'gs://b/job/3/logs/')
  assert cloud.output_dirs('gs://b/job') == {
    'model': 'gs://b/job/3/model',
    'checkpoints': 'gs://b/job/3/checkpoints',
    'summaries': 'gs://b/job/3/logs',
  }
  monkeypatch.delenv('AIP_CHECKPOINT_DIR')
  monkeypatch.setenv('AIP_TENSORBOARD_LOG_DIR', '')
  dirs = cloud.output_dirs('gs://b/job')
  assert dirs['checkpoints'] == 'gs://b/job/checkpoints'
  assert dirs['summaries'] == 'gs://b/job/summaries'
