"""ModelTrainer on one machine: artifacts, resume, guards, bad data."""

import glob
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import DataError
from tensorfx import TrainingError
from tensorfx import data
from tensorfx import training
from tensorfx.models import nn

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


def _train(output, dataset, *extra, builder_type=nn.FeedForwardClassification):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', *extra), parse_job=True
  )
  builder = builder_type(args, dataset)
  model = training.ModelTrainer().train(builder, job)
  return builder, model


def _scalars(directory):
  """{tag: [(step, value)]} from the event files in `directory`."""
  found = {}
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.metadata.plugin_data.plugin_name == 'scalars':
          found.setdefault(value.tag, []).append(
            (event.step, float(tf.make_ndarray(value.tensor)))
          )
  return found


def _has_graph(directory):
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      if event.graph_def:
        return True
  return False


def test_output_layout(tmp_path, iris_dataset_factory):
  _, model = _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '20',
    '--log-interval-steps',
    '5',
  )
  assert tf.train.latest_checkpoint(tmp_path / 'checkpoints').endswith(
    'ckpt-20'
  )
  assert tf.saved_model.contains_saved_model(str(tmp_path / 'model'))
  assert (tmp_path / 'model' / 'assets.extra' / 'schema.yaml').exists()
  train = _scalars(tmp_path / 'summaries' / 'train')
  assert [s for s, _ in train['loss']] == [5, 10, 15, 20]
  assert all(v > 0 for _, v in train['examples_per_sec'])
  assert _has_graph(tmp_path / 'summaries' / 'train')
  evaluation = _scalars(tmp_path / 'summaries' / 'eval')
  assert {'loss', 'accuracy'} <= set(evaluation)
  assert evaluation['accuracy'][-1][0] == 20
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['global_step'] == 20
  assert job['arguments']['max_steps'] == 20
  assert job['config']['task']['type'] == 'chief'
  assert job['versions']['tensorflow'] == tf.__version__
  assert set(job['metrics']) == {'loss', 'accuracy'}
  assert 'commit' in job['source']
  assert len(model.predict(['6.3,3.3,6,2.5'])) == 1


def test_resume_continues_step_and_optimizer_state(
  tmp_path, iris_dataset_factory
):
  first, _ = _train(tmp_path, iris_dataset_factory(), '--max-steps', '10')
  trained = {v.name: v.numpy() for v in first.optimizer.variables}
  assert {'m/hidden1/kernel:0', 'v/hidden1/kernel:0'} <= set(trained)

  # Already at --max-steps: restores, trains nothing, still evaluates.
  resumed, _ = _train(tmp_path, iris_dataset_factory(), '--max-steps', '10')
  assert int(resumed.global_step.numpy()) == 10
  restored = {v.name: v.numpy() for v in resumed.optimizer.variables}
  assert set(restored) == set(trained)
  for name, value in trained.items():
    assert (restored[name] == value).all(), name
  assert int(resumed.optimizer.iterations.numpy()) == 10

  resumed, _ = _train(tmp_path, iris_dataset_factory(), '--max-steps', '25')
  assert int(resumed.global_step.numpy()) == 25
  assert int(resumed.optimizer.iterations.numpy()) == 25
  assert tf.train.latest_checkpoint(tmp_path / 'checkpoints').endswith(
    'ckpt-25'
  )


def test_epochs_bound_training_when_max_steps_is_unbounded(
  tmp_path, iris_dataset_factory
):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '0',
    '--epochs',
    '2',
    '--batch-size',
    '32',
  )
  # 2 x 120 rows in batches of 32: 7 full batches and one of 16.
  assert int(builder.global_step.numpy()) == 8


class _Exploding(nn.FeedForwardClassification):
  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    blown = tf.where(global_steps >= 6, float('nan'), 0.0)
    return loss + blown, optimizer


def test_non_finite_loss_stops_naming_the_step(tmp_path, iris_dataset_factory):
  # The 7th step (global step 6 -> 7) is the first with a NaN loss; the
  # loop stops there, between log lines (every 4 steps).
  with pytest.raises(TrainingError, match=r'loss is nan at step 7'):
    _train(
      tmp_path,
      iris_dataset_factory(),
      '--max-steps',
      '20',
      '--log-interval-steps',
      '4',
      builder_type=_Exploding,
    )
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'failed'
  assert 'step 7' in job['error']


def test_bad_training_row_names_file_and_line(tmp_path, iris_analysis):
  lines = (
    pathlib.Path(os.path.join(IRIS, 'data', 'train.csv'))
    .read_text()
    .splitlines()
  )
  lines[41] = 'setosa,5.0,oops,1.4,0.2'
  bad = tmp_path / 'train.csv'
  bad.write_text('\n'.join(lines) + '\n')
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=iris_analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(bad),
  )
  with pytest.raises(
    DataError,
    match=rf"{bad}:42: column 'sepal_width' is "
    'not a real number: oops',
  ):
    _train(tmp_path / 'out', dataset, '--max-steps', '50', '--no-shuffle')
  assert not (tmp_path / 'out' / 'model').exists()


def test_analyzes_when_no_metadata_is_given(tmp_path):
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
  )
  _train(tmp_path, dataset, '--max-steps', '2')
  analysis = tmp_path / 'analysis'
  assert (analysis / 'metadata.json').exists()
  assert (analysis / 'transform_fn').is_dir()
  assert dataset.metadata.instances == 120


def test_trainer_rejects_bad_arguments():
  with pytest.raises(
    ConfigurationError, match='config must be a Configuration'
  ):
    training.ModelTrainer(config={'task': 'chief'})


_ENDING_TASK = """
import glob, os, sys
import tensorflow as tf
from tensorfx.training._run import dispatch

@tf.function
def countdown(x):
  while x > 0:  # Converted by autograph: its source goes to a file.
    x -= 1
  return x

countdown(tf.constant(3))
print(len(glob.glob(os.path.join(sys.argv[1], '__autograph_generated_file*'))))

class Task:
  type = 'worker'

class Config:
  device = None
  task = Task

dispatch._exit_task(Config)
"""


def test_a_task_that_ends_by_exiting_leaves_no_autograph_files(tmp_path):
  # Workers, parameter servers and the evaluator end with os._exit, which
  # skips the atexit hook where TensorFlow removes these files.
  script = tmp_path / 'task.py'  # Autograph needs the source in a file.
  script.write_text(_ENDING_TASK)
  result = subprocess.run(
    [sys.executable, str(script), str(tmp_path)],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
    env=dict(os.environ, TMPDIR=str(tmp_path)),
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert int(result.stdout.split()[-1]) >= 1  # Written while it ran,
  assert not list(tmp_path.glob('__autograph_generated_file*'))  # gone.
