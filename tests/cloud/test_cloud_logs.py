"""`tensorfx logs` and `tensorfx cancel` against local servers.

Local Vertex AI and Cloud Logging servers, through the real client
libraries.
"""

import io

import pytest

from cloud_fakes import PROJECT
from cloud_fakes import REGION
from cloud_fakes import cloud_logging  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import vertex  # noqa: F401  (a fixture: pytest finds it by name)
from tensorfx import cloud
from tensorfx import tools
from tensorfx.cloud import CloudError

JOB = f'projects/{PROJECT}/locations/{REGION}/customJobs/555'


def _entry(
  second, text, task='workerpool0-0', job='555', insert=None, severity='INFO'
):
  return {
    'logName': f'projects/{PROJECT}/logs/{task}',
    'resource': {
      'type': 'ml_job',
      'labels': {'job_id': job, 'project_id': PROJECT, 'task_name': task},
    },
    'labels': {'ml.googleapis.com/task_name': task},
    'timestamp': f'2026-11-01T12:00:{second:02d}.250Z',
    'insertId': insert or f'{task}-{second}',
    'severity': severity,
    'textPayload': text,
  }


def test_logs_prints_the_jobs_lines_in_order(vertex, cloud_logging):
  vertex.add_job(
    JOB, state='JOB_STATE_SUCCEEDED', createTime='2026-11-01T11:59:00Z'
  )
  cloud_logging.batches = [
    [
      _entry(5, '12:00:05 INFO Training from step 0 to 1000'),
      _entry(1, 'Installing the trainer package'),
      _entry(3, 'Serving as /job:ps/task:0', task='workerpool2-0'),
      _entry(9, 'a line of another job', job='999'),
      _entry(7, 'Traceback (most recent call last):', severity='ERROR'),
    ]
  ]
  out = io.StringIO()
  printed = cloud.logs(
    '555',
    PROJECT,
    REGION,
    api_endpoint=vertex.url,
    logging_endpoint=cloud_logging.url,
    out=out,
  )
  assert printed == 4
  assert out.getvalue().splitlines() == [
    '12:00:01 [workerpool0-0] INFO Installing the trainer package',
    '12:00:03 [workerpool2-0] INFO Serving as /job:ps/task:0',
    '12:00:05 [workerpool0-0] INFO 12:00:05 INFO Training from step 0 to 1000',
    '12:00:07 [workerpool0-0] ERROR Traceback (most recent call last):',
  ]
  (request,) = cloud_logging.requests
  assert request['resourceNames'] == [f'projects/{PROJECT}']
  assert 'resource.type="ml_job"' in request['filter']
  assert 'resource.labels.job_id="555"' in request['filter']
  # From the job's creation, not the client's default of the last day.
  assert 'timestamp>="2026-11-01T11:59:00Z"' in request['filter']
  assert request['orderBy'] == 'timestamp asc'


def test_logs_follow_prints_new_lines_once_until_the_job_ends(
  vertex, cloud_logging
):
  vertex.add_job(JOB, createTime='2026-11-01T12:00:00Z')
  vertex.states = [
    'JOB_STATE_RUNNING',
    'JOB_STATE_RUNNING',
    'JOB_STATE_SUCCEEDED',
  ]
  cloud_logging.batches = [
    [_entry(1, 'first')],
    [_entry(2, 'second'), _entry(1, 'first again', insert='workerpool0-0-1')],
    [_entry(4, 'last')],
  ]
  out = io.StringIO()
  waits = []
  printed = cloud.logs(
    JOB,
    follow=True,
    api_endpoint=vertex.url,
    logging_endpoint=cloud_logging.url,
    out=out,
    poll_interval=7,
    sleep=waits.append,
  )
  texts = [line.split(' INFO ', 1)[1] for line in out.getvalue().splitlines()]
  assert texts == ['first', 'second', 'last'] and printed == 3
  assert waits == [7, 7]
  # Each read starts a little before the newest line seen (late entries).
  assert 'timestamp>="2026-11-01T12:00:' in cloud_logging.requests[-1]['filter']


def test_logs_command_line(vertex, cloud_logging, capsys):
  vertex.add_job(
    JOB, state='JOB_STATE_FAILED', createTime='2026-11-01T12:00:00Z'
  )
  cloud_logging.batches = [
    [_entry(2, 'ValueError: bad input', severity='ERROR')]
  ]
  code = tools.main(
    [
      'logs',
      '555',
      '--project',
      PROJECT,
      '--region',
      REGION,
      '--api-endpoint',
      vertex.url,
      '--logging-endpoint',
      cloud_logging.url,
    ]
  )
  assert code == 0
  assert capsys.readouterr().out == (
    '12:00:02 [workerpool0-0] ERROR ValueError: bad input\n'
  )


def test_logs_of_a_job_id_need_project_and_region(capsys):
  assert tools.main(['logs', '555']) == 1
  assert 'JOB: a job id needs --project and --region' in capsys.readouterr().err


def test_cancel_sends_cancel_and_waits_for_cancelled(vertex):
  vertex.add_job(JOB, state='JOB_STATE_RUNNING')
  vertex.states = ['JOB_STATE_RUNNING']
  out = io.StringIO()
  job = cloud.cancel(
    '555',
    PROJECT,
    REGION,
    api_endpoint=vertex.url,
    wait=True,
    poll_interval=0,
    out=out,
  )
  assert ('POST', f'/v1/{JOB}:cancel', {}) in vertex.requests
  assert job['state'] == 'JOB_STATE_CANCELLED'
  lines = out.getvalue().splitlines()
  assert lines[0] == f'Cancelling {JOB}'
  assert lines[-1].endswith('customJobs/555: cancelled')


def test_cancel_a_tuning_job_from_the_command_line(vertex, capsys):
  name = f'projects/{PROJECT}/locations/{REGION}/hyperparameterTuningJobs/77'
  vertex.add_job(name)
  vertex.states = ['JOB_STATE_RUNNING']
  assert tools.main(['cancel', name, '--api-endpoint', vertex.url]) == 0
  assert ('POST', f'/v1/{name}:cancel', {}) in vertex.requests
  assert capsys.readouterr().out.startswith(f'Cancelling {name}\n')


def test_cancelling_an_ended_job_is_an_error(vertex, capsys):
  vertex.add_job(JOB)
  vertex.states = ['JOB_STATE_SUCCEEDED']
  with pytest.raises(CloudError, match='has already ended \\(succeeded\\)'):
    cloud.cancel(JOB, api_endpoint=vertex.url)
  assert tools.main(['cancel', JOB, '--api-endpoint', vertex.url]) == 1
  assert 'nothing to cancel' in capsys.readouterr().err
  assert not any(path.endswith(':cancel') for _, path, _ in vertex.requests)
