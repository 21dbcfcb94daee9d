"""JobSpec and config translation: legacy AI Platform and Vertex AI forms.

These build requests only; nothing here talks to a server.
"""

import textwrap

import pytest

from tensorfx import ConfigurationError
from tensorfx import cloud

VERSION = cloud.trainer_image('p', 'r').rsplit(':', 1)[1]
TRAINER = f'us-central1-docker.pkg.dev/my-project/tensorfx/trainer:{VERSION}'
RUN_PACKAGE = [
  'python',
  '-m',
  'tensorfx',
  'run-package',
  '--package-uris',
  'gs://my-bucket/staging/trainer-0.0.0.tar.gz',
  '--module',
  'trainer.task',
  '--',
]
BASE = dict(
  project='my-project',
  region='us-central1',
  job_name='job_1',
  staging_bucket='gs://my-bucket/staging',
  module_name='trainer.task',
  package_uris=('gs://my-bucket/staging/trainer-0.0.0.tar.gz',),
  environ={},
)


def _config(tmp_path, text, name='config.yaml'):
  path = tmp_path / name
  path.write_text(textwrap.dedent(text).lstrip('\n'))
  return str(path)


def _spec(**overrides):
  return cloud.job_spec(**dict(BASE, **overrides))


def _pools(spec):
  return spec.request()['customJob']['jobSpec']['workerPoolSpecs']


def _machines(pools):
  return [
    (
      p['machineSpec']['machineType'],
      p['replicaCount'],
      p['machineSpec'].get('acceleratorType'),
      p['machineSpec'].get('acceleratorCount'),
    )
    if p
    else None
    for p in pools
  ]


def test_basic_request_is_one_chief_on_the_trainer_image():
  spec = _spec(args=['--max-steps', '10'], job_dir='gs://my-bucket/out')
  assert spec.request() == {
    'parent': 'projects/my-project/locations/us-central1',
    'customJob': {
      'displayName': 'job_1',
      'jobSpec': {
        'workerPoolSpecs': [
          {
            'machineSpec': {'machineType': 'n1-standard-4'},
            'replicaCount': '1',
            'containerSpec': {
              'imageUri': TRAINER,
              'command': RUN_PACKAGE,
              'args': ['--max-steps', '10', '--job-dir', 'gs://my-bucket/out'],
            },
          }
        ],
        'baseOutputDirectory': {'outputUriPrefix': 'gs://my-bucket/out'},
      },
    },
  }


def test_legacy_custom_config_translates_to_positional_pools(tmp_path):
  config = _config(
    tmp_path,
    """
      labels:
        team: ml
      trainingInput:
        scaleTier: CUSTOM
        masterType: complex_model_m
        masterConfig:
          acceleratorConfig:
            count: 2
            type: NVIDIA_TESLA_V100
        workerType: standard_gpu
        workerCount: 9
        parameterServerType: large_model
        parameterServerCount: 3
        evaluatorType: n1-highcpu-16
        evaluatorCount: 1
        region: europe-west4
        scheduling:
          maxRunningTime: 7200s
        serviceAccount: trainer@my-project.iam.gserviceaccount.com
      """,
  )
  spec = cloud.job_spec(**dict(BASE, region=None, config=config))
  pools = _pools(spec)
  assert _machines(pools) == [
    ('n1-highcpu-16', '1', 'NVIDIA_TESLA_V100', 2),
    ('n1-standard-8', '9', 'NVIDIA_TESLA_T4', 1),
    ('n1-highmem-8', '3', None, None),
    ('n1-highcpu-16', '1', None, None),
  ]
  europe = [p['containerSpec']['imageUri'] for p in pools]
  image = 'europe-west4-docker.pkg.dev/my-project/tensorfx/trainer'
  assert europe == [f'{image}-gpu:{VERSION}'] * 2 + [f'{image}:{VERSION}'] * 2
  job = spec.request()['customJob']
  assert spec.region == 'europe-west4'
  assert job['labels'] == {'team': 'ml'}
  assert job['jobSpec']['scheduling'] == {'timeout': '7200s'}
  assert (
    job['jobSpec']['serviceAccount']
    == 'trainer@my-project.iam.gserviceaccount.com'
  )


