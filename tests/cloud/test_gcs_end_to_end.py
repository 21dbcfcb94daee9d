"""A whole tensorfx job on gs:// only, against a GCS-API server on loopback.

The iris sample's data on gs://, `tensorfx analyze` (Beam's GCS IO) and
`tensorfx train --output gs://...` (TensorFlow's GCS filesystem), killed
mid-export and resumed, then `tensorfx predict` (in process and on Beam),
`tensorfx evaluate` and `evaluate --follow` on gs://, and the
damaged-checkpoint fallback on a truncated object. Every
command runs as a child process in the loopback server's namespace; the
tests read the bucket with google-cloud-storage.
"""

import json
import signal
import sys

import pytest
import yaml

from conftest import IRIS
from gcs_loopback import gcs  # noqa: F401  (a fixture: pytest finds it by name)
from tensorfx import _atomic

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('gcs_loopback'),
  pytest.mark.release,
]

_INSTANCES = '6.3,3.3,6,2.5\n4.4,3,1.3,0.2\n6.1,2.8,4.7,1.2\n'
_FLAGS = [
  '--data-schema',
  'schema.yaml',
  '--data-features',
  'features.yaml',
  '--hidden-layers:1',
  '8',
  '--seed',
  '3',
  '--batch-size',
  '16',
  '--checkpoint-interval-steps',
  '10',
  '--log-interval-steps',
  '10',
]


def _tensorfx(gcs, *args, check=True, env=None):
  return gcs.run(
    [sys.executable, '-m', 'tensorfx', *args], cwd=IRIS, check=check, env=env
  )


def _names(gcs, prefix):
  return {
    b.name[len(prefix) + 1 :]
    for b in gcs.client().list_blobs(gcs.bucket, prefix=prefix + '/')
  }


def _text(gcs, name):
  return gcs.client().bucket(gcs.bucket).blob(name).download_as_text()


def _train(gcs, root, job, steps, **kwargs):
  return _tensorfx(
    gcs,
    'train',
    '--module',
    'trainer',
    '--output',
    f'{root}/{job}',
    '--data-train',
    f'{root}/data/train.csv',
    '--data-eval',
    f'{root}/data/eval.csv',
    '--data-metadata',
    f'{root}/analysis',
    *_FLAGS,
    '--max-steps',
    str(steps),
    **kwargs,
  )


@pytest.fixture(scope='module')
def killed(gcs):
  """Data uploaded, analyzed, and a training killed in the middle of export.

  Returns:
    (gs:// root of the run, its prefix in the bucket).
  """
  prefix = 'e2e'
  bucket = gcs.client().bucket(gcs.bucket)
  for name in ('train.csv', 'eval.csv'):
    bucket.blob(f'{prefix}/data/{name}').upload_from_filename(
      f'{IRIS}/data/{name}'
    )
  bucket.blob(f'{prefix}/instances.csv').upload_from_string(_INSTANCES)
  root = f'gs://{gcs.bucket}/{prefix}'
  _tensorfx(
    gcs,
    'analyze',
    '--data-train',
    f'{root}/data/train.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    '--output',
    f'{root}/analysis',
  )
  result = _train(
    gcs,
    root,
    'job',
    30,
    check=False,
    env={'TENSORFX_FAULT': 'export.model.saved'},
  )
  assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
  return root, prefix


@pytest.fixture(scope='module')
def resumed(gcs, killed):
  """The killed run resumed to step 60: (root, prefix, its stderr)."""
  root, prefix = killed
  result = _train(gcs, root, 'job', 60)
  return root, prefix, result.stderr


def test_analysis_reads_and_writes_gs(gcs, killed):
  _, prefix = killed
  names = _names(gcs, f'{prefix}/analysis')
  assert {
    'metadata.json',
    'transform_fn/saved_model.pb',
    'transformed_metadata/schema.pbtxt',
  } <= names


def test_a_model_killed_mid_export_is_refused(gcs, killed):
  root, prefix = killed
  names = _names(gcs, f'{prefix}/job/model')
  assert 'saved_model.pb' in names and _atomic.MARKER in names
  result = _tensorfx(
    gcs,
    'predict',
    '--model',
    f'{root}/job/model',
    '--input',
    f'{root}/instances.csv',
    check=False,
  )
  assert result.returncode == 1
  assert 'is incomplete: its export was interrupted' in result.stderr
  job = yaml.safe_load(_text(gcs, f'{prefix}/job/job.yaml'))
  assert job['status'] == 'running'


def test_training_resumes_after_the_kill(gcs, resumed):
  _, prefix, stderr = resumed
  assert 'Training from step 30 to 60' in stderr
  names = _names(gcs, f'{prefix}/job')
  assert _atomic.MARKER not in {n.rsplit('/', 1)[-1] for n in names}
  assert {
    'model/saved_model.pb',
    'checkpoints/checkpoint',
    'checkpoints/ckpt-60.index',
  } <= names
  assert any(
    n.startswith('summaries/train/events.out.tfevents.') for n in names
  )
  assert any(n.startswith('summaries/eval/events.out.tfevents.') for n in names)
  assert not any('.tmp-' in n for n in names), 'a temporary file left'
  job = yaml.safe_load(_text(gcs, f'{prefix}/job/job.yaml'))
  assert job['status'] == 'completed' and job['global_step'] == 60


