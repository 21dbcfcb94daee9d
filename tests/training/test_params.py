"""train_from_params and test_from_params: tfutils' interface on the engine.

A model written in tfutils' style (tfutils_model.py) is trained, validated
on two targets that compute different things, resumed by its exp_id,
loaded into another experiment by exp_id and tested; every result is read
back from the MLflow store, as a tfutils user read MongoDB.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from conftest import ROOT
from tensorfx import ConfigurationError
from tensorfx import HighLossError
from tensorfx import training
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _optimizer
from tensorfx.tfutils import _store
from test_tracking import postgres_uri  # noqa: F401  (a fixture)
import tfutils_model as tm

# On one worker: the job is trained once (module fixture `base`).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_params')]

DB, COLL = 'blobs', 'mlp'


def _save(exp_id, **extra):
  return {
    'dbname': DB,
    'collname': COLL,
    'exp_id': exp_id,
    'save_metrics_freq': 10,
    'save_valid_freq': 20,
    'cache_filters_freq': 20,
    'save_filters_freq': 40,
    'cache_max_num': 2,
    **extra,
  }


def _model(**kwargs):
  return {'func': tm.mlp, 'hidden': 16, **kwargs}


def _train(num_steps, **extra):
  return {
    'data_params': {'func': tm.blobs, 'batch_size': 32, 'split': 'train'},
    'targets': {'func': tm.train_accuracy},
    'num_steps': num_steps,
    **extra,
  }


LEARNING_RATE = {
  'func': tf.compat.v1.train.exponential_decay,
  'learning_rate': 0.1,
  'decay_steps': 20,
  'decay_rate': 0.5,
}

VALIDATION = {
  'top1': {
    'data': {'func': tm.blobs, 'batch_size': 50, 'split': 'valid'},
    'targets': {'func': tm.top1},
  },
  'predictions': {
    'data': {'func': tm.blobs, 'batch_size': 64, 'split': 'valid'},
    'targets': {'func': tm.confidence},
    'num_steps': 3,
    'online_agg_func': tm.count_predictions,
    'agg_func': tm.summarize_predictions,
  },
}


def _client(home):
  """A client of the default store (in TFUTILS_HOME)."""
  from mlflow.tracking import MlflowClient

  return MlflowClient(f'sqlite:///{home}/mlruns.db')


def _runs(client, **tags):
  experiment = client.get_experiment_by_name(f'{DB}/{COLL}')
  if experiment is None:
    return []
  conditions = ' and '.join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
  return client.search_runs(
    [experiment.experiment_id],
    conditions,
    order_by=['attributes.start_time ASC'],
  )


def _history(client, run, key):
  return [
    (m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)
  ]


@pytest.fixture(scope='module')
def home(tmp_path_factory):
  """TFUTILS_HOME: the default store and experiment directories."""
  path = tmp_path_factory.mktemp('tfutils_home')
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv('TFUTILS_HOME', str(path))
    patch.delenv('MLFLOW_TRACKING_URI', raising=False)
    yield path


@pytest.fixture(scope='module')
def base(home):
  """The experiment 'base', trained to step 40."""
  result = training.train_from_params(
    save_params=_save('base'),
    model_params=_model(),
    train_params=_train(40),
    learning_rate_params=LEARNING_RATE,
    validation_params=VALIDATION,
  )
  return result


def test_trains_and_validates_two_targets_computing_different_things(
  base, home
):
  assert base['exp_id'] == 'base' and base['step'] == 40
  # The experiment's directory, where tfutils cached it.
  assert base['output'] == str(home / DB / COLL / 'base')
  validation = base['validation']
  assert set(validation) == {'top1', 'predictions'}
  assert set(validation['top1']) == {'top1'}
  # tfutils' default agg_func: the per-batch values (300 examples / 50).
  assert len(validation['top1']['top1']) == 6
  assert np.mean(validation['top1']['top1']) > 0.8
  predictions = validation['predictions']
  assert set(predictions) == {'confidence', 'predicted_share'}
  assert 0.5 < predictions['confidence'] <= 1.0
  # 3 batches of 64: the share of each class predicted, about the prior.
  shares = predictions['predicted_share']
  assert sum(shares) == pytest.approx(1.0)
  assert shares[0] > shares[2]
  # The model's TensorFlow 1 variables left no trace in the process's graph
  # collections, where later graph code (tf.Transform) would find them.
  collected = tf.compat.v1.get_collection(
    tf.compat.v1.GraphKeys.GLOBAL_VARIABLES
  )
  assert not [v for v in collected if v.name.startswith(('hidden/', 'logits/'))]


def test_the_store_holds_what_tfutils_kept_in_its_database(base, home):
  client = _client(home)
  runs = _runs(client, **{'tfutils.exp_id': 'base'})
  assert len(runs) == 1
  run = runs[0]
  assert run.info.run_id == base['run_id']
  assert run.info.run_name == 'base' and run.info.status == 'FINISHED'
  # Validation first (tfutils' default), then every save_valid_freq.
  assert [s for s, _ in _history(client, run, 'top1/top1')] == [0, 20, 40]
  assert [s for s, _ in _history(client, run, 'predictions/confidence')] == [
    0,
    20,
    40,
  ]
  # Training records every save_metrics_freq steps, the extra targets too.
  assert [s for s, _ in _history(client, run, 'train/loss')] == [10, 20, 30, 40]
  accuracy = _history(client, run, 'train/train_accuracy')
  assert [s for s, _ in accuracy] == [10, 20, 30, 40]
  assert all(0.0 <= v <= 1.0 for _, v in accuracy)
  rates = [v for _, v in _history(client, run, 'train/learning_rate')]
  # exponential_decay of the global step, 0.1 * 0.5 ** (step / 20), as
  # the last step of each interval used it (its global step was one less).
  assert rates == pytest.approx(
    [0.1 * 0.5 ** ((s - 1) / 20) for s in (10, 20, 30, 40)], rel=1e-4
  )
  # The parameters, queryable as tfutils' were.
  assert run.data.params['tfutils.model_params.func'] == 'tfutils_model.mlp'
  assert run.data.params['tfutils.model_params.hidden'] == '16'
  assert run.data.params['tfutils.model_params.seed'] == '0'  # The default.
  assert run.data.params['tfutils.train_params.thres_loss'] == '100.0'
  model = json.loads(run.data.tags['tfutils.model'])
  assert model['kwargs'] == {'hidden': 16}
  assert ['hidden/weights', [4, 16], 'float32'] in model['variables']
  assert json.loads(run.data.tags['tfutils.model_config']) == {
    'hidden': 16,
    'activation': 'relu',
  }
  # Filters kept for good: the initial ones and every save_filters_freq.
  checkpoints = os.path.join(base['output'], 'checkpoints')
  saved = json.loads(run.data.tags['tfutils.saved_filters'])
  assert [os.path.basename(p) for p in saved] == ['ckpt-0', 'ckpt-40']
  for path in saved:
    assert tf.io.gfile.exists(path + '.index')
  # The cache keeps cache_max_num recent checkpoints.
  assert tf.train.get_checkpoint_state(checkpoints).all_model_checkpoint_paths[
    -2:
  ] == [
    os.path.join(checkpoints, 'ckpt-20'),
    os.path.join(checkpoints, 'ckpt-40'),
  ]


def test_the_exported_model_takes_raw_instances(base):
  model = base['model']
  assert model.features == ['images']  # The labels are the loss's.
  data = tm.blobs_arrays('test')
  examples = [
    tf.train.Example(
      features=tf.train.Features(
        feature={
          'images': tf.train.Feature(
            float_list=tf.train.FloatList(value=image.reshape(-1))
          )
        }
      )
    )
    for image in data['images'][:50]
  ]
  predicted = np.argmax([p['outputs'] for p in model.predict(examples)], axis=1)
  assert np.mean(predicted == data['labels'][:50]) > 0.8


def test_a_different_model_on_an_existing_exp_id_fails_clearly(base, home):
  with pytest.raises(
    ConfigurationError,
    match=r"exp_id 'base' was trained with another model "
    r".*model_params\['hidden'\] is 32, was 16",
  ):
    training.train_from_params(
      save_params=_save('base'),
      model_params=_model(hidden=32),
      train_params=_train(60),
      learning_rate_params=LEARNING_RATE,
    )
  # Same variables, another computation: the fingerprint tells too.
  with pytest.raises(
    ConfigurationError,
    match=r"model_params\['activation'\] is 'tanh', was "
    'None',
  ):
    training.train_from_params(
      save_params=_save('base'),
      model_params=_model(activation='tanh'),
      train_params=_train(60),
      learning_rate_params=LEARNING_RATE,
    )
  # Nothing of the experiment was touched.
  (run,) = _runs(_client(home), **{'tfutils.exp_id': 'base'})
  assert run.info.status == 'FINISHED'
  assert tf.train.latest_checkpoint(
    os.path.join(base['output'], 'checkpoints')
  ).endswith('ckpt-40')


class _FirstValues(training.Callback):
  """Keeps the model's variables as training begins."""

  def on_train_begin(self, logs):
    self.step = logs['step']
    self.values = {
      v.name.split(':')[0]: v.numpy()
      for v in self.context.builder.model_variables.created
    }


