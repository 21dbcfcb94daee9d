"""The trainer's file I/O.

Any tf.io.gfile filesystem, Vertex AI's AIP_* dirs, and tuning metrics.
"""

import json

import tensorflow as tf
import yaml

from conftest import iris_args
from tensorfx import prediction
from tensorfx import training
from tensorfx.models import nn


def _builder(output, dataset, *extra):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', *extra), parse_job=True
  )
  return nn.FeedForwardClassification(args, dataset), job


def _train(output, dataset, *extra):
  builder, job = _builder(output, dataset, *extra)
  return training.ModelTrainer().train(builder, job)


def test_output_on_a_non_local_filesystem(iris_dataset_factory):
  """Everything goes through tf.io.gfile: TF's in-memory ram:// works."""
  output = 'ram://tensorfx-test/job'
  model = _train(output, iris_dataset_factory(), '--max-steps', '30')
  assert tf.io.gfile.exists(f'{output}/model/saved_model.pb')
  assert tf.io.gfile.glob(f'{output}/checkpoints/ckpt-30*')
  assert tf.io.gfile.glob(f'{output}/summaries/train/events.out.tfevents.*')
  with tf.io.gfile.GFile(f'{output}/job.yaml') as f:
    assert yaml.safe_load(f)['status'] == 'completed'
  reloaded = prediction.Model.load(f'{output}/model')
  assert (
    reloaded.predict(['6.3,3.3,6,2.5'])[0]['label']
    == model.predict(['6.3,3.3,6,2.5'])[0]['label']
  )
  # Resume on the same filesystem.
  _train(output, iris_dataset_factory(), '--max-steps', '40')
  assert tf.io.gfile.glob(f'{output}/checkpoints/ckpt-40*')


def test_vertex_directories_and_tuning_metrics(
  tmp_path, monkeypatch, iris_dataset_factory
):
  vertex = tmp_path / 'vertex'
  monkeypatch.setenv('AIP_MODEL_DIR', f'{vertex}/model/')
  monkeypatch.setenv('AIP_CHECKPOINT_DIR', f'{vertex}/checkpoints/')
  monkeypatch.setenv('AIP_TENSORBOARD_LOG_DIR', f'{vertex}/logs/')
  monkeypatch.setenv('CLOUD_ML_TRIAL_ID', '7')
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_TAG', 'accuracy')
  metrics_file = tmp_path / 'hypertune' / 'output.metrics'
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_FILE', str(metrics_file))
  output = tmp_path / 'job'
  _train(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '20',
    '--checkpoint-interval-steps',
    '10',
  )
  assert (vertex / 'model' / 'saved_model.pb').exists()
  assert tf.train.latest_checkpoint(str(vertex / 'checkpoints'))
  assert list((vertex / 'logs' / 'eval').glob('events.out.tfevents.*'))
  assert not (output / 'model').exists()
  assert (output / 'job.yaml').exists()
  entries = [json.loads(line) for line in metrics_file.read_text().splitlines()]
  # One report per evaluation (steps 10 and 20), of the study's metric.
  assert [e['global_step'] for e in entries] == ['10', '20']
  assert all(set(e) >= {'accuracy', 'trial'} for e in entries)
  assert entries[0]['trial'] == '7'
  # Evaluating and exporting find the job's directories where Vertex AI
  # put them, as training did.
  builder, _ = _builder(output, iris_dataset_factory())
  summary = training.ModelTrainer().evaluate(builder, str(output))
  assert summary['checkpoint'] == str(vertex / 'checkpoints' / 'ckpt-20')
  assert (output / 'evaluations' / 'ckpt-20.json').exists()
  (vertex / 'model').rename(vertex / 'trained-model')
  builder, _ = _builder(output, iris_dataset_factory())
  training.ModelTrainer().export(builder, str(output))
  assert (vertex / 'model' / 'saved_model.pb').exists()
  assert not (output / 'model').exists()
