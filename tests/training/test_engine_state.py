"""The engine's state: kept apart from the user's ModelBuilder.

It is checkpointed beside the builder's variables, in the layout earlier
releases wrote: their checkpoints still resume, evaluate and export.
"""

import os
import shutil

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2
import tf_keras
import yaml

from conftest import IRIS
from conftest import iris_args
from tensorfx import data
from tensorfx import training
from tensorfx.models import nn

RELEASE = os.path.join(
  os.path.dirname(os.path.abspath(__file__)), 'testdata', 'checkpoint-0.1.0'
)
# The resumed run (a module fixture) is made once, on one xdist worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_engine_state')]
# The arguments the release checkpoint was trained with (its README).
RELEASE_ARGS = (
  '--batch-size',
  '16',
  '--hidden-layers:1',
  '4',
  '--seed',
  '1',
  '--keep-checkpoints',
  '1',
  '--eval-interval-steps',
  '10',
)


class OwnAttributes(training.ModelBuilder):
  """A builder that makes everything it holds in `__init__`."""

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    self.hidden = tf_keras.layers.Dense(4, activation='relu')
    self.logits = tf_keras.layers.Dense(3)
    self.accuracy = tf_keras.metrics.SparseCategoricalAccuracy()
    self.adam = tf_keras.optimizers.Adam(0.01)

  def build_inference(self, inputs, training):
    return self.logits(self.hidden(inputs['X']))

  def build_training(self, global_steps, inputs, inferences):
    loss = tf.reduce_mean(
      tf_keras.losses.sparse_categorical_crossentropy(
        inputs['Y'], inferences, from_logits=True
      )
    )
    return loss, self.adam

  def build_evaluation(self, inputs, outputs):
    self.accuracy.update_state(inputs['Y'], outputs['outputs'])
    return {'accuracy': self.accuracy}


def _attributes(builder):
  # TensorFlow's own tracking bookkeeping (`_self_*`) is not the model's.
  return {
    name: value
    for name, value in vars(builder).items()
    if not name.startswith('_self_')
  }


def test_train_leaves_the_builder_as_it_was_made(
  tmp_path, iris_dataset_factory
):
  args, job = training.ModelArguments.parse(
    iris_args(tmp_path, '--max-steps', '6', '--eval-interval-steps', '3'),
    parse_job=True,
  )
  builder = OwnAttributes(args, iris_dataset_factory())
  made = _attributes(builder)
  model = training.ModelTrainer().train(builder, job)
  assert model.predict(['6.3,3.3,6,2.5'])
  after = _attributes(builder)
  assert sorted(after) == sorted(made)
  changed = [name for name in made if after[name] is not made[name]]
  assert not changed, f'train() replaced attributes of the builder: {changed}'
  # What the engine keeps stays readable through the builder's API.
  assert int(builder.global_step.numpy()) == 6
  assert isinstance(builder.strategy, tf.distribute.Strategy)
  assert int(builder.adam.iterations.numpy()) == 6


def _object_paths(prefix):
  """Every path of the checkpoint's object graph, e.g. `model/_layers/0`."""
  reader = tf.train.load_checkpoint(prefix)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'))
  paths, stack = set(), [(0, '')]
  while stack:
    node, path = stack.pop()
    for child in graph.nodes[node].children:
      child_path = f'{path}/{child.local_name}' if path else child.local_name
      if child_path not in paths:
        paths.add(child_path)
        stack.append((child.node_id, child_path))
  return paths


def _release_output(directory):
  output = os.path.join(directory, 'output')
  shutil.copytree(RELEASE, output)
  return output


def _release_builder(output, *extra):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, *RELEASE_ARGS, *extra), parse_job=True
  )
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=os.path.join(output, 'analysis'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
    eval=os.path.join(IRIS, 'data', 'eval.csv'),
  )
  return nn.FeedForwardClassification(args, dataset), job


@pytest.fixture(scope='module')
def resumed(tmp_path_factory):
  """The release checkpoint (step 20) trained on to step 30."""
  output = _release_output(tmp_path_factory.mktemp('release'))
  builder, job = _release_builder(output, '--max-steps', '30')
  model = training.ModelTrainer().train(builder, job)
  return output, builder, model


@pytest.mark.slow
def test_release_checkpoint_resumes_with_its_optimizer_state(resumed):
  output, builder, model = resumed
  assert model.predict(['6.3,3.3,6,2.5'])[0]['label'] in (
    'setosa',
    'versicolor',
    'virginica',
  )
  with open(os.path.join(output, 'job.yaml')) as f:
    record = yaml.safe_load(f)
  assert record['status'] == 'completed' and record['global_step'] == 30
  # 20 steps restored, 10 taken: a fresh optimizer would count 10.
  assert int(builder.optimizer.iterations.numpy()) == 30


@pytest.mark.slow
def test_checkpoints_keep_the_release_layout(resumed):
  output = resumed[0]
  release = _object_paths(os.path.join(RELEASE, 'checkpoints', 'ckpt-20'))
  written = _object_paths(os.path.join(output, 'checkpoints', 'ckpt-30'))
  # The engine's state sits where the release kept it, beside the model's
  # variables: checkpoints restore from one release to the other both ways.
  assert 'model/global_step' in release
  assert 'model/_training_optimizer' in release
  # Beside them, the input's position (exact resume): a checkpoint
  # without it resumes the model, the input afresh.
  assert written == release | {'input_position'}


def test_release_checkpoint_evaluates_as_it_was_recorded(tmp_path):
  output = _release_output(tmp_path)
  builder, _ = _release_builder(output)
  summary = training.ModelTrainer().evaluate(builder, output)
  with open(os.path.join(RELEASE, 'job.yaml')) as f:
    recorded = yaml.safe_load(f)['metrics']
  assert summary['step'] == 20
  results = summary['results']['eval']
  assert results['loss'] == pytest.approx(recorded['loss'], rel=1e-5)
  assert results['accuracy'] == pytest.approx(recorded['accuracy'])