def test_a_new_experiment_loads_another_by_exp_id(base, home):
  first = _FirstValues()
  result = training.train_from_params(
    save_params=_save('finetune'),
    model_params=_model(),
    train_params=_train(60),
    learning_rate_params={'learning_rate': 0.05},
    optimizer_params={
      'optimizer': tf.compat.v1.train.AdamOptimizer,
      'beta1': 0.8,
    },
    validation_params={'top1': VALIDATION['top1']},
    load_params={
      'exp_id': 'base',
      'query': {'step': 40},
      'to_restore': '^hidden/',
    },
    callbacks=[first],
  )
  loaded = _checkpoint_values(base['output'], 'ckpt-40')
  # to_restore: the hidden layer came from base, the logits are fresh.
  np.testing.assert_array_equal(
    first.values['hidden/weights'], loaded['hidden/weights']
  )
  assert not np.array_equal(
    first.values['logits/weights'], loaded['logits/weights']
  )
  # The global step too (tfutils' restore_global_step default).
  assert first.step == 40 and result['step'] == 60
  assert np.mean(result['validation']['top1']['top1']) > 0.8
  # A loaded model's initial filters are not kept (as in tfutils).
  assert not tf.io.gfile.exists(
    os.path.join(result['output'], 'checkpoints', 'saved', 'ckpt-0.index')
  )
  client = _client(home)
  (run,) = _runs(client, **{'tfutils.exp_id': 'finetune'})
  # Loaded at step 40: no validation before the first step (not step 0).
  assert [s for s, _ in _history(client, run, 'top1/top1')] == [60]
  assert run.data.params['tfutils.optimizer_params.optimizer'] == (
    'tensorflow.python.training.adam.AdamOptimizer'
  )


