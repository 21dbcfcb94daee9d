"""Cloud jobs: gs:// staging, trainer packaging, Vertex AI submission.

`submit` a `JobSpec` (built from gcloud-style flags and a Vertex AI or
legacy AI Platform `config.yaml` by `job_spec`), follow it with `status`
or `wait`, read its log lines with `logs`, stop it with `cancel`. Inside
a job, `output_dirs` says where outputs go and
`report_metrics` reports tuning metrics the way Vertex AI reads them.

Nothing here imports TensorFlow or the Google Cloud clients until a
function needs them.
"""

from tensorfx._hypertune import report_metric
from tensorfx._hypertune import report_metrics
from tensorfx._hypertune import trial_id
from tensorfx._jobdirs import output_dirs
from tensorfx.cloud._configfile import ConfigFile
from tensorfx.cloud._configfile import load_config
from tensorfx.cloud._errors import CloudError
from tensorfx.cloud._errors import JobFailedError
from tensorfx.cloud._images import EXECUTOR_IMAGE_CPU
from tensorfx.cloud._images import EXECUTOR_IMAGE_GPU
from tensorfx.cloud._images import trainer_image
from tensorfx.cloud._jobflags import job_spec
from tensorfx.cloud._jobs import job_client
from tensorfx.cloud._jobs import status
from tensorfx.cloud._jobs import submit
from tensorfx.cloud._jobs import wait
from tensorfx.cloud._jobspec import JobSpec
from tensorfx.cloud._logs import cancel
from tensorfx.cloud._logs import logging_client
from tensorfx.cloud._logs import logs
from tensorfx.cloud._package import build_sdist
from tensorfx.cloud._package import check_module
from tensorfx.cloud._runpackage import install_packages
from tensorfx.cloud._storage import check_bucket
from tensorfx.cloud._storage import download
from tensorfx.cloud._storage import exists
from tensorfx.cloud._storage import list_uris
from tensorfx.cloud._storage import parse_gcs_uri
from tensorfx.cloud._storage import storage_client
from tensorfx.cloud._storage import upload
from tensorfx.cloud._storage import upload_directory
from tensorfx.cloud._studyspec import ParameterSpec
from tensorfx.cloud._studyspec import StudySpec
from tensorfx.cloud._workerpool import WorkerPool

__all__ = [
  'CloudError',
  'ConfigFile',
  'EXECUTOR_IMAGE_CPU',
  'EXECUTOR_IMAGE_GPU',
  'JobFailedError',
  'JobSpec',
  'ParameterSpec',
  'StudySpec',
  'WorkerPool',
  'build_sdist',
  'cancel',
  'check_bucket',
  'check_module',
  'download',
  'exists',
  'install_packages',
  'job_client',
  'job_spec',
  'list_uris',
  'load_config',
  'logging_client',
  'logs',
  'output_dirs',
  'parse_gcs_uri',
  'report_metric',
  'report_metrics',
  'status',
  'storage_client',
  'submit',
  'trainer_image',
  'trial_id',
  'upload',
  'upload_directory',
  'wait',
]
