"""KerasModelBuilder: models written for Keras fit, trained by tensorfx.

One device here; mirrored replicas and a parameter-server cluster in
test_keras_distributed.py. The iris models are in keras_iris.py.
"""

import csv
import math
import os
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import yaml

from conftest import IRIS
from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx import training
from tensorfx.models import KerasModelBuilder
from tensorfx.prediction import Model
from tensorfx.training._builderbase import engine_of
from tensorfx.training._callbacks import CallbackList
from tensorfx.training._state import EngineState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_iris

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_keras')]

INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']
LABELS = ['virginica', 'setosa', 'versicolor']
STEPS = 200


def _train(builder_class, output, dataset, callbacks=(), *flags):
  args, job = training.ModelArguments.parse(
    iris_args(
      output,
      '--max-steps',
      str(STEPS),
      '--batch-size',
      '32',
      '--seed',
      '1',
      '--eval-interval-steps',
      '50',
      '--log-interval-steps',
      '25',
      *flags,
    ),
    parse_job=True,
  )
  builder = builder_class(args, dataset)
  model = training.ModelTrainer(callbacks=list(callbacks)).train(builder, job)
  return builder, model


def training_optimizer(builder):
  # The optimizer the engine keeps (and checkpoints) for the builder.
  return engine_of(builder).training_optimizer


def _metrics(output):
  with open(os.path.join(output, 'job.yaml')) as f:
    return yaml.safe_load(f)['metrics']


@pytest.fixture(scope='module')
def functional_run(tmp_path_factory, iris_dataset_factory):
  """The functional model, trained with Keras callbacks in the list."""
  root = tmp_path_factory.mktemp('keras-functional')
  epochs = root / 'epochs.csv'
  callbacks = [
    tf_keras.callbacks.CSVLogger(str(epochs)),
    # A new rate at each epoch's begin: 0.02, 0.01, 0.0067, ...
    tf_keras.callbacks.LearningRateScheduler(
      lambda epoch, lr: 0.02 / (epoch + 1)
    ),
    tf_keras.callbacks.BackupAndRestore(str(root / 'unused'), save_freq=50),
  ]
  builder, model = _train(
    keras_iris.FunctionalIris,
    root / 'output',
    iris_dataset_factory(),
    callbacks,
    '--checkpoint-interval-secs',
    '3600',
    '--keep-checkpoints',
    '10',
  )
  return root, builder, model


def test_a_functional_fit_model_trains_and_serves_raw_instances(functional_run):
  root, builder, model = functional_run
  metrics = _metrics(root / 'output')
  # The compiled metric, evaluated by tensorfx beside its loss.
  assert metrics['accuracy'] >= 0.9
  assert set(metrics) == {'loss', 'accuracy'}
  predictions = model.predict(INSTANCES)
  assert [p['label'] for p in predictions] == LABELS
  for p in predictions:
    assert sorted(p['classes']) == sorted(LABELS)
    assert p['classes'][int(np.argmax(p['scores']))] == p['label']
    assert math.isclose(sum(p['scores']), 1.0, rel_tol=1e-4)
  # The Keras model's own variables are what was trained and checkpointed.
  assert builder.keras_model.optimizer is training_optimizer(builder)
  assert int(builder.keras_model.optimizer.iterations.numpy()) == STEPS


def test_the_exported_model_reloads_in_a_fresh_load(functional_run):
  root, _, _ = functional_run
  reloaded = Model.load(str(root / 'output' / 'model'))
  assert [p['label'] for p in reloaded.predict(INSTANCES)] == LABELS


def test_csv_logger_writes_an_epoch_per_validation(functional_run):
  root, _, _ = functional_run
  with open(root / 'epochs.csv') as f:
    rows = list(csv.DictReader(f))
  # Validations at steps 50, 100, 150 and 200.
  assert [int(r['epoch']) for r in rows] == [0, 1, 2, 3]
  assert {'loss', 'val_loss', 'val_accuracy'} <= set(rows[0])
  assert float(rows[-1]['val_accuracy']) >= 0.9
  assert float(rows[-1]['val_loss']) < float(rows[0]['val_loss'])


def test_learning_rate_scheduler_sets_the_rate_of_each_epoch(functional_run):
  _, builder, _ = functional_run
  # Four epochs ended; the fifth began with 0.02 / 5.
  rate = float(builder.keras_model.optimizer.learning_rate.numpy())
  assert rate == pytest.approx(0.02 / 5)