def _checkpoint_values(output, name):
  """Variable name -> value, of the checkpoint `name` of an experiment."""
  from tensorfx.training._checkpoints import restore as _restore

  reader = tf.train.load_checkpoint(os.path.join(output, 'checkpoints', name))
  return {
    variable: reader.get_tensor(keys[0])
    for variable, keys in _restore.checkpoint_names(reader).items()
  }


def test_test_from_params_evaluates_and_records_a_trained_experiment(
  base, home
):
  result = training.test_from_params(
    load_params={
      'dbname': DB,
      'collname': COLL,
      'exp_id': 'base',
      'query': {'step': 40},
    },
    model_params=_model(),
    validation_params={
      'test': {
        'data': {'func': tm.blobs, 'batch_size': 40, 'split': 'test'},
        'targets': {'func': tm.top1},
      },
      'test_loss': {
        'data': {'func': tm.blobs, 'batch_size': 200, 'split': 'test'}
      },
    },
    save_params={'dbname': DB, 'collname': COLL, 'exp_id': 'base_test'},
  )
  assert result['step'] == 40 and result['validates'] == 'base'
  assert result['checkpoint'].endswith('ckpt-40')
  # tfutils' default agg_func: one value per batch (200 examples / 40).
  top1 = result['results']['test']['top1']
  assert len(top1) == 5 and np.mean(top1) > 0.8
  # Without a targets function: the loss (tfutils' default target).
  (loss,) = result['results']['test_loss']['loss']
  assert 0 < loss < 1.0
  client = _client(home)
  (run,) = _runs(client, **{'tfutils.exp_id': 'base_test'})
  assert run.info.run_id == result['run_id']
  assert run.data.tags['tensorfx.action'] == 'evaluate'
  assert run.data.tags['tfutils.validates'] == 'base'
  # The store holds numbers: the mean of the list.
  assert _history(client, run, 'test/top1') == [
    (40, pytest.approx(np.mean(top1)))
  ]
  assert os.path.exists(
    os.path.join(base['output'], 'evaluations', 'ckpt-40.json')
  )