@pytest.mark.parametrize(
  'tier, expected',
  [
    ('BASIC', [('n1-standard-4', '1', None, None)]),
    ('BASIC_GPU', [('n1-standard-8', '1', 'NVIDIA_TESLA_T4', 1)]),
    (
      'STANDARD_1',
      [
        ('n1-highcpu-16', '1', None, None),
        ('n1-highcpu-16', '4', None, None),
        ('n1-standard-4', '3', None, None),
      ],
    ),
    (
      'PREMIUM_1',
      [
        ('n1-highcpu-32', '1', None, None),
        ('n1-highcpu-32', '19', None, None),
        ('n1-highmem-8', '11', None, None),
      ],
    ),
  ],
)
def test_scale_tiers(tmp_path, tier, expected):
  config = _config(tmp_path, f'trainingInput:\n  scaleTier: {tier}\n')
  assert _machines(_pools(_spec(config=config))) == expected
  flag = tier.lower().replace('_', '-')  # As gcloud spelled them.
  assert _machines(_pools(_spec(scale_tier=flag))) == expected


def test_unused_pools_before_a_used_one_are_empty_placeholders():
  spec = _spec(evaluator_count=1)
  pools = _pools(spec)
  assert pools[1:3] == [{}, {}]
  assert _machines(pools) == [
    ('n1-standard-4', '1', None, None),
    None,
    None,
    ('n1-standard-4', '1', None, None),
  ]
  assert [p and p.replica_count for p in spec.pools()] == [1, None, None, 1]


def test_flags_override_the_config(tmp_path):
  config = _config(
    tmp_path,
    """
      trainingInput:
        scaleTier: STANDARD_1
        args: [--epochs, '3']
      labels: {team: ml, env: dev}
      """,
  )
  spec = _spec(
    config=config,
    worker_count=2,
    parameter_server_count=0,
    worker_machine_type='n2-standard-8',
    master_accelerator='type=nvidia-tesla-t4,count=2',
    labels='env=prod,owner=me',
    timeout='1h30m',
    args=['--max-steps', '5'],
    service_account='sa@my-project.iam.gserviceaccount.com',
  )
  assert _machines(_pools(spec)) == [
    ('n1-highcpu-16', '1', 'NVIDIA_TESLA_T4', 2),
    ('n2-standard-8', '2', None, None),
  ]
  job = spec.request()['customJob']
  assert job['labels'] == {'team': 'ml', 'env': 'prod', 'owner': 'me'}
  assert job['jobSpec']['scheduling'] == {'timeout': '5400s'}
  assert job['jobSpec']['workerPoolSpecs'][0]['containerSpec']['args'] == [
    '--epochs',
    '3',
    '--max-steps',
    '5',
  ]


def test_new_pools_copy_the_chief_and_parameter_servers_drop_gpus():
  spec = _spec(scale_tier='basic-gpu', worker_count=2, parameter_server_count=1)
  assert _machines(_pools(spec)) == [
    ('n1-standard-8', '1', 'NVIDIA_TESLA_T4', 1),
    ('n1-standard-8', '2', 'NVIDIA_TESLA_T4', 1),
    ('n1-standard-8', '1', None, None),
  ]


def test_vertex_config_with_placeholder(tmp_path):
  config = _config(
    tmp_path,
    """
      workerPoolSpecs:
      - machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_L4,
                      acceleratorCount: 1}
        replicaCount: 1
        diskSpec: {bootDiskType: pd-ssd, bootDiskSizeGb: 200}
        pythonPackageSpec:
          executorImageUri: us-docker.pkg.dev/my/image:1
          pythonModule: trainer.main
          args: [--lr, '0.1']
      - {}
      - {}
      - machineSpec: {machineType: n1-standard-4}
        replicaCount: "1"
      serviceAccount: sa@my-project.iam.gserviceaccount.com
      scheduling: {timeout: 3600s}
      baseOutputDirectory: {outputUriPrefix: gs://my-bucket/out}
      """,
  )
  spec = cloud.job_spec(**dict(BASE, module_name=None, config=config))
  pools = _pools(spec)
  assert pools[1:3] == [{}, {}]
  assert pools[0]['diskSpec'] == {
    'bootDiskType': 'pd-ssd',
    'bootDiskSizeGb': 200,
  }
  assert pools[0]['pythonPackageSpec'] == {
    'executorImageUri': 'us-docker.pkg.dev/my/image:1',
    'packageUris': ['gs://my-bucket/staging/trainer-0.0.0.tar.gz'],
    'pythonModule': 'trainer.main',
    'args': ['--lr', '0.1', '--job-dir', 'gs://my-bucket/out'],
  }
  # A pool the file gives no image runs on the trainer image.
  assert pools[3]['containerSpec']['imageUri'] == TRAINER
  assert pools[3]['containerSpec']['command'][-2:] == ['trainer.main', '--']
  assert spec.timeout_seconds == 3600