def test_backup_and_restore_saves_at_its_frequency(functional_run):
  root, _, _ = functional_run
  checkpoints = root / 'output' / 'checkpoints'
  steps = sorted(
    int(p.name[len('ckpt-') : -len('.index')])
    for p in checkpoints.glob('ckpt-*.index')
  )
  # --checkpoint-interval-secs 3600: only BackupAndRestore's saves and
  # the final one.
  assert steps == [50, 100, 150, 200]


def test_a_subclassed_model_with_logits_and_reduce_lr_on_plateau(
  tmp_path, iris_dataset_factory
):
  # min_delta 10: no validation counts as an improvement after the first.
  plateau = tf_keras.callbacks.ReduceLROnPlateau(
    monitor='val_loss', factor=0.5, patience=1, min_delta=10.0
  )
  builder, model = _train(
    keras_iris.SubclassedIris,
    tmp_path / 'out',
    iris_dataset_factory(),
    [plateau],
  )
  metrics = _metrics(tmp_path / 'out')
  assert metrics['acc'] >= 0.9
  predictions = model.predict(INSTANCES)
  assert [p['label'] for p in predictions] == LABELS
  # Logits out of the model, probabilities out of the exported one.
  for p in predictions:
    assert math.isclose(sum(p['scores']), 1.0, rel_tol=1e-4)
    assert min(p['scores']) >= 0.0
  # Validations 2, 3 and 4 did not improve: three halvings.
  rate = float(builder.keras_model.optimizer.learning_rate.numpy())
  assert rate == pytest.approx(0.02 / 8)
  # The kernel regularizer's penalty, added to the training loss.
  assert len(builder.keras_model.losses) == 1


@pytest.mark.slow
def test_a_second_run_resumes_the_keras_model_and_its_optimizer(
  tmp_path, iris_dataset_factory
):
  runs = []
  for steps in ('20', '40'):
    args, job = training.ModelArguments.parse(
      iris_args(tmp_path / 'out', '--max-steps', steps, '--seed', '1'),
      parse_job=True,
    )
    # Training data only: nothing to validate.
    builder = keras_iris.FunctionalIris(
      args, iris_dataset_factory(train=os.path.join(IRIS, 'data', 'train.csv'))
    )
    training.ModelTrainer().train(builder, job)
    runs.append(builder)
  first, second = (b.keras_model for b in runs)
  # The optimizer's state came back with the weights: 20 + 20 updates.
  assert int(second.optimizer.iterations.numpy()) == 40
  assert int(runs[1].global_step.numpy()) == 40
  assert not np.allclose(first.get_weights()[0], second.get_weights()[0])


REGRESSION_FEATURES = """
features:
- name: X
  type: concat
  features:
  - name: sepal_length
    type: zscore
  - name: petal_length
    type: zscore
- name: Y
  type: target
  fields: petal_width
"""


class PetalWidth(KerasModelBuilder):
  """A functional Keras regressor."""

  def build_model(self, inputs):
    hidden = tf_keras.layers.Dense(16, activation='relu')(inputs['X'])
    value = tf_keras.layers.Dense(1)(hidden)
    model = tf_keras.Model(inputs, value)
    model.compile(
      optimizer=tf_keras.optimizers.Adam(0.02),
      loss='mse',
      metrics=[tf_keras.metrics.MeanAbsoluteError(name='mae')],
    )
    return model


@pytest.mark.slow
def test_a_keras_regressor_trains_and_serves_values(tmp_path):
  features = tmp_path / 'features.yaml'
  features.write_text(REGRESSION_FEATURES)
  argv = iris_args(
    tmp_path / 'out', '--max-steps', '300', '--seed', '3', '--batch-size', '32'
  )
  argv[argv.index('--data-features') + 1] = str(features)
  args, job = training.ModelArguments.parse(argv, parse_job=True)
  dataset = data.CsvDataSet(
    args.data_schema,
    train=args.data_train,
    eval=args.data_eval,
    features=args.data_features,
  )
  model = training.ModelTrainer().train(PetalWidth(args, dataset), job)
  assert _metrics(tmp_path / 'out')['mae'] < 0.25
  # species,sepal_length,sepal_width,petal_length[,petal_width]: the
  # target column may be left out.
  values = [
    p['value']
    for p in model.predict(['setosa,5.0,3.4,1.5', 'virginica,6.7,3.0,5.2'])
  ]
  assert values[0] == pytest.approx(0.2, abs=0.25)
  assert values[1] == pytest.approx(2.1, abs=0.4)


