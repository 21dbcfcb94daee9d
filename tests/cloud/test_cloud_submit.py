"""`tensorfx submit` and `tensorfx status` end to end, without network.

Staging goes to a real GCS-API server (gcp-storage-emulator); the job goes
through the real Vertex AI client (REST transport) to a local server that
answers like the service and records every request body.
"""

import io
import json
import textwrap

import pytest

from cloud_fakes import BUCKET
from cloud_fakes import PROJECT
from cloud_fakes import REGION
from cloud_fakes import _emulator_server  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import as_message
from cloud_fakes import emulator  # noqa: F401  (a fixture: pytest finds it by name)
from cloud_fakes import vertex  # noqa: F401  (a fixture: pytest finds it by name)
from conftest import IRIS
from tensorfx import cloud
from tensorfx.tools import main

JOB_DIR = f'gs://{BUCKET}/iris/1'
SDIST = f'gs://{BUCKET}/staging/iris_1/packages/iris-0.0.0.tar.gz'
TENSORFX = f'gs://{BUCKET}/tensorfx/tensorfx_sdk-0.1.0.tar.gz'


@pytest.fixture(autouse=True)
def _no_ambient_project(monkeypatch):
  monkeypatch.delenv('GOOGLE_CLOUD_PROJECT', raising=False)
  monkeypatch.delenv('CLOUDSDK_CORE_PROJECT', raising=False)


def _submit(vertex_url, *extra, trainer_args=('--max-steps', '100')):
  return main(
    [
      'submit',
      '--job-name',
      'iris_1',
      '--project',
      PROJECT,
      '--region',
      REGION,
      '--staging-bucket',
      f'gs://{BUCKET}/staging',
      '--package-path',
      IRIS,
      '--module-name',
      'iris.trainer',
      '--job-dir',
      JOB_DIR,
      '--api-endpoint',
      vertex_url,
      '--poll-interval',
      '0.01',
      *extra,
      '--',
      *trainer_args,
    ]
  )


def _custom_job(body):
  from google.cloud import aiplatform_v1

  return as_message(aiplatform_v1.CustomJob, body)


def test_submit_stages_the_package_and_creates_the_job(
  emulator, vertex, capsys
):
  code = _submit(
    vertex.url,
    '--packages',
    TENSORFX,
    '--worker-count',
    '2',
    '--worker-machine-type',
    'complex_model_m',
    '--parameter-server-count',
    '1',
    '--evaluator-count',
    '1',
    '--master-machine-type',
    'n1-standard-8',
    '--master-accelerator',
    'type=nvidia-tesla-t4,count=2',
    '--labels',
    'team=ml,sample=iris',
    '--service-account',
    'trainer@my-project.iam.gserviceaccount.com',
    '--timeout',
    '2h',
    '--stream-logs',
  )
  out = capsys.readouterr().out
  assert code == 0, out
  # The source distribution is in the bucket, where the job looks for it.
  assert cloud.list_uris(f'gs://{BUCKET}/', emulator) == [SDIST]
  ((method, path, body),) = vertex.posts()
  assert (method, path) == (
    'POST',
    f'/v1/projects/{PROJECT}/locations/{REGION}/customJobs',
  )
  job = _custom_job(body)
  assert job['displayName'] == 'iris_1'
  assert job['labels'] == {'team': 'ml', 'sample': 'iris'}
  spec = job['jobSpec']
  assert spec['serviceAccount'] == 'trainer@my-project.iam.gserviceaccount.com'
  assert spec['scheduling'] == {'timeout': '7200s'}
  assert spec['baseOutputDirectory'] == {'outputUriPrefix': JOB_DIR}
  pools = spec['workerPoolSpecs']
  # Vertex's positional order: chief, workers, parameter servers, evaluator.
  assert [(p['machineSpec'], p['replicaCount']) for p in pools] == [
    (
      {
        'machineType': 'n1-standard-8',
        'acceleratorType': 'NVIDIA_TESLA_T4',
        'acceleratorCount': 2,
      },
      '1',
    ),
    ({'machineType': 'n1-highcpu-16'}, '2'),
    ({'machineType': 'n1-standard-8'}, '1'),
    (
      {
        'machineType': 'n1-standard-8',
        'acceleratorType': 'NVIDIA_TESLA_T4',
        'acceleratorCount': 2,
      },
      '1',
    ),
  ]
  image = f'{REGION}-docker.pkg.dev/{PROJECT}/tensorfx/trainer'
  version = cloud.trainer_image(PROJECT, REGION).rsplit(':', 1)[1]
  assert [p['containerSpec']['imageUri'] for p in pools] == [
    f'{image}-gpu:{version}',
    f'{image}:{version}',
    f'{image}:{version}',
    f'{image}-gpu:{version}',
  ]
  for pool in pools:
    container = pool['containerSpec']
    # The trainer image installs the staged packages, then runs the module.
    assert container['command'] == [
      'python',
      '-m',
      'tensorfx',
      'run-package',
      '--package-uris',
      f'{SDIST},{TENSORFX}',
      '--module',
      'iris.trainer',
      '--',
    ]
    assert container['args'] == ['--max-steps', '100', '--job-dir', JOB_DIR]
  name = f'projects/{PROJECT}/locations/{REGION}/customJobs/1000'
  assert f'Created {name}' in out
  assert f'tensorfx status {name}' in out
  assert 'customJobs/1000: running' in out
  assert 'customJobs/1000: succeeded' in out
  assert f'Outputs: {JOB_DIR}' in out