def test_predict_reads_and_writes_gs(gcs, resumed):
  root, prefix, _ = resumed
  _tensorfx(
    gcs,
    'predict',
    '--model',
    f'{root}/job/model',
    '--input',
    f'{root}/instances.csv',
    '--output',
    f'{root}/predictions.json',
  )
  lines = _text(gcs, f'{prefix}/predictions.json').splitlines()
  predictions = [json.loads(line) for line in lines]
  assert len(predictions) == 3
  for prediction in predictions:
    assert prediction['label'] in ('setosa', 'versicolor', 'virginica')
    assert sum(prediction['scores']) == pytest.approx(1.0, abs=1e-4)


def test_beam_predict_reads_and_writes_gs(gcs, resumed):
  # Beam's GCS IO: the input read, the output written as a temporary shard
  # and moved into place (a copy and a delete).
  root, prefix, _ = resumed
  result = _tensorfx(
    gcs,
    'predict',
    '--model',
    f'{root}/job/model',
    '--input',
    f'{root}/instances.csv',
    '--output',
    f'{root}/beam/predictions.json',
    '--runner',
    'DirectRunner',
  )
  assert 'Predicted 3 records' in result.stderr
  names = _names(gcs, f'{prefix}/beam')
  assert names == {'predictions.json'}, 'a temporary shard left'
  lines = _text(gcs, f'{prefix}/beam/predictions.json').splitlines()
  predictions = [json.loads(line) for line in lines]
  assert len(predictions) == 3
  for prediction in predictions:
    assert prediction['label'] in ('setosa', 'versicolor', 'virginica')
    assert sum(prediction['scores']) == pytest.approx(1.0, abs=1e-4)


def test_evaluate_writes_its_results_to_gs(gcs, resumed):
  root, prefix, _ = resumed
  result = _tensorfx(
    gcs,
    'evaluate',
    '--module',
    'trainer',
    '--output',
    f'{root}/job',
    '--data-train',
    f'{root}/data/train.csv',
    '--data-eval',
    f'{root}/data/eval.csv',
    '--data-metadata',
    f'{root}/analysis',
    *_FLAGS,
  )
  summary = json.loads(result.stdout.strip().splitlines()[-1])
  assert summary['step'] == 60
  assert summary['checkpoint'] == f'{root}/job/checkpoints/ckpt-60'
  written = json.loads(_text(gcs, f'{prefix}/job/evaluations/ckpt-60.json'))
  assert written['results']['eval']['accuracy'] == pytest.approx(
    summary['results']['eval']['accuracy']
  )


def test_a_truncated_checkpoint_object_is_moved_aside(gcs, resumed):
  root, prefix, _ = resumed
  # A copy of the job, its newest checkpoint's data cut in half (as by an
  # upload that stopped).
  bucket = gcs.client().bucket(gcs.bucket)
  for name in _names(gcs, f'{prefix}/job'):
    if name.startswith('checkpoints/'):
      bucket.copy_blob(
        bucket.blob(f'{prefix}/job/{name}'), bucket, f'{prefix}/damaged/{name}'
      )
  data = bucket.blob(
    f'{prefix}/damaged/checkpoints/ckpt-60.data-00000-of-00001'
  )
  content = data.download_as_bytes()
  data.upload_from_string(content[: len(content) // 2])

  result = _train(gcs, root, 'damaged', 70)
  assert 'ckpt-60 is damaged (truncated data' in result.stderr
  assert 'Training from step 50 to 70' in result.stderr
  names = _names(gcs, f'{prefix}/damaged/checkpoints')
  assert {
    'ckpt-60.index.damaged',
    'ckpt-60.data-00000-of-00001.damaged',
  } <= names
  assert 'ckpt-70.index' in names
  state = _text(gcs, f'{prefix}/damaged/checkpoints/checkpoint')
  assert 'model_checkpoint_path: "ckpt-70"' in state


def test_evaluate_follow_catches_up_with_a_finished_job(gcs, resumed):
  root, prefix, _ = resumed
  result = _tensorfx(
    gcs,
    'evaluate',
    '--module',
    'trainer',
    '--output',
    f'{root}/job',
    '--follow',
    '--data-train',
    f'{root}/data/train.csv',
    '--data-eval',
    f'{root}/data/eval.csv',
    '--data-metadata',
    f'{root}/analysis',
    *_FLAGS,
  )
  results = [
    json.loads(line)
    for line in result.stdout.splitlines()
    if line.startswith('{')
  ]
  assert results and results[-1]['step'] == 60
  state = json.loads(_text(gcs, f'{prefix}/job/summaries/eval/evaluated.json'))
  assert state['evaluated'][-1] == 60
  assert state['best_step'] in state['evaluated']
  names = _names(gcs, f'{prefix}/job/best_model')
  assert 'saved_model.pb' in names and _atomic.MARKER not in names
