"""Cloud calls wait out transient failures: throttling, 5xx, lost connections.

Against the storage emulator and the Vertex AI and Cloud Logging fakes,
through the real client libraries, with failures injected into their next
answers (`cloud_fakes.inject_fault`).
"""

import io

import pytest

from cloud_fakes import BUCKET
from cloud_fakes import PROJECT
from cloud_fakes import REGION
from cloud_fakes import _emulator_server  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import cloud_logging  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import emulator  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import emulator_faults  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import fast_retries  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import vertex  # noqa: F401  (a fixture: pytest finds it by name)
from conftest import IRIS
from tensorfx import cloud
from tensorfx.cloud import CloudError
from tensorfx.cloud import _retry

JOB = f'projects/{PROJECT}/locations/{REGION}/customJobs/555'
# One failure of each kind.
FAULTS = [503, 429, 'reset', 500]


def test_staging_survives_throttling_errors_and_resets(
  emulator, emulator_faults, fast_retries, tmp_path
):
  package = tmp_path / 'trainer-0.1.tar.gz'
  package.write_bytes(b'the package')
  emulator_faults.extend(FAULTS)
  uri = cloud.upload(package, f'gs://{BUCKET}/staging/', emulator)
  assert not emulator_faults  # Every fault was met, and waited out.
  emulator_faults.extend(FAULTS)
  assert cloud.list_uris(f'gs://{BUCKET}/staging', emulator) == [uri]
  emulator_faults.extend(FAULTS)
  assert cloud.exists(uri, emulator)
  emulator_faults.extend(FAULTS)
  back = cloud.download(uri, tmp_path / 'back.tar.gz', emulator)
  with open(back, 'rb') as f:
    assert f.read() == b'the package'


def test_submit_and_follow_survive_failures_of_every_call(
  emulator, emulator_faults, vertex, fast_retries
):
  spec = cloud.job_spec(
    project=PROJECT,
    region=REGION,
    job_name='retry_1',
    staging_bucket=f'gs://{BUCKET}',
    module_name='iris.trainer',
    environ={},
  )
  # The bucket check and the upload, then the create and every read.
  emulator_faults.extend([503, 'reset'] * 2)
  vertex.faults.extend(FAULTS * 2)
  out = io.StringIO()
  job = cloud.submit(
    spec,
    package_path=IRIS,
    api_endpoint=vertex.url,
    follow=True,
    poll_interval=0.01,
    out=out,
  )
  assert job['state'] == 'JOB_STATE_SUCCEEDED'
  assert not emulator_faults and not vertex.faults
  # One job created, whatever the failures.
  assert len(vertex.jobs) == 1
  assert 'customJobs/1000: succeeded' in out.getvalue()


def test_a_followed_job_outlasts_an_api_outage(vertex, fast_retries):
  # Minutes of outage are waited out (here in milliseconds of backoff).
  assert _retry.POLL_DEADLINE >= 5 * 60
  vertex.add_job(JOB, state='JOB_STATE_RUNNING')
  vertex.faults.extend([503] * 10 + ['reset'] * 5 + [429] * 5)
  job = cloud.wait(
    JOB, api_endpoint=vertex.url, poll_interval=0.01, out=io.StringIO()
  )
  assert job['state'] == 'JOB_STATE_SUCCEEDED'
  assert not vertex.faults


def test_an_outage_past_the_deadline_is_a_clean_error(
  vertex, fast_retries, monkeypatch
):
  monkeypatch.setattr(_retry, 'POLL_DEADLINE', 0.3)
  vertex.add_job(JOB, state='JOB_STATE_RUNNING')
  vertex.faults.extend([503] * 1000)
  with pytest.raises(
    CloudError,
    match=r'Vertex AI: reading .*customJobs/555 '
    r'failed, still after retrying for 0 s: 503 .*injected',
  ):
    cloud.wait(
      JOB, api_endpoint=vertex.url, poll_interval=0.01, out=io.StringIO()
    )


def test_cancel_and_log_reads_survive_failures(
  vertex, cloud_logging, fast_retries
):
  vertex.add_job(
    JOB, state='JOB_STATE_RUNNING', createTime='2026-11-01T11:59:00Z'
  )
  vertex.faults.extend(FAULTS * 2)
  cloud.cancel(JOB, api_endpoint=vertex.url, out=io.StringIO())
  assert not vertex.faults
  assert any(path.endswith(':cancel') for _, path, _ in vertex.posts())
  cloud_logging.batches = [
    [
      {
        'logName': f'projects/{PROJECT}/logs/workerpool0-0',
        'resource': {'type': 'ml_job', 'labels': {'job_id': '555'}},
        'timestamp': '2026-11-01T12:00:01.000Z',
        'insertId': '1',
        'severity': 'INFO',
        'textPayload': 'Training from step 0',
      }
    ]
  ]
  cloud_logging.faults.extend(FAULTS)
  out = io.StringIO()
  assert (
    cloud.logs(
      JOB, api_endpoint=vertex.url, logging_endpoint=cloud_logging.url, out=out
    )
    == 1
  )
  assert 'Training from step 0' in out.getvalue()


def test_a_permanent_error_is_not_retried(vertex, fast_retries):
  with pytest.raises(CloudError, match='404'):
    cloud.status(
      f'projects/{PROJECT}/locations/{REGION}/customJobs/9',
      follow=False,
      api_endpoint=vertex.url,
      out=io.StringIO(),
    )
  assert len(vertex.requests) == 1