def test_custom_containers_need_no_package(tmp_path):
  spec = cloud.job_spec(
    **dict(
      BASE,
      module_name=None,
      package_uris=(),
      master_image_uri='us-docker.pkg.dev/p/r/t:1',
      worker_count=1,
      args=['--a'],
    )
  )
  pools = _pools(spec)
  assert [p['containerSpec'] for p in pools] == [
    {'imageUri': 'us-docker.pkg.dev/p/r/t:1', 'args': ['--a']}
  ] * 2
  assert all('pythonPackageSpec' not in p for p in pools)
  # With a module, the container runs it as Vertex runs a package's.
  spec = cloud.job_spec(
    **dict(BASE, package_uris=(), master_image_uri='us-docker.pkg.dev/p/r/t:1')
  )
  assert _pools(spec)[0]['containerSpec'] == {
    'imageUri': 'us-docker.pkg.dev/p/r/t:1',
    'command': ['python', '-m', 'trainer.task'],
  }


def test_legacy_hyperparameters_become_a_study(tmp_path):
  config = _config(
    tmp_path,
    """
      trainingInput:
        scaleTier: BASIC
        hyperparameters:
          goal: MAXIMIZE
          hyperparameterMetricTag: accuracy
          maxTrials: 12
          maxParallelTrials: 3
          maxFailedTrials: 2
          algorithm: RANDOM_SEARCH
          enableTrialEarlyStopping: true
          params:
          - parameterName: learning-rate
            type: DOUBLE
            minValue: 0.0001
            maxValue: 0.1
            scaleType: UNIT_LOG_SCALE
          - parameterName: hidden-layers:1
            type: INTEGER
            minValue: 8
            maxValue: 64
            scaleType: UNIT_LINEAR_SCALE
          - parameterName: batch-size
            type: DISCRETE
            discreteValues: [64, 16, 32]
          - parameterName: optimizer
            type: CATEGORICAL
            categoricalValues: [adam, sgd]
      """,
  )
  request = _spec(config=config).request()
  assert set(request) == {'parent', 'hyperparameterTuningJob'}
  job = request['hyperparameterTuningJob']
  assert job['maxTrialCount'] == 12
  assert job['parallelTrialCount'] == 3
  assert job['maxFailedTrialCount'] == 2
  assert job['studySpec'] == {
    'metrics': [{'metricId': 'accuracy', 'goal': 'MAXIMIZE'}],
    'parameters': [
      {
        'parameterId': 'learning-rate',
        'doubleValueSpec': {'minValue': 0.0001, 'maxValue': 0.1},
        'scaleType': 'UNIT_LOG_SCALE',
      },
      {
        'parameterId': 'hidden-layers:1',
        'integerValueSpec': {'minValue': '8', 'maxValue': '64'},
        'scaleType': 'UNIT_LINEAR_SCALE',
      },
      {
        'parameterId': 'batch-size',
        'discreteValueSpec': {'values': [16.0, 32.0, 64.0]},
      },
      {
        'parameterId': 'optimizer',
        'categoricalValueSpec': {'values': ['adam', 'sgd']},
      },
    ],
    'algorithm': 'RANDOM_SEARCH',
    'medianAutomatedStoppingSpec': {},
  }
  assert _machines(job['trialJobSpec']['workerPoolSpecs']) == [
    ('n1-standard-4', '1', None, None)
  ]