def test_the_same_exp_id_resumes_from_its_latest_checkpoint(base, home):
  # After the tests that read 'base' at step 40: this one trains it on.
  first = _FirstValues()
  result = training.train_from_params(
    save_params=_save('base'),
    model_params=_model(),
    train_params=_train(60),
    learning_rate_params=LEARNING_RATE,
    validation_params=VALIDATION,
    callbacks=[first],
  )
  assert first.step == 40 and result['step'] == 60
  loaded = _checkpoint_values(base['output'], 'ckpt-40')
  np.testing.assert_array_equal(
    first.values['logits/weights'], loaded['logits/weights']
  )
  client = _client(home)
  (run,) = _runs(
    client, **{'tfutils.exp_id': 'base', 'tensorfx.action': 'train'}
  )
  assert run.info.run_id == base['run_id']  # The same run, continued.
  # Not validated again at 40, where it resumed (tfutils: at step 0 only).
  assert [s for s, _ in _history(client, run, 'top1/top1')] == [0, 20, 40, 60]
  assert [s for s, _ in _history(client, run, 'train/loss')][-2:] == [50, 60]


def test_thres_loss_is_tfutils_default(tmp_path, home):
  # No store: do_save False; the experiment's directory is cache_dir.
  with pytest.raises(HighLossError, match='above --thres-loss 100'):
    training.train_from_params(
      save_params=_save(
        'diverges', do_save=False, cache_dir=str(tmp_path / 'diverges')
      ),
      model_params=_model(),
      train_params=_train(20),
      learning_rate_params={'learning_rate': 1e4},
      optimizer_params={'optimizer': 'sgd'},
      loss_params={
        'pred_targets': 'labels',
        'loss_func': _squared_error,
        'agg_func': tf.reduce_sum,
      },
    )
  job = (tmp_path / 'diverges' / 'job.yaml').read_text()
  assert 'status: failed' in job and 'HighLossError' in job
  assert not _runs(_client(home), **{'tfutils.exp_id': 'diverges'})


def _squared_error(outputs, labels):
  return tf.square(outputs - tf.one_hot(labels, 3))


