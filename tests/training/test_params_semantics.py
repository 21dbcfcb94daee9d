"""train_from_params keeps tfutils' documented semantics where they differ.

Each test pins one behaviour of tfutils' `train_from_params` /
`test_from_params` (as tfutils' documentation states it): the defaults
work on a plain install, `do_restore=False` starts from scratch,
validation keeps the per-batch results, MongoDB-style queries select the
checkpoint to load, a custom `train_loop` runs each step,
`ClipOptimizer(trainable_names=...)` trains only those variables, and any
TensorFlow 1-style optimizer class trains.
"""

import os
import subprocess
import sys
import textwrap
import tomllib

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import ROOT
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _optimizer
import tfutils_model as tm

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_params_semantics')

DB, COLL = 'semantics', 'mlp'
VALID = {
  'data': {'func': tm.blobs, 'batch_size': 100, 'split': 'valid'},
  'targets': {'func': tm.top1},
}


def _save(exp_id, **extra):
  return {
    'dbname': DB,
    'collname': COLL,
    'exp_id': exp_id,
    'save_metrics_freq': 5,
    'save_valid_freq': 10,
    'cache_filters_freq': 10,
    'save_filters_freq': 20,
    **extra,
  }


def _train(num_steps, **extra):
  return {
    'data_params': {'func': tm.blobs, 'batch_size': 32, 'split': 'train'},
    'num_steps': num_steps,
    'validate_first': False,
    **extra,
  }


def _run(exp_id, num_steps=20, save=None, **params):
  params.setdefault('model_params', {'func': tm.mlp, 'hidden': 8})
  params.setdefault('learning_rate_params', {'learning_rate': 0.1})
  return training.train_from_params(
    save_params=_save(exp_id, **(save or {})),
    train_params=params.pop('train_params', _train(num_steps)),
    **params,
  )


def _client(home):
  from mlflow.tracking import MlflowClient

  return MlflowClient(f'sqlite:///{home}/mlruns.db')


def _runs(home, exp_id):
  client = _client(home)
  experiment = client.get_experiment_by_name(f'{DB}/{COLL}')
  return client.search_runs(
    [experiment.experiment_id],
    f"tags.`tfutils.exp_id` = '{exp_id}'",
    order_by=['attributes.start_time ASC'],
  )


@pytest.fixture(scope='module')
def home(tmp_path_factory):
  path = tmp_path_factory.mktemp('tfutils_semantics')
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv('TFUTILS_HOME', str(path))
    patch.delenv('MLFLOW_TRACKING_URI', raising=False)
    yield path


# Validation targets as tfutils' users wrote them: utils.mean_dict over
# the default online_agg_func's list of per-batch dicts; the loss target
# (no `targets`) first, so its NumPy means are the job's primary metrics.
MEAN_DICT = {
  'loss': {
    'data': {'func': tm.blobs, 'batch_size': 100, 'split': 'valid'},
    'agg_func': tm.mean_dict,
  },
  'top1_mean': dict(VALID, agg_func=tm.mean_dict),
  'top1_appended': dict(
    VALID, online_agg_func=tm.append_and_return, agg_func=tm.mean_dict
  ),
}


@pytest.fixture(scope='module')
def trained(home):
  """'h8', trained to step 20: checkpoints 0 (saved), 10, 20 (saved)."""
  return _run('h8', validation_params={**MEAN_DICT, 'valid': VALID})


def test_mlflow_and_its_embedded_store_are_default_dependencies():
  with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
    dependencies = tomllib.load(f)['project']['dependencies']
  names = {
    d.split('>')[0].split('=')[0].split('~')[0].strip().lower()
    for d in dependencies
  }
  # do_save defaults to True: the record store must come with the package.
  assert {'mlflow-skinny', 'sqlalchemy', 'alembic'} <= names


def test_validation_keeps_the_per_batch_results_and_the_mean_on_request(
  trained, home
):
  # tfutils' agg_func default is the identity: a list per key.
  top1 = trained['validation']['valid']['top1']
  assert isinstance(top1, list) and len(top1) == 3  # 300 examples / 100
  assert np.mean(top1) > 0.7
  # The store holds numbers: the list's mean.
  (run,) = _runs(home, 'h8')
  history = _client(home).get_metric_history(run.info.run_id, 'valid/top1')
  assert history[-1].step == 20
  assert history[-1].value == pytest.approx(np.mean(top1))
  # agg_func 'mean': the documented switch.
  tested = training.test_from_params(
    load_params={'dbname': DB, 'collname': COLL, 'exp_id': 'h8'},
    model_params={'func': tm.mlp, 'hidden': 8},
    validation_params={'valid': dict(VALID, agg_func='mean')},
    save_params={
      'dbname': DB,
      'collname': COLL,
      'exp_id': 'h8_test',
      'do_save': False,
    },
  )
  assert tested['results']['valid']['top1'] == pytest.approx(np.mean(top1))