def test_dry_run_prints_the_request_and_uploads_nothing(
  emulator, vertex, capsys
):
  from google.cloud import aiplatform_v1

  assert _submit(vertex.url, '--dry-run', '--scale-tier', 'standard-1') == 0
  printed = json.loads(capsys.readouterr().out)
  assert vertex.requests == []
  assert cloud.list_uris(f'gs://{BUCKET}/', emulator) == []
  assert printed['parent'] == f'projects/{PROJECT}/locations/{REGION}'
  # The printed request is exactly what a real submission sends.
  assert _submit(vertex.url, '--scale-tier', 'standard-1') == 0
  ((_, _, body),) = vertex.posts()
  sent = aiplatform_v1.CustomJob.from_json(json.dumps(body))
  shown = aiplatform_v1.CreateCustomJobRequest.from_json(
    json.dumps(printed)
  ).custom_job
  assert sent == shown
  assert [p.replica_count for p in sent.job_spec.worker_pool_specs] == [1, 4, 3]


def test_tuning_config_creates_a_hyperparameter_tuning_job(
  emulator, vertex, tmp_path, capsys
):
  config = tmp_path / 'hptuning.yaml'
  config.write_text(
    textwrap.dedent("""\
      trainingInput:
        scaleTier: BASIC
        hyperparameters:
          goal: MAXIMIZE
          hyperparameterMetricTag: accuracy
          maxTrials: 6
          maxParallelTrials: 2
          params:
          - parameterName: learning-rate
            type: DOUBLE
            minValue: 0.001
            maxValue: 0.3
            scaleType: UNIT_LOG_SCALE
          - parameterName: hidden-layers:1
            type: INTEGER
            minValue: 4
            maxValue: 32
            scaleType: UNIT_LINEAR_SCALE
          - parameterName: optimizer
            type: CATEGORICAL
            categoricalValues: [adam, sgd]
      """)
  )
  assert _submit(vertex.url, '--config', str(config), '--stream-logs') == 0
  out = capsys.readouterr().out
  ((_, path, body),) = vertex.posts()
  assert path == (
    f'/v1/projects/{PROJECT}/locations/{REGION}/hyperparameterTuningJobs'
  )
  from google.cloud import aiplatform_v1

  job = as_message(aiplatform_v1.HyperparameterTuningJob, body)
  assert job['maxTrialCount'] == 6
  assert job['parallelTrialCount'] == 2
  assert job['studySpec'] == {
    'metrics': [{'metricId': 'accuracy', 'goal': 'MAXIMIZE'}],
    'parameters': [
      {
        'parameterId': 'learning-rate',
        'doubleValueSpec': {'minValue': 0.001, 'maxValue': 0.3},
        'scaleType': 'UNIT_LOG_SCALE',
      },
      {
        'parameterId': 'hidden-layers:1',
        'integerValueSpec': {'minValue': '4', 'maxValue': '32'},
        'scaleType': 'UNIT_LINEAR_SCALE',
      },
      {
        'parameterId': 'optimizer',
        'categoricalValueSpec': {'values': ['adam', 'sgd']},
      },
    ],
  }
  (pool,) = job['trialJobSpec']['workerPoolSpecs']
  assert pool['containerSpec']['command'][5] == SDIST
  assert job['trialJobSpec']['baseOutputDirectory'] == {
    'outputUriPrefix': JOB_DIR
  }
  assert 'hyperparameterTuningJobs/1000: succeeded; trials: 1 succeeded' in out


