"""`tensorfx submit`: package a trainer and run it as a Vertex AI job.

Flags follow `gcloud ai-platform jobs submit training` (legacy AI Platform
Training, shut down in 2025), so existing commands and `config.yaml` files
keep working; the job runs as a Vertex AI CustomJob (or a
HyperparameterTuningJob when the config has a study). Trainer arguments go
after `--`.
"""

from tensorfx._errors import ConfigurationError

_ROLES = (
  ('master', 'the chief'),
  ('worker', 'the workers'),
  ('parameter-server', 'the parameter servers'),
  ('evaluator', 'the evaluator'),
)


def _list(text):
  return [item for item in text.split(',') if item]


def add_parser(commands):
  parser = commands.add_parser(
    'submit',
    help='run a trainer as a Vertex AI training job',
    description='Builds a source distribution of the trainer package, '
    'stages it (and --packages) in Cloud Storage, and creates a Vertex AI '
    'CustomJob, or a HyperparameterTuningJob when --config has a study. '
    'Flags and --config (Vertex AI or legacy AI Platform trainingInput '
    'form) follow gcloud ai-platform jobs submit training; flags win over '
    'the file. Arguments after -- go to the trainer, followed by '
    '--job-dir.',
    epilog='Example: tensorfx submit --job-name iris_1 --project my-project '
    '--region us-central1 --staging-bucket gs://my-bucket '
    '--package-path samples/iris --module-name iris.trainer '
    '--job-dir gs://my-bucket/iris/1 -- --data-train gs://my-bucket/'
    'iris/train.csv ...',
  )
  job = parser.add_argument_group('job')
  job.add_argument(
    '--job-name',
    help="the job's display name (default: "
    "the config's, else MODULE_YYYYmmdd_HHMMSS)",
  )
  job.add_argument(
    '--project',
    help='the Google Cloud project (default: $GOOGLE_CLOUD_PROJECT)',
  )
  job.add_argument('--region', help='the Vertex AI region, e.g. us-central1')
  job.add_argument(
    '--config',
    help='a YAML job config: Vertex AI form '
    '(workerPoolSpecs, studySpec, ...) or legacy AI Platform '
    'form (trainingInput: scaleTier, masterType, ..., '
    'hyperparameters)',
  )
  job.add_argument(
    '--job-dir',
    help="the job's gs:// output directory; "
    "passed to the trainer as --job-dir, and Vertex AI's "
    'base output directory',
  )
  job.add_argument('--labels', help='job labels, KEY=VALUE[,KEY=VALUE...]')
  job.add_argument(
    '--service-account', help='the service account the job runs as'
  )
  job.add_argument('--network', help='the VPC network to peer the job with')
  job.add_argument(
    '--timeout', help='the longest the job may run, e.g. 2h, 90m, 7200s'
  )
  code = parser.add_argument_group('trainer code')
  code.add_argument(
    '--package-path',
    help='the trainer package directory '
    '(as gcloud), or a directory with setup.py/pyproject.toml',
  )
  code.add_argument(
    '--module-name', help='the module to run, e.g. trainer.task'
  )
  code.add_argument(
    '--packages',
    type=_list,
    action='extend',
    default=[],
    help='extra packages to install, comma-separated: local '
    'files (uploaded) or gs:// URIs',
  )
  code.add_argument(
    '--staging-bucket',
    help='where packages are staged, '
    'gs://BUCKET[/PREFIX] (default: JOB_DIR/packages)',
  )
  code.add_argument(
    '--trainer-image',
    help='the tensorfx trainer image '
    'Python trainers run on (default: REGION-docker.pkg.dev/'
    'PROJECT/tensorfx/trainer:VERSION, which cloudbuild.yaml '
    'builds and pushes)',
  )
  code.add_argument(
    '--executor-image-uri',
    help='run Python trainers on '
    'this prebuilt Vertex AI executor image instead (one '
    "without tensorfx's Python 3.11 and TensorFlow 2.21 "
    'cannot run tensorfx)',
  )
  cluster = parser.add_argument_group('cluster')
  cluster.add_argument(
    '--scale-tier',
    help='a legacy scale tier: basic, '
    'basic-gpu, standard-1, premium-1 or custom; replaces '
    "the config's cluster",
  )
  for role, what in _ROLES:
    cluster.add_argument(
      f'--{role}-machine-type',
      help=f'the machine type of {what} (Compute Engine or legacy name)',
    )
    cluster.add_argument(
      f'--{role}-accelerator',
      help=f'accelerators of {what}: type=nvidia-tesla-t4[,count=N]',
    )
    cluster.add_argument(
      f'--{role}-image-uri',
      help=f'a custom container for {what} instead of the Python package',
    )
    if role != 'master':
      cluster.add_argument(
        f'--{role}-count', type=int, help=f'how many machines run {what}'
      )
  run_group = parser.add_argument_group('submission')
  run_group.add_argument(
    '--dry-run',
    action='store_true',
    help='print the exact Vertex AI request; upload and create nothing',
  )
  run_group.add_argument(
    '--stream-logs',
    action='store_true',
    help='follow the job until it ends; exit non-zero if it fails',
  )
  run_group.add_argument(
    '--poll-interval',
    type=float,
    default=30.0,
    help='seconds between state checks (default 30)',
  )
  run_group.add_argument(
    '--api-endpoint',
    help='the Vertex AI endpoint (default: REGION-aiplatform.googleapis.com)',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def trainer_args(rest):
  """The arguments after `--`; anything unknown before it is an error."""
  if '--' in rest:
    index = rest.index('--')
    unknown, user = rest[:index], rest[index + 1 :]
  else:
    unknown, user = rest, []
  if unknown:
    raise ConfigurationError(
      f'unrecognized arguments: {" ".join(unknown)} (trainer arguments go '
      'after --)'
    )
  return user


def run(args, rest):
  """Builds the JobSpec from the flags and submits it."""
  user_args = trainer_args(rest)
  from tensorfx.cloud import _jobflags
  from tensorfx.cloud import _jobs

  pool_flags = {}
  for role, _ in _ROLES:
    prefix = role.replace('-', '_')
    for suffix in ('machine_type', 'accelerator', 'image_uri', 'count'):
      value = getattr(args, f'{prefix}_{suffix}', None)
      if value is not None:
        pool_flags[f'{prefix}_{suffix}'] = value
  spec = _jobflags.job_spec(
    config=args.config,
    project=args.project,
    region=args.region,
    job_name=args.job_name,
    staging_bucket=args.staging_bucket,
    module_name=args.module_name,
    args=user_args,
    job_dir=args.job_dir,
    scale_tier=args.scale_tier,
    labels=args.labels,
    service_account=args.service_account,
    network=args.network,
    timeout=args.timeout,
    executor_image_uri=args.executor_image_uri,
    trainer_image=args.trainer_image,
    **pool_flags,
  )
  _jobs.submit(
    spec,
    package_path=args.package_path,
    packages=args.packages,
    dry_run=args.dry_run,
    api_endpoint=args.api_endpoint,
    follow=args.stream_logs,
    poll_interval=args.poll_interval,
  )
  return 0