def test_agg_func_receives_the_list_of_per_batch_dicts(trained, home):
  validation = trained['validation']
  per_batch = validation['valid']['top1']
  # tfutils' mean_dict read the list its default online_agg_func made.
  for name in ('top1_mean', 'top1_appended'):
    assert validation[name]['top1'] == pytest.approx(np.mean(per_batch))
  (loss,) = validation['loss'].values()
  # NumPy's means come back as Python numbers, recorded where numbers go.
  assert type(loss) is float and 0 < loss < 2
  with open(os.path.join(trained['output'], 'job.yaml')) as f:
    job = yaml.safe_load(f)
  assert job['status'] == 'completed'
  assert job['metrics'] == {'loss': pytest.approx(loss)}
  (run,) = _runs(home, 'h8')
  history = _client(home).get_metric_history(run.info.run_id, 'loss/loss')
  assert [m.step for m in history] == [10, 20]


def test_queries_select_the_checkpoint_as_mongodb_did(trained, home):
  def loaded(query, **load):
    tested = training.test_from_params(
      load_params={
        'dbname': DB,
        'collname': COLL,
        'exp_id': 'h8',
        'query': query,
        **load,
      },
      model_params={'func': tm.mlp, 'hidden': 8},
      validation_params={'valid': dict(VALID, agg_func='mean')},
      dont_run=True,
    )
    return os.path.basename(tested['checkpoint']), tested['checkpoint']

  assert loaded({'step': {'$lte': 15}})[0] == 'ckpt-10'
  assert loaded({'step': {'$gte': 5, '$lt': 20}})[0] == 'ckpt-10'
  assert loaded({'step': {'$in': [0, 10]}})[0] == 'ckpt-10'
  name, path = loaded({'exp_id': 'h8', 'saved_filters': True})
  assert name == 'ckpt-20' and '/saved/' in path
  name, path = loaded({'saved_filters': True, 'step': {'$lt': 20}})
  assert name == 'ckpt-0' and '/saved/' in path
  # Recorded parameters and tags, searched in the store.
  assert (
    loaded(
      {
        'params.model_params.hidden': 8,
        'train_params.num_steps': {'$gte': 20},
        'tags.tfutils.exp_id': 'h8',
      }
    )[0]
    == 'ckpt-20'
  )
  with pytest.raises(
    ConfigurationError, match=r"load_params\['query'\]: no checkpoint matches"
  ):
    loaded({'params.model_params.hidden': {'$in': [16, 32]}})
  with pytest.raises(ConfigurationError, match='no checkpoint matches'):
    loaded({'step': {'$gt': 20}})


def test_save_params_without_a_location_save_where_the_loaded_one_is(
  trained, home
):
  # tfutils' test script: load_params are the training's save_params (its
  # save-only keys ignored), save_params name the new exp_id only.
  tested = training.test_from_params(
    load_params=_save('h8'),
    model_params={'func': tm.mlp, 'hidden': 8},
    validation_params={'valid': dict(VALID, agg_func=tm.mean_dict)},
    save_params={'exp_id': 'h8_validation'},
  )
  assert (tested['exp_id'], tested['validates']) == ('h8_validation', 'h8')
  (run,) = _runs(home, 'h8_validation')  # In the loaded DBNAME/COLLNAME.
  assert run.info.run_id == tested['run_id']
  # Training too: a new exp_id beside the experiment it loads.
  built = training.train_from_params(
    save_params={'exp_id': 'h8_more'},
    load_params={'dbname': DB, 'collname': COLL, 'exp_id': 'h8'},
    model_params={'func': tm.mlp, 'hidden': 8},
    train_params=_train(30),
    learning_rate_params={'learning_rate': 0.1},
    dont_run=True,
  )
  assert built['output'] == str(home / DB / COLL / 'h8_more')


def test_do_restore_false_starts_the_exp_id_from_scratch(trained, home):
  output = trained['output']
  fresh = _run('h8', num_steps=10, load_params={'do_restore': False})
  assert fresh['step'] == 10  # From step 0, not on from 20.
  # The earlier checkpoints went aside, never deleted.
  aside = [d for d in os.listdir(output) if d.startswith('checkpoints.old-')]
  assert len(aside) == 1
  assert os.path.exists(os.path.join(output, aside[0], 'ckpt-20.index'))
  assert tf.train.latest_checkpoint(
    os.path.join(output, 'checkpoints')
  ).endswith('ckpt-10')
  # The store records a new run, marked as a fresh start.
  first, second = _runs(home, 'h8')
  assert second.info.run_id == fresh['run_id'] != first.info.run_id
  assert second.data.tags['tfutils.fresh_start'] == 'true'
  assert 'tfutils.fresh_start' not in first.data.tags