def test_failed_job_exits_non_zero_with_its_error(emulator, vertex, capsys):
  del emulator
  vertex.states = ['JOB_STATE_RUNNING', 'JOB_STATE_FAILED']
  vertex.error = {
    'code': 3,
    'message': 'The replica workerpool0-0 exited with a non-zero status of 1.',
  }
  assert _submit(vertex.url, '--stream-logs') == 1
  captured = capsys.readouterr()
  assert 'customJobs/1000: failed' in captured.out
  assert (
    'tensorfx submit: error: job projects/my-project/locations/'
    'us-central1/customJobs/1000 ended failed: The replica '
    'workerpool0-0 exited with a non-zero status of 1. (code 3)'
  ) in captured.err


def test_refused_create_is_a_clean_error(emulator, vertex, capsys):
  del emulator
  vertex.create_error = (
    403,
    'PERMISSION_DENIED',
    'Permission aiplatform.customJobs.create denied',
  )
  assert _submit(vertex.url) == 1
  assert (
    'tensorfx submit: error: Vertex AI: creating the job failed: 403 '
    'Permission aiplatform.customJobs.create denied'
  ) in capsys.readouterr().err


def test_python_api_submit_and_wait(emulator, vertex):
  spec = cloud.job_spec(
    project=PROJECT,
    region=REGION,
    job_name='api_1',
    staging_bucket=f'gs://{BUCKET}',
    module_name='iris.trainer',
    environ={},
  )
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
  assert job['name'].endswith('/customJobs/1000')
  assert cloud.exists(
    f'gs://{BUCKET}/api_1/packages/iris-0.0.0.tar.gz', emulator
  )
  assert 'customJobs/1000: succeeded' in out.getvalue()


def test_custom_container_job_stages_nothing(emulator, vertex, capsys):
  assert (
    main(
      [
        'submit',
        '--job-name',
        'iris_2',
        '--project',
        PROJECT,
        '--region',
        REGION,
        '--module-name',
        'iris.trainer',
        '--master-image-uri',
        'us-docker.pkg.dev/p/r/iris:1',
        '--worker-count',
        '1',
        '--job-dir',
        JOB_DIR,
        '--api-endpoint',
        vertex.url,
        '--',
        '--max-steps',
        '5',
      ]
    )
    == 0
  )
  assert 'Created projects/' in capsys.readouterr().out
  assert cloud.list_uris(f'gs://{BUCKET}/', emulator) == []
  ((_, _, body),) = vertex.posts()
  pools = _custom_job(body)['jobSpec']['workerPoolSpecs']
  assert [p['containerSpec'] for p in pools] == [
    {
      'imageUri': 'us-docker.pkg.dev/p/r/iris:1',
      'command': ['python', '-m', 'iris.trainer'],
      'args': ['--max-steps', '5', '--job-dir', JOB_DIR],
    }
  ] * 2


def _bad_config(tmp_path, text):
  path = tmp_path / 'config.yaml'
  path.write_text(text)
  return str(path)