def test_vertex_study_config(tmp_path):
  config = _config(
    tmp_path,
    """
      studySpec:
        metrics: [{metricId: loss, goal: MINIMIZE}]
        parameters:
        - parameterId: lr
          doubleValueSpec: {minValue: 0.01, maxValue: 0.5}
          scaleType: UNIT_LINEAR_SCALE
      maxTrialCount: 4
      parallelTrialCount: 2
      trialJobSpec:
        workerPoolSpecs:
        - machineSpec: {machineType: n1-standard-4}
          replicaCount: 1
      """,
  )
  study = _spec(config=config).study
  assert study == cloud.StudySpec(
    'loss',
    'MINIMIZE',
    (
      cloud.ParameterSpec(
        'lr', 'DOUBLE', 0.01, 0.5, scale_type='UNIT_LINEAR_SCALE'
      ),
    ),
    max_trial_count=4,
    parallel_trial_count=2,
  )


@pytest.mark.parametrize(
  'text, message',
  [
    (
      'trainingInput:\n  scaleTier: CUSTOM\n  masterType: standard\n'
      '  workerTyp: standard\n',
      "config.yaml:4: trainingInput.workerTyp: unknown key 'workerTyp' in "
      'trainingInput; accepted keys are scaleTier, masterType',
    ),
    (
      'trainingInput:\n  masterType: standard\n  workerType: standard\n'
      '  workerCount: -2\n',
      'config.yaml:4: trainingInput.workerCount: expected a non-negative '
      'integer. Received: workerCount=-2',
    ),
    (
      'trainingInput:\n  masterType: standrd\n',
      'config.yaml:2: trainingInput.masterType: expected a Compute Engine '
      'machine type (e.g. n1-standard-4) or a legacy AI Platform one',
    ),
    (
      'trainingInput:\n  masterType: standard\n  masterConfig:\n'
      '    acceleratorConfig: {type: NVIDIA_TESLA_X1, count: 1}\n',
      'config.yaml:4: trainingInput.masterConfig.acceleratorConfig.type: '
      'expected an accelerator type, one of',
    ),
    (
      'trainingInput:\n  scaleTier: MEGA\n',
      'config.yaml:2: trainingInput.scaleTier: expected a scale tier, one of '
      'BASIC, BASIC_GPU',
    ),
    (
      'trainingInput:\n  scaleTier: CUSTOM\n',
      'config.yaml:2: trainingInput.scaleTier: scaleTier CUSTOM needs '
      'masterType',
    ),
    (
      'trainingInput:\n  workerType: standard\n',
      'config.yaml:2: trainingInput.workerType: workerType given without '
      'workerCount',
    ),
    (
      'jobid: x\ntrainingInput: {}\n',
      "config.yaml:1: jobid: unknown key 'jobid' in a legacy AI Platform job "
      'config',
    ),
    (
      'workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n'
      '  replicaCount: 2\n',
      'config.yaml:3: workerPoolSpecs[0].replicaCount: expected 1 (pool 0 is '
      'the chief)',
    ),
    (
      'workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n'
      '- machineSpec: {machineType: n1-standard-4}\n  replicaCount: -1\n',
      'config.yaml:4: workerPoolSpecs[1].replicaCount: expected a '
      'non-negative integer. Received: replicaCount=-1',
    ),
    (
      'workerPoolSpecs:\n- machineSpec: {machineTyp: n1-standard-4}\n',
      'config.yaml:2: workerPoolSpecs[0].machineSpec.machineTyp: unknown key '
      "'machineTyp' in machineSpec",
    ),
    (
      'trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n'
      '    maxTrials: 0\n    params:\n    - {parameterName: a, type: DOUBLE,'
      ' minValue: 0, maxValue: 1}\n',
      'config.yaml:4: trainingInput.hyperparameters.maxTrials: expected a '
      'positive integer. Received: maxTrials=0',
    ),
    (
      'trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n'
      '    maxTrials: 2\n    params:\n    - {parameterName: a, type: DOUBLE,'
      ' minValue: 0, maxValue: 1, scaleType: UNIT_LOG_SCALE}\n',
      'config.yaml:6: trainingInput.hyperparameters.params[0]: hyperparameter '
      "'a': min_value: expected a positive number on a log scale",
    ),
    (
      'trainingInput:\n  hyperparameters:\n    goal: UP\n    maxTrials: 2\n'
      '    params: []\n',
      'config.yaml:3: trainingInput.hyperparameters.goal: expected a goal, one '
      'of MAXIMIZE, MINIMIZE. Received: goal=',
    ),
    ('- a\n', 'config.yaml:1: expected a mapping with trainingInput'),
    ('trainingInput: [\n', 'config.yaml:2:1: invalid YAML'),
  ],
)
def test_bad_config_names_file_line_and_key(tmp_path, text, message):
  config = _config(tmp_path, text)
  with pytest.raises(ConfigurationError) as raised:
    _spec(config=config)
  assert str(raised.value).startswith(str(tmp_path / message)), str(
    raised.value
  )