class Uncompiled(KerasModelBuilder):
  def build_model(self, inputs):
    return keras_iris.Classifier(3)


class NotAModel(KerasModelBuilder):
  def build_model(self, inputs):
    return tf_keras.layers.Dense(3)


@pytest.mark.parametrize(
  'builder_class, message',
  [
    (Uncompiled, 'must return a compiled model: call model.compile('),
    (NotAModel, 'must return a tf_keras.Model'),
  ],
)
def test_build_model_must_return_a_compiled_tf_keras_model(
  builder_class, message, iris_dataset_factory
):
  builder = builder_class(
    training.ModelArguments.parse([]), iris_dataset_factory()
  )
  with pytest.raises(ConfigurationError, match=message.replace('(', r'\(')):
    builder.build_graph_interfaces(training.Configuration.local())


class Frozen(KerasModelBuilder):
  """A pretrained-style hidden layer, frozen as Keras users freeze it."""

  def build_model(self, inputs):
    model = keras_iris.functional_model(inputs)
    model.layers[1].trainable = False
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')
    return model


def test_a_frozen_layer_stays_out_of_the_trained_variables(
  iris_dataset_factory,
):
  builder = Frozen(training.ModelArguments.parse([]), iris_dataset_factory())
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  frozen = {id(v) for v in builder.keras_model.layers[1].weights}
  trained = {id(v) for v in interface.variables}
  assert len(frozen) == 2
  assert not frozen & trained
  assert len(trained) == 2  # the output layer's kernel and bias


def test_terminate_on_nan_stops_the_run(tmp_path):
  callback = training.KerasCallback(tf_keras.callbacks.TerminateOnNaN())
  optimizer = tf_keras.optimizers.SGD(0.1)
  context = training.RunContext(
    builder=_Trained(), engine=_engine(optimizer), output=str(tmp_path)
  )
  callback.set_context(context)
  callback.on_train_begin({'step': 0})
  callback.on_step_end(10, {'loss': 0.5})
  assert not context.stop_requested
  callback.on_step_end(20, {'loss': float('nan')})
  assert context.stop_requested
  assert 'TerminateOnNaN' in context.stop_reason


def test_a_keras_callback_drives_the_optimizer_of_any_builder(tmp_path):
  # Not a Keras model: the callback's model holds the training optimizer.
  optimizer = tf_keras.optimizers.SGD(0.1)
  context = training.RunContext(
    builder=_Trained(), engine=_engine(optimizer), output=str(tmp_path)
  )
  plateau = tf_keras.callbacks.ReduceLROnPlateau(
    monitor='val_loss', factor=0.1, patience=1
  )
  callback = training.KerasCallback(plateau)
  callback.set_context(context)
  callback.on_train_begin({'step': 0})
  for step, loss in ((10, 1.0), (20, 1.0)):
    callback.on_evaluate_end(
      step,
      training.EvaluationResults(
        step,
        {'eval': {'loss': loss}},
        {'eval': 30},
        {'eval': 0.1},
        ('eval', 'loss', 'min'),
      ),
    )
  assert float(optimizer.learning_rate.numpy()) == pytest.approx(0.01)


def test_keras_callbacks_in_the_list_are_adapted_and_others_refused(tmp_path):
  context = training.RunContext(builder=None, output=str(tmp_path))
  callbacks = CallbackList([tf_keras.callbacks.TerminateOnNaN()], context)
  assert isinstance(callbacks.callbacks[0], training.KerasCallback)
  with pytest.raises(ValueError, match='tensorfx writes TensorBoard'):
    training.KerasCallback(tf_keras.callbacks.TensorBoard())
  with pytest.raises(TypeError, match='tf_keras callback'):
    training.KerasCallback(object())


class _Trained:
  """A builder as a callback sees it: its global step."""

  def __init__(self):
    self.global_step = tf.Variable(0, dtype=tf.int64)


def _engine(optimizer):
  """A run's engine state as a callback sees it: the training optimizer."""
  engine = EngineState()
  engine.training_optimizer = optimizer
  return engine