def test_a_custom_train_loop_runs_each_step(home):
  calls = []

  # tfutils' custom loop: train_targets is a list, one dict per model.
  def train_loop(sess, train_targets, scale=1):
    results = sess.run(train_targets)
    for targets, result in zip(train_targets, results):
      calls.append(
        (sorted(targets), result['loss'] * scale, result['train_accuracy'])
      )
    return results

  result = _run(
    'loop',
    num_steps=12,
    train_params=_train(
      12,
      targets={'func': tm.train_accuracy},
      train_loop={'func': train_loop, 'scale': 2},
    ),
  )
  assert result['step'] == 12 and len(calls) == 12
  names, loss, accuracy = calls[-1]
  assert names == ['learning_rate', 'loss', 'optimizer', 'train_accuracy']
  assert 0 < loss < 4 and 0 <= accuracy <= 1
  # The engine's loop ran around it: its checkpoints are there.
  assert tf.train.latest_checkpoint(
    os.path.join(result['output'], 'checkpoints')
  ).endswith('ckpt-12')

  def no_step(sess, train_targets):
    del sess, train_targets

  with pytest.raises(
    ConfigurationError,
    match=r"train_params\['train_loop'\]\['func'\] ran no "
    'training step',
  ):
    _run(
      'loop_none',
      num_steps=2,
      train_params=_train(2, train_loop={'func': no_step}),
    )


def test_a_resumed_or_loaded_run_validates_first_at_step_0_only(home):
  def validated(exp_id, num_steps, **params):
    _run(
      exp_id,
      train_params=_train(num_steps, validate_first=True),
      validation_params={'valid': dict(VALID, agg_func='mean')},
      **params,
    )
    (run,) = _runs(home, exp_id)
    history = _client(home).get_metric_history(run.info.run_id, 'valid/top1')
    return [m.step for m in history]

  assert validated('resumed', 10) == [0, 10]
  # Resumed at step 10, validated there already: on every save_valid_freq.
  assert validated('resumed', 20) == [0, 10, 20]
  # Loaded with its global step (20): as resumed.
  assert validated('loaded', 30, load_params={'exp_id': 'resumed'}) == [30]


def test_the_record_holds_the_defaults_tfutils_gave(home):
  built = _run(
    'defaults',
    save={'do_save': False},
    model_params={'func': tm.mlp},
    learning_rate_params={
      'learning_rate': 0.1,
      'decay_steps': 20,
      'decay_rate': 0.5,
    },
    dont_run=True,
  )
  recorded = built['arguments'].to_dict()['tfutils']
  assert recorded['model_params']['seed'] == 0
  # Without 'func': tfutils' default, exponential_decay of the step.
  rate = recorded['learning_rate_params']
  assert rate['func'].endswith('.exponential_decay')
  assert rate['decay_steps'] == 20
  schedule = _optimizer.LearningRate.from_params(
    _keys.Params(
      {'learning_rate': 0.1, 'decay_steps': 20, 'decay_rate': 0.5},
      'learning_rate_params',
    )
  ).schedule(tf.Variable(10, dtype=tf.int64))
  assert float(schedule(0)) == pytest.approx(0.1 * 0.5**0.5)
  with pytest.raises(
    ConfigurationError,
    match=r"learning_rate_params\['decay_rate'\] is required: without "
    "'func', the rate is tfutils' default",
  ):
    _run(
      'defaults',
      learning_rate_params={'learning_rate': 0.1, 'decay_steps': 20},
      dont_run=True,
    )