@pytest.mark.parametrize(
  'overrides, message',
  [
    (dict(project=None), '--project: expected the Google Cloud project'),
    (dict(region=None), '--region: expected the Vertex AI region'),
    (dict(region='Central'), '--region: expected a region name'),
    (dict(staging_bucket=None), '--staging-bucket: expected a gs:// location'),
    (dict(staging_bucket='/tmp/x'), 'Expected a Cloud Storage URI'),
    (dict(job_dir='/tmp/out'), '--job-dir: expected a gs:// directory'),
    (dict(worker_count=-1), '--worker-count: expected a non-negative integer'),
    (dict(module_name=None), '--module-name: expected the trainer module'),
    (dict(labels='Team=x'), '--labels: expected keys of lower-case'),
    (dict(labels='team'), '--labels: expected KEY=VALUE'),
    (dict(timeout='soon'), '--timeout: expected a duration'),
    (
      dict(scale_tier='custom'),
      '--scale-tier CUSTOM needs --master-machine-type',
    ),
    (dict(scale_tier='huge'), '--scale-tier: expected one of'),
    (
      dict(master_accelerator='type=tpu-v9'),
      '--master-accelerator: expected an accelerator type',
    ),
    (
      dict(worker_machine_type='n1-standard-4'),
      '--worker-machine-type/-accelerator/-image-uri: the job has no workers',
    ),
    (
      dict(service_account='nobody'),
      '--service-account: expected a service account email',
    ),
    (dict(config='/no/such/config.yaml'), '--config: no such file'),
  ],
)
def test_bad_flags_are_named(overrides, message):
  with pytest.raises(ConfigurationError) as raised:
    _spec(**overrides)
  assert str(raised.value).startswith(message), str(raised.value)


def test_project_defaults_to_the_environment():
  spec = cloud.job_spec(
    **dict(BASE, project=None, environ={'GOOGLE_CLOUD_PROJECT': 'env-proj'})
  )
  assert spec.parent == 'projects/env-proj/locations/us-central1'


def test_staging_defaults_to_the_job_dir():
  spec = _spec(staging_bucket=None, job_dir='gs://my-bucket/jobs/1/')
  assert spec.staging_location == 'gs://my-bucket/jobs/1/packages'


def test_request_needs_a_package_for_python_pools():
  spec = _spec(package_uris=())
  with pytest.raises(
    ConfigurationError,
    match='package_uris: a Python trainer needs its package staged',
  ):
    spec.request()


def test_request_is_accepted_by_the_client_messages(tmp_path):
  from google.cloud import aiplatform_v1

  spec = _spec(
    worker_count=2,
    parameter_server_count=1,
    evaluator_count=1,
    master_accelerator='type=nvidia-tesla-t4',
    labels='a=b',
    timeout=600,
    job_dir='gs://my-bucket/o',
  )
  request = spec.request()
  message = aiplatform_v1.CreateCustomJobRequest.from_json(
    __import__('json').dumps(request), ignore_unknown_fields=False
  )
  pools = message.custom_job.job_spec.worker_pool_specs
  assert [p.replica_count for p in pools] == [1, 2, 1, 1]
  assert (
    pools[0].machine_spec.accelerator_type
    == aiplatform_v1.AcceleratorType.NVIDIA_TESLA_T4
  )