@pytest.mark.slow
def test_a_postgresql_store(tmp_path, postgres_uri):
  result = training.train_from_params(
    save_params=_save(
      'pg',
      host=postgres_uri,
      save_metrics_freq=5,
      cache_dir=str(tmp_path / 'pg'),
    ),
    model_params=_model(),
    train_params=_train(10),
    learning_rate_params={'learning_rate': 0.05},
    validation_params={'top1': VALIDATION['top1']},
  )
  from mlflow.tracking import MlflowClient

  client = MlflowClient(postgres_uri)
  (run,) = _runs(client, **{'tfutils.exp_id': 'pg'})
  assert run.info.run_id == result['run_id']
  assert [s for s, _ in _history(client, run, 'train/train_accuracy')] == [
    5,
    10,
  ]
  assert [s for s, _ in _history(client, run, 'top1/top1')] == [0, 10]


_MIRRORED = textwrap.dedent('''
    import json, os, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import tfutils_model as tm
    from tensorfx import training


    class Mirrored(training.Configuration):
      """One machine, two replicas: MirroredStrategy over the 2 CPUs."""

      def create_device_setter(self, args=None):
        if getattr(self, '_mirrored', None) is None:
          self._mirrored = tf.distribute.MirroredStrategy(
              ['/cpu:0', '/cpu:1'])
        return self._mirrored


    result = training.train_from_params(
        save_params={'dbname': 'd', 'collname': 'c', 'exp_id': 'mirrored',
                     'do_save': False, 'cache_dir': sys.argv[1],
                     'save_metrics_freq': 10, 'save_valid_freq': 10},
        model_params={'func': tm.mlp},
        train_params={'data_params': {'func': tm.blobs, 'batch_size': 32},
                      'targets': {'func': tm.train_accuracy},
                      'num_steps': 20},
        learning_rate_params={'learning_rate': 0.1},
        validation_params={'top1': {
            'data': {'func': tm.blobs, 'batch_size': 50, 'split': 'valid'},
            'targets': {'func': tm.top1}, 'num_steps': 2}},
        config=Mirrored.local())
    print(json.dumps({'step': result['step'],
                      'validation': result['validation']}))
''')