def test_a_loss_agg_func_naming_which_device_receives_it():
  seen = []

  def agg_func(loss, which_device, model_prefix=None):
    seen.append(which_device)
    return tm.mean_and_reg_loss(loss, which_device, model_prefix)

  loss = _functions.Loss.from_params(
    _keys.Params(
      {
        'pred_targets': 'labels',
        'loss_func': tf.nn.sparse_softmax_cross_entropy_with_logits,
        'agg_func': agg_func,
      },
      'loss_params',
    )
  )
  outputs = tf.constant([[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
  inputs = {'labels': tf.constant([0, 2], tf.int64)}
  expected = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=inputs['labels'], logits=outputs
    )
  )
  assert float(loss(inputs, outputs)) == pytest.approx(float(expected))
  # On a replica: its index, a number as tfutils' device index was.
  strategy = tf.distribute.MirroredStrategy(['/cpu:0'])
  strategy.run(lambda: loss(inputs, outputs))
  assert seen == [0, 0] and all(type(d) is int for d in seen)


def _variables(output):
  reader = tf.train.load_checkpoint(os.path.join(output, 'checkpoints'))
  from tensorfx.training._checkpoints import restore as _restore

  return {
    name: reader.get_tensor(keys[0])
    for name, keys in _restore.checkpoint_names(reader).items()
  }


class _Initial(training.Callback):
  def on_train_begin(self, logs):
    self.values = {
      v.name.split(':')[0]: v.numpy()
      for v in self.context.builder.model_variables.created
    }


def test_clip_optimizer_trains_only_its_trainable_names(home):
  initial = _Initial()
  result = _run(
    'clip_names',
    num_steps=5,
    callbacks=[initial],
    optimizer_params={
      'optimizer': 'ClipOptimizer',
      'optimizer_class': tf.compat.v1.train.MomentumOptimizer,
      'momentum': 0.9,
      'clip': True,
      'trainable_names': ['logits'],
    },
  )
  final = _variables(result['output'])
  for name in ('hidden/weights', 'hidden/biases'):
    np.testing.assert_array_equal(final[name], initial.values[name])
  assert not np.array_equal(
    final['logits/weights'], initial.values['logits/weights']
  )


class _ScaledSGD:
  """A user's TensorFlow 1-style optimizer wrapping one of TensorFlow's."""

  def __init__(self, learning_rate, scale=1.0):
    self.inner = tf.compat.v1.train.MomentumOptimizer(learning_rate, 0.9)
    self.scale = scale

  def compute_gradients(self, loss, var_list=None):
    return self.inner.compute_gradients(loss, var_list)

  def apply_gradients(self, grads_and_vars, global_step=None):
    return self.inner.apply_gradients(
      [(g * self.scale, v) for g, v in grads_and_vars], global_step
    )


@pytest.mark.parametrize(
  'optimizer',
  [
    {
      'optimizer': tf.compat.v1.train.ProximalAdagradOptimizer,
      'l1_regularization_strength': 0.001,
    },
    {'optimizer': _ScaledSGD, 'scale': 0.5},
  ],
  ids=['proximal_adagrad', 'users_class'],
)
def test_other_tf1_optimizer_classes_train_and_checkpoint(optimizer, home):
  name = 'tf1_' + getattr(optimizer['optimizer'], '__name__', 'x')
  initial = _Initial()
  result = _run(
    name,
    num_steps=10,
    callbacks=[initial],
    optimizer_params=optimizer,
    validation_params={'valid': dict(VALID, agg_func='mean')},
  )
  assert result['validation']['valid']['top1'] > 0.5
  final = _variables(result['output'])
  assert not np.array_equal(
    final['hidden/weights'], initial.values['hidden/weights']
  )
  # The optimizer's slots are in the checkpoint (resuming keeps them).
  reader = tf.train.load_checkpoint(
    os.path.join(result['output'], 'checkpoints')
  )
  slots = [
    k for k in reader.get_variable_to_shape_map() if '.OPTIMIZER_SLOT' in k
  ]
  assert slots


_PLAIN = textwrap.dedent('''
    import importlib.abc, sys

    class NoMlflow(importlib.abc.MetaPathFinder):
      """A plain install's view: no MLflow at all."""
      def find_spec(self, name, path=None, target=None):
        if name == 'mlflow' or name.startswith('mlflow.'):
          raise ModuleNotFoundError(name)
        return None

    sys.meta_path.insert(0, NoMlflow())
    import importlib.util
    importlib.util.find_spec = (lambda name, *a, _f=importlib.util.find_spec:
                                None if name.split('.')[0] == 'mlflow'
                                else _f(name, *a))
    import tfutils_model as tm
    from tensorfx import training
    save = {'dbname': 'd', 'collname': 'c', 'exp_id': 'plain',
            'do_save': False, 'save_valid_freq': 5}
    data = {'func': tm.blobs, 'batch_size': 100, 'split': 'valid'}
    result = training.train_from_params(
        save_params=save, model_params={'func': tm.mlp},
        train_params={'data_params': {'func': tm.blobs, 'batch_size': 32},
                      'num_steps': 5},
        learning_rate_params={'learning_rate': 0.1},
        validation_params={'v': {'data': data}})
    tested = training.test_from_params(
        load_params={'dbname': 'd', 'collname': 'c', 'exp_id': 'plain'},
        model_params={'func': tm.mlp}, validation_params={'t': {'data': data}},
        save_params=save)
    print('OK', result['step'], tested['step'], len(tested['results']['t']['loss']))
''')


@pytest.mark.slow
def test_without_mlflow_nothing_asked_of_the_store_needs_it(tmp_path):
  env = dict(
    os.environ,
    TFUTILS_HOME=str(tmp_path),
    PYTHONPATH=os.pathsep.join(
      [ROOT, os.path.dirname(os.path.abspath(__file__))]
      + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    ),
  )
  env.pop('MLFLOW_TRACKING_URI', None)
  done = subprocess.run(
    [sys.executable, '-c', _PLAIN],
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert done.returncode == 0, done.stderr[-4000:]
  assert done.stdout.strip().splitlines()[-1] == 'OK 5 5 3'
