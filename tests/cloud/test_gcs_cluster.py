"""A local parameter-server cluster writing its job to gs:// (loopback GCS).

`tensorfx train --cluster ps=1,workers=2,evaluator=1 --output gs://...`:
every task (chief, workers, parameter server, evaluator) is a process in
the loopback server's namespace, so all of them write through TensorFlow's
GCS filesystem: the chief its checkpoints, summaries, `job.yaml` and the
model; the evaluator its records and best model.
"""

import json
import os
import sys

import pytest
import yaml

from conftest import IRIS
from gcs_loopback import gcs  # noqa: F401  (a fixture: pytest finds it by name)
from tensorfx import _atomic

pytestmark = [
  pytest.mark.slow,
  pytest.mark.cluster,
  pytest.mark.xdist_group('gcs_loopback'),
]


def test_a_parameter_server_cluster_writes_its_job_to_gs(gcs, iris_analysis):
  output = f'gs://{gcs.bucket}/cluster/job'
  result = gcs.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      output,
      '--cluster',
      'ps=1,workers=2,evaluator=1',
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      iris_analysis,
      '--hidden-layers:1',
      '8',
      '--seed',
      '5',
      '--max-steps',
      '60',
      '--checkpoint-interval-steps',
      '20',
      '--log-interval-steps',
      '20',
    ],
    cwd=IRIS,
    timeout=600,
    env={'TF_CPP_MIN_LOG_LEVEL': '3'},
  )
  assert 'the chief exited with code 0' in result.stdout + result.stderr

  bucket = gcs.client().bucket(gcs.bucket)
  names = {
    b.name[len('cluster/job/') :]
    for b in gcs.client().list_blobs(gcs.bucket, prefix='cluster/job/')
  }
  job = yaml.safe_load(bucket.blob('cluster/job/job.yaml').download_as_text())
  assert job['status'] == 'completed' and job['global_step'] >= 60
  assert {
    'checkpoints/checkpoint',
    'model/saved_model.pb',
    'best_model/saved_model.pb',
  } <= names
  assert not any(os.path.basename(n) == _atomic.MARKER for n in names)
  assert any(
    n.startswith('summaries/train/events.out.tfevents.') for n in names
  )
  evaluated = json.loads(
    bucket.blob('cluster/job/summaries/eval/evaluated.json').download_as_text()
  )
  assert evaluated['evaluated'] == sorted(set(evaluated['evaluated']))
  assert evaluated['evaluated'][-1] == job['global_step']