@pytest.mark.release
@pytest.mark.slow
def test_two_mirrored_replicas(tmp_path):
  # Logical devices are set before TensorFlow starts: a fresh process. Each
  # replica calls the model function (and the targets) on its half batch.
  env = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join(
      [ROOT, os.path.dirname(os.path.abspath(__file__))]
      + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    ),
  )
  done = subprocess.run(
    [sys.executable, '-c', _MIRRORED, str(tmp_path / 'mirrored')],
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert done.returncode == 0, done.stderr[-4000:]
  result = json.loads(done.stdout.strip().splitlines()[-1])
  assert result['step'] == 20
  assert np.mean(result['validation']['top1']['top1']) > 0.8


@pytest.mark.parametrize(
  'params, message',
  [
    (
      {'train_params': {'data_params': {'batch_size': 32}}},
      r"train_params\['data_params'\]\['func'\] is required: the function "
      'that makes the training data',
    ),
    (
      {'train_params': {'data_params': {'func': tm.blobs}}},
      r"train_params\['data_params'\]\['batch_size'\] is required",
    ),
    ({'train_params': {}}, r"train_params\['data_params'\] is required"),
    (
      {'train_params': {'data_params': {'func': 'blobs', 'batch_size': 2}}},
      r"train_params\['data_params'\]\['func'\] must be a function",
    ),
    (
      {'train_params': dict(_train(5), num_step=5)},
      r"train_params\['num_step'\] is not a key tensorfx reads. Did you "
      "mean 'num_steps'\\?",
    ),
    (
      {'train_params': dict(_train(5), thres_loss=-1)},
      r"train_params\['thres_loss'\] must be a positive number",
    ),
    (
      {'save_params': {'dbname': DB, 'collname': COLL}},
      r"save_params\['exp_id'\] is required",
    ),
    (
      {'save_params': dict(_save('x'), save_valid_freq=0)},
      r"save_params\['save_valid_freq'\] must be a positive integer",
    ),
    (
      {'save_params': dict(_save('x'), host='localhost', port='5000')},
      r"save_params\['port'\] must be a port number",
    ),
    ({'model_params': {'hidden': 16}}, r"model_params\['func'\] is required"),
    (
      {'learning_rate_params': None},
      r"learning_rate_params\['learning_rate'\] is required: without "
      "'func', the rate is tfutils' default",
    ),
    (
      {'loss_params': {'pred_targets': 'labels'}},
      r"loss_params\['loss_func'\] is required",
    ),
    (
      {'validation_params': {'v': {'targets': {'func': tm.top1}}}},
      r"validation_params\['v'\]\['data'\] is required",
    ),
    (
      {
        'validation_params': {
          'v': {'data': {'func': tm.blobs, 'batch_size': 8}, 'num_steps': 0}
        }
      },
      r"validation_params\['v'\]\['num_steps'\] must be a positive integer",
    ),
    (
      {'load_params': {'to_restore': 3}},
      r"load_params\['to_restore'\] must be a list of variable names",
    ),
    (
      {'load_params': {'query': {'$or': [{'step': 1}]}}},
      r"load_params\['query'\]\['\$or'\]: top-level operators",
    ),
    (
      {'load_params': {'query': {'step': {'$ne': 1}}}},
      (
        r"load_params\['query'\]\['step'\]\['\$ne'\]: the operator has no "
        'equivalent'
      ),
    ),
    (
      {'load_params': {'query': {'uploadDate': 1}}},
      (
        r"load_params\['query'\]\['uploadDate'\]: the store records no such "
        'field'
      ),
    ),
  ],
)
def test_a_bad_dictionary_names_the_key_by_its_path(
  params, message, monkeypatch, tmp_path
):
  monkeypatch.setenv('TFUTILS_HOME', str(tmp_path))
  call = {
    'save_params': _save('bad'),
    'model_params': _model(),
    'train_params': _train(5),
    'learning_rate_params': LEARNING_RATE,
    **params,
  }
  with pytest.raises(ConfigurationError, match=message):
    training.train_from_params(**call)


def test_the_dictionaries_become_the_engine_settings_with_tfutils_defaults(
  monkeypatch, tmp_path
):
  monkeypatch.setenv('TFUTILS_HOME', str(tmp_path))
  built = training.train_from_params(
    save_params={
      'dbname': DB,
      'collname': COLL,
      'exp_id': 'defaults',
      'do_save': False,
    },
    model_params=_model(),
    train_params={
      'data_params': {'func': tm.blobs, 'batch_size': 16, 'split': 'train'}
    },
    learning_rate_params={'learning_rate': 0.1},
    validation_params={
      'v': {
        'data': {'func': tm.blobs, 'batch_size': 8, 'split': 'valid'},
        'num_steps': 4,
      }
    },
    dont_run=True,
  )
  settings = built['builder'].settings
  assert built['output'] == str(tmp_path / DB / COLL / 'defaults')
  # tfutils' defaults where tensorfx's own differ.
  assert settings.guards.thres_loss == 100.0
  assert settings.validation.validate_first is True
  assert settings.loop.max_steps is None  # num_steps None: until stopped.
  assert settings.loop.batch_size == 16
  assert settings.loop.log_interval_steps == 5  # save_metrics_freq
  assert settings.validation.interval_steps == 3000  # save_valid_freq
  # cache_filters_freq and save_filters_freq, by step only.
  assert settings.checkpoints.interval_steps == 3000
  assert settings.checkpoints.interval_secs >= 10**9
  assert settings.checkpoints.keep == 6  # cache_max_num
  assert not settings.tracking.enabled  # do_save False
  (target,) = settings.validation.targets
  assert (target.name, target.batches, target.batch_size) == ('v', 4, 8)
  assert target.compute is None  # No targets function: the loss.


def test_bad_optimizer_keys_name_the_optimizer():
  params = _keys.Params(
    {'optimizer': tf.compat.v1.train.AdamOptimizer, 'momentum': 0.9},
    'optimizer_params',
  )
  with pytest.raises(
    ConfigurationError,
    match=r"optimizer_params\['optimizer'\] .*Adam.* does "
    'not take the keys given',
  ):
    _optimizer.optimizer(params, 0.1)


def test_optimizers_as_tfutils_wrote_them():
  def make(params):
    return _optimizer.optimizer(_keys.Params(params, 'optimizer_params'), 0.1)

  # tfutils' default: ClipOptimizer around momentum 0.9, clipped to [-1, 1].
  default = make(None)
  assert type(default).__name__ == 'SGD'
  assert default.momentum == 0.9 and default.clipvalue == 1.0
  momentum = make(
    {
      'optimizer': tf.compat.v1.train.MomentumOptimizer,
      'momentum': 0.5,
      'use_nesterov': True,
      'use_locking': False,
    }
  )
  assert (momentum.momentum, momentum.nesterov) == (0.5, True)
  clipped = make(
    {
      'optimizer_class': tf.compat.v1.train.RMSPropOptimizer,
      'decay': 0.8,
      'clip': False,
    }
  )
  assert type(clipped).__name__ == 'RMSprop' and clipped.rho == 0.8
  assert clipped.clipvalue is None


def test_the_loss_is_called_as_tfutils_called_it():
  outputs = tf.constant([[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
  inputs = {'labels': tf.constant([0, 2], tf.int64)}
  default = _functions.Loss.from_params(_keys.Params(None, 'loss_params'))
  # sparse_softmax_cross_entropy_with_logits takes labels= and logits=.
  expected = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=inputs['labels'], logits=outputs
    )
  )
  assert float(default(inputs, outputs)) == pytest.approx(float(expected))
  seen = []

  def loss_func(outputs, labels, weight):
    seen.append((outputs.shape, labels.shape, weight))
    return tf.ones([2]) * weight

  custom = _functions.Loss.from_params(
    _keys.Params(
      {
        'pred_targets': ['labels'],
        'loss_func': loss_func,
        'loss_func_kwargs': {'weight': 2.0},
        'agg_func': tf.reduce_sum,
      },
      'loss_params',
    )
  )
  assert float(custom(inputs, outputs)) == 4.0
  assert seen == [((2, 3), (2,), 2.0)]
  with pytest.raises(
    ConfigurationError,
    match=r"loss_params\['pred_targets'\] names the "
    "input\\(s\\) 'label', which the data does not have",
  ):
    _functions.Loss.from_params(
      _keys.Params(
        {'pred_targets': 'label', 'loss_func': loss_func}, 'loss_params'
      )
    )(inputs, outputs)


def test_the_store_location(monkeypatch, tmp_path):
  monkeypatch.setenv('TFUTILS_HOME', str(tmp_path))
  monkeypatch.delenv('MLFLOW_TRACKING_URI', raising=False)

  def location(**params):
    return _store.Location.from_params(
      _keys.Params(
        dict({'dbname': 'db', 'collname': 'coll', 'exp_id': 'e1'}, **params),
        'save_params',
      )
    )

  default = location()
  assert default.experiment == 'db/coll'
  assert default.uri == f'sqlite:///{tmp_path}/mlruns.db'
  assert default.default_output() == str(tmp_path / 'db' / 'coll' / 'e1')
  assert location(host='127.0.0.1', port=5000).uri == 'http://127.0.0.1:5000'
  uri = 'postgresql+psycopg2://me@127.0.0.1:5432/runs'
  assert location(host=uri).uri == uri
  assert location(cache_dir='/data/e1').default_output() == '/data/e1'
  monkeypatch.setenv('MLFLOW_TRACKING_URI', 'http://tracking:80')
  assert location().uri == 'http://tracking:80'
  with pytest.raises(ConfigurationError, match='give its port too'):
    _ = location(host='mlflow.internal').uri
  with pytest.raises(
    ConfigurationError, match=r"save_params\['port'\] differs from the port"
  ):
    location(host=uri, port=27017)