@pytest.mark.parametrize(
  'change, message',
  [
    (
      lambda a, t: _drop(a, '--project'),
      '--project: expected the Google Cloud project',
    ),
    (
      lambda a, t: _drop(a, '--region'),
      '--region: expected the Vertex AI region',
    ),
    (
      lambda a, t: _drop(_drop(a, '--staging-bucket'), '--job-dir'),
      '--staging-bucket: expected a gs:// location',
    ),
    (
      lambda a, t: _set(a, '--staging-bucket', 'gs://no-such-bucket/x'),
      'staging bucket gs://no-such-bucket does not exist',
    ),
    (
      lambda a, t: (
        a
        + [
          '--config',
          _bad_config(
            t, 'trainingInput:\n  masterType: standard\n  workerCont: 2\n'
          ),
        ]
      ),
      "config.yaml:3: trainingInput.workerCont: unknown key 'workerCont'",
    ),
    (
      lambda a, t: (
        a
        + [
          '--config',
          _bad_config(t, 'trainingInput:\n  parameterServerCount: -1\n'),
        ]
      ),
      'config.yaml:2: trainingInput.parameterServerCount: expected a '
      'non-negative integer. Received: parameterServerCount=-1',
    ),
    (
      lambda a, t: a + ['--worker-count', '-3'],
      '--worker-count: expected a non-negative integer',
    ),
    (
      lambda a, t: _set(a, '--module-name', 'iris.task'),
      "--module-name: module 'iris.task' is not in the package at",
    ),
    (
      lambda a, t: a + ['--packages', str(t / 'missing.whl')],
      '--packages: no such file',
    ),
    (
      lambda a, t: a + ['--master-image-uri', 'us-docker.pkg.dev/p/r/t:1'],
      '--package-path: every pool runs a custom container image',
    ),
  ],
)
def test_bad_input_fails_before_any_upload(
  emulator, vertex, tmp_path, capsys, change, message
):
  argv = [
    'submit',
    '--job-name',
    'iris_1',
    '--project',
    PROJECT,
    '--region',
    REGION,
    '--staging-bucket',
    f'gs://{BUCKET}/staging',
    '--package-path',
    IRIS,
    '--module-name',
    'iris.trainer',
    '--job-dir',
    JOB_DIR,
    '--api-endpoint',
    vertex.url,
  ]
  assert main(change(argv, tmp_path)) == 1
  assert message in capsys.readouterr().err
  assert cloud.list_uris(f'gs://{BUCKET}/', emulator) == []
  assert vertex.requests == []


def _drop(argv, flag):
  index = argv.index(flag)
  return argv[:index] + argv[index + 2 :]


def _set(argv, flag, value):
  index = argv.index(flag)
  return argv[: index + 1] + [value] + argv[index + 2 :]


def test_status_follows_a_job(vertex, capsys):
  name = f'projects/{PROJECT}/locations/{REGION}/customJobs/77'
  vertex.add_job(
    name,
    displayName='x',
    jobSpec={'baseOutputDirectory': {'outputUriPrefix': JOB_DIR}},
  )
  vertex.states = [
    'JOB_STATE_PENDING',
    'JOB_STATE_RUNNING',
    'JOB_STATE_RUNNING',
    'JOB_STATE_SUCCEEDED',
  ]
  assert (
    main(
      [
        'status',
        '77',
        '--project',
        PROJECT,
        '--region',
        REGION,
        '--api-endpoint',
        vertex.url,
        '--poll-interval',
        '0.01',
      ]
    )
    == 0
  )
  lines = capsys.readouterr().out.splitlines()
  assert [line.split(' ', 1)[1] for line in lines[:3]] == [
    'customJobs/77: pending',
    'customJobs/77: running',
    'customJobs/77: succeeded',
  ]
  assert lines[3] == f'Outputs: {JOB_DIR}'
  assert [r[1] for r in vertex.requests] == [f'/v1/{name}'] * 4


def test_status_of_a_failed_job(vertex, capsys):
  name = f'projects/{PROJECT}/locations/{REGION}/customJobs/78'
  vertex.add_job(name, displayName='x')
  vertex.states = ['JOB_STATE_CANCELLED']
  vertex.error = {'code': 1, 'message': 'CANCELED'}
  assert main(['status', name, '--once', '--api-endpoint', vertex.url]) == 1
  assert 'job {} ended cancelled'.format(name) in capsys.readouterr().err


def test_status_of_an_unknown_job(vertex, capsys):
  assert (
    main(
      [
        'status',
        'projects/p/locations/us-central1/customJobs/9',
        '--api-endpoint',
        vertex.url,
      ]
    )
    == 1
  )
  assert (
    'Vertex AI: reading projects/p/locations/us-central1/customJobs/9 '
    'failed: 404' in capsys.readouterr().err
  )


def test_status_needs_project_and_region_for_an_id(capsys):
  assert main(['status', '77']) == 1
  assert 'JOB: a job id needs --project and --region' in capsys.readouterr().err
