"""Embedding tables in ModelBuilders: two optimizers, export, the sample.

One tiny generated dataset (the recommendation sample's generator, small
tables) is analyzed once. A hand-written builder looks tables up from its
hook; the sample trains single-node in this process and on a local
parameter-server cluster (2 ps, 2 workers) in child processes, with hashed
tables and with exact-key tables (the same analysis: a table's options do
not change the transform); exact-key tables with `dynamic_expansion` grow
in a training run and a restart continues with them.
"""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import yaml

from conftest import ROOT
from tensorfx import embeddings
from tensorfx import prediction
from tensorfx import training

pytestmark = pytest.mark.slow

RECOMMEND = os.path.join(ROOT, 'samples', 'recommend')
CAPACITY = 16384

# The sample's features with small tables: 16384 rows of 8 floats (512 KiB,
# above the 256 KiB minimum shard, so two parameter servers split them).
FEATURES = f"""\
features:
- name: user
  type: embedding
  dim: 8
  capacity: {CAPACITY}
  admit_after: 2
  evict_after_steps: 5000
- name: item
  type: embedding
  dim: 8
  capacity: {CAPACITY}
- name: history
  type: embedding
  table: item
  combiner: mean
- name: clicked
  type: target
"""


def _exact_features(capacity):
  """The sample's features with exact-key tables of `capacity` rows."""
  return f"""\
features:
- name: user
  type: embedding
  dim: 8
  capacity: {capacity}
  hashing: exact
  initializer: {{class_name: RandomUniform, config: {{minval: -0.03,
                maxval: 0.03, seed: 5}}}}
  admit_after: 2
  evict_after_steps: 5000
  evict_every_steps: 500
- name: item
  type: embedding
  dim: 8
  capacity: {capacity}
  hashing: exact
- name: history
  type: embedding
  table: item
  combiner: mean
- name: clicked
  type: target
"""


def _with_features(data, text, name):
  """`data` with another features.yaml (the same analysis)."""
  data_dir, features, analysis = data
  path = features.parent / name
  path.write_text(text)
  return data_dir, path, analysis


def _load_trainer():
  spec = importlib.util.spec_from_file_location(
    'recommend_trainer', os.path.join(RECOMMEND, 'trainer.py')
  )
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  """(data dir, features.yaml, analysis dir) of a tiny generated dataset."""
  root = tmp_path_factory.mktemp('recommend')
  data_dir = root / 'data'
  result = subprocess.run(
    [
      sys.executable,
      'generate.py',
      '--users',
      '600',
      '--items',
      '400',
      '--train',
      '6000',
      '--eval',
      '1000',
      '--shards',
      '2',
      '--output',
      str(data_dir),
    ],
    cwd=RECOMMEND,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  features = root / 'features.yaml'
  features.write_text(FEATURES)
  from tensorfx import data as tfx_data

  analysis = root / 'analysis'
  tfx_data.ExamplesDataSet(
    os.path.join(RECOMMEND, 'schema.yaml'),
    features=str(features),
    train=str(data_dir / 'train-*.tfrecord.gz'),
  ).analyze(str(analysis))
  return data_dir, features, analysis


def _args(data, output, *extra):
  data_dir, features, analysis = data
  return [
    '--output',
    str(output),
    '--data-train',
    str(data_dir / 'train-*.tfrecord.gz'),
    '--data-eval',
    str(data_dir / 'eval.tfrecord.gz'),
    '--data-schema',
    os.path.join(RECOMMEND, 'schema.yaml'),
    '--data-features',
    str(features),
    '--data-metadata',
    str(analysis),
    '--batch-size',
    '64',
    '--seed',
    '3',
    *extra,
  ]


def _dataset(data):
  from tensorfx import data as tfx_data

  data_dir, features, analysis = data
  return tfx_data.ExamplesDataSet(
    os.path.join(RECOMMEND, 'schema.yaml'),
    features=str(features),
    metadata=str(analysis),
    train=str(data_dir / 'train-*.tfrecord.gz'),
    eval=str(data_dir / 'eval.tfrecord.gz'),
  )


def _example(user, item, history):
  feature = tf.train.Feature
  ints = lambda values: feature(int64_list=tf.train.Int64List(value=values))
  return tf.train.Example(
    features=tf.train.Features(
      feature={
        'user': ints([user]),
        'item': ints([item]),
        'history': ints(history),
      }
    )
  )


def _first(data):
  """The first training record's (user, item, history)."""
  data_dir = data[0]
  record = next(
    iter(
      tf.data.TFRecordDataset(
        str(data_dir / 'train-00000-of-00002.tfrecord.gz'), 'GZIP'
      )
    )
  )
  example = tf.train.Example.FromString(record.numpy())
  values = lambda n: list(example.features.feature[n].int64_list.value)
  return values('user')[0], values('item')[0], values('history')


def _unseen(table):
  """Two large ids whose rows no training id hashed to."""
  free = np.nonzero(table.counts.numpy() == 0)[0]
  return [int(row) + 12345 * CAPACITY for row in free[:2]]


class DotProduct(training.ModelBuilder):
  """A hand-written model: tables made and looked up in build_inference."""

  evaluation_metric = ('auc', 'max')

  def build_inference(self, inputs, training):
    if not hasattr(self, 'users'):
      self.users = embeddings.EmbeddingTable('users', dim=8, capacity=CAPACITY)
      self.items = embeddings.EmbeddingTable('items', dim=8, capacity=CAPACITY)
      self.bias = tf_keras.layers.Dense(1, name='bias')
    user = self.users.lookup(inputs['user'], training=training)
    item = self.items.lookup(inputs['item'], training=training)
    liked = self.items.lookup(inputs['history'], 'sqrtn', training=training)
    return tf.reduce_sum((user + liked) * item, axis=1) + self.bias(item)[:, 0]

  def build_sparse_optimizer(self):
    return embeddings.SparseAdagrad(learning_rate=0.1)

  def build_training(self, global_steps, inputs, inferences):
    labels = tf.cast(tf.equal(inputs['clicked'], self._positive), tf.float32)
    loss = tf.reduce_mean(
      tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=inferences)
    )
    return loss, self.optimizer

  @property
  def _positive(self):
    return self.dataset.transformed_features['clicked'].vocabulary.index('yes')

  def build_output(self, inferences):
    return {'score': tf.sigmoid(inferences)}

  def build_evaluation(self, inputs, outputs):
    if not hasattr(self, '_auc'):
      self._auc = tf_keras.metrics.AUC(name='auc')
    self._auc.update_state(
      tf.equal(inputs['clicked'], self._positive), outputs['score']
    )
    return {'auc': self._auc}


@pytest.mark.release
def test_a_builder_hook_trains_tables_with_their_own_optimizer(data, tmp_path):
  args, job = training.ModelArguments.parse(
    _args(
      data, tmp_path / 'dot', '--max-steps', '200', '--learning-rate', '0.01'
    ),
    parse_job=True,
  )
  builder = DotProduct(args, _dataset(data))
  model = training.ModelTrainer().train(builder, job)
  # One builder, two optimizers: the tables' rows (and only they) train with
  # the sparse optimizer, the dense layer with Adam.
  assert isinstance(builder.sparse_optimizer, embeddings.SparseAdagrad)
  assert isinstance(builder.optimizer, tf_keras.optimizers.Adam)
  table_shapes = {(CAPACITY + 1, 8)}
  assert not [
    v.name
    for v in builder.optimizer.variables
    if tuple(v.shape) in table_shapes
  ]
  assert [tuple(v.shape) for v in builder.sparse_optimizer.variables[1:]] == [
    (CAPACITY + 1, 8)
  ] * 2
  assert builder.users.step_counter is builder.global_step
  # The users seen in training read their rows; unseen users the default.
  user, item, history = _first(data)
  first, second = _unseen(builder.users)
  seen, unseen, other = model.predict(
    [
      _example(user, item, history),
      _example(first, item, history),
      _example(second, item, history),
    ]
  )
  assert unseen == other and seen != unseen
  metrics = yaml.safe_load((tmp_path / 'dot' / 'job.yaml').read_text())
  assert metrics['metrics']['auc'] > 0.55


@pytest.fixture(scope='module')
def single(data, tmp_path_factory):
  """The sample trained in this process: (builder, output dir, Model)."""
  trainer = _load_trainer()
  output = tmp_path_factory.mktemp('single') / 'output'
  args, job = trainer.RecommenderArguments.parse(
    _args(data, output, '--max-steps', '300', '--hidden-layers:1', '16'),
    parse_job=True,
  )
  builder = trainer.Recommender(args, _dataset(data))
  model = training.ModelTrainer().train(builder, job)
  return builder, output, model


@pytest.mark.xdist_group('test_table_training_single')
def test_the_sample_trains_single_node_to_a_useful_auc(single):
  builder, output, _ = single
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['metrics']['auc'] > 0.6
  # The catalogue made two tables (history shares the item table), trained
  # by lazy Adam; the dense layers by Adam.
  tables = embeddings.find_tables(builder)
  assert sorted(t.name for t in tables) == ['item', 'user']
  assert isinstance(builder.sparse_optimizer, embeddings.LazyAdam)
  user = next(t for t in tables if t.name == 'user')
  assert user.admit_after == 2 and user.evict_after_steps == 5000
  assert 0 < int(user.live_rows()) < CAPACITY


@pytest.mark.xdist_group('test_table_training_single')
def test_the_exported_sample_serves_raw_ids(single, data):
  builder, output, model = single
  user, item, history = _first(data)
  text = ' '.join(str(h) for h in history)
  (by_example,) = model.predict([_example(user, item, history)])
  (by_csv,) = model.predict([f'{user},{item},{text}'])
  (by_dict,) = model.predict([{'user': user, 'item': item, 'history': text}])
  assert by_example['scores'] == pytest.approx(by_csv['scores'], abs=1e-6)
  assert by_example['scores'] == pytest.approx(by_dict['scores'], abs=1e-6)
  assert by_example['label'] in ('yes', 'no')
  # Ids never seen read the default row: any two give the same scores.
  user_table = next(
    t for t in embeddings.find_tables(builder) if t.name == 'user'
  )
  first, second = model.predict(
    [f'{u},{item},{text}' for u in _unseen(user_table)]
  )
  assert first['scores'] == pytest.approx(second['scores'])
  assert first['scores'] != pytest.approx(by_csv['scores'])
  loaded = prediction.Model.load(str(output / 'model'))
  assert loaded.predict([f'{user},{item},'])[0]['label'] in ('yes', 'no')


@pytest.mark.release
@pytest.mark.cluster
def test_the_sample_trains_on_a_parameter_server_cluster(data, tmp_path):
  output = tmp_path / 'ps'
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--cluster',
    'ps=2,workers=2',
    *_args(
      data,
      output,
      '--max-steps',
      '400',
      '--hidden-layers:1',
      '16',
      '--log-interval-steps',
      '100',
    ),
  ]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  # The launcher kills every task it started, by PID, when it ends or
  # times out.
  result = subprocess.run(
    command,
    cwd=RECOMMEND,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['global_step'] >= 400
  assert job['metrics']['auc'] > 0.6, job['metrics']
  assert 'auc' in result.stdout
  # The checkpoint holds each table whole, whatever the shard count.
  saved = dict(tf.train.list_variables(str(output / 'checkpoints')))
  shapes = [
    shape
    for name, shape in saved.items()
    if name.endswith('embeddings/.ATTRIBUTES/VARIABLE_VALUE')
  ]
  assert sorted(shapes) == [[CAPACITY + 1, 8]] * 2
  model = prediction.Model.load(str(output / 'model'))
  user, item, history = _first(data)
  scores = model.predict([_example(user, item, history)])[0]['scores']
  assert np.isclose(sum(scores), 1.0)


@pytest.fixture(scope='module')
def exact(data, tmp_path_factory):
  """The sample with exact-key tables, trained here: (builder, output, Model)."""
  data = _with_features(data, _exact_features(CAPACITY), 'exact.yaml')
  trainer = _load_trainer()
  output = tmp_path_factory.mktemp('exact') / 'output'
  args, job = trainer.RecommenderArguments.parse(
    _args(data, output, '--max-steps', '300', '--hidden-layers:1', '16'),
    parse_job=True,
  )
  builder = trainer.Recommender(args, _dataset(data))
  model = training.ModelTrainer().train(builder, job)
  return builder, output, model


def _held_rows(table):
  _, entries, _ = table._keys.export()
  rows = entries.numpy()[:, 0]
  return rows[rows >= 0]


@pytest.mark.xdist_group('test_table_training_exact')
def test_exact_tables_from_features_yaml_train_without_collisions(exact):
  builder, output, _ = exact
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['metrics']['auc'] > 0.6
  tables = {t.name: t for t in embeddings.find_tables(builder)}
  assert sorted(tables) == ['item', 'user']
  user, item = tables['user'], tables['item']
  # The options of features.yaml reached the tables.
  assert user.hashing == item.hashing == 'exact'
  assert (user.admit_after, user.evict_after_steps) == (2, 5000)
  assert user._evict_every == 500
  initializer = user._initializer
  assert type(initializer).__name__ == 'RandomUniform'
  assert initializer.get_config()['maxval'] == 0.03
  for table in (user, item):
    held = _held_rows(table)
    assert len(set(held.tolist())) == len(held) == int(table.live_rows()) > 0
  # Every item the data showed has its own row (admitted at first sight).
  assert int(item.live_rows()) <= 400 < CAPACITY


@pytest.mark.xdist_group('test_table_training_exact')
def test_the_exported_exact_model_serves_raw_ids(exact, data):
  _, output, model = exact
  user, item, history = _first(data)
  (seen,) = model.predict([_example(user, item, history)])
  # Ids no training example had read the default row: any two agree.
  first, second = model.predict(
    [_example(-5, item, history), _example(1 << 50, item, history)]
  )
  assert first['scores'] == pytest.approx(second['scores'])
  assert first['scores'] != pytest.approx(seen['scores'])
  loaded = prediction.Model.load(str(output / 'model'))
  (again,) = loaded.predict([_example(user, item, history)])
  assert again['scores'] == pytest.approx(seen['scores'], abs=1e-6)


@pytest.mark.release
@pytest.mark.cluster
def test_exact_tables_train_on_a_parameter_server_cluster_and_grow(
  data, tmp_path
):
  output = tmp_path / 'ps'
  small = _with_features(data, _exact_features(CAPACITY), 'exact-small.yaml')
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--cluster',
    'ps=2,workers=2',
    *_args(
      small,
      output,
      '--max-steps',
      '300',
      '--hidden-layers:1',
      '16',
      '--log-interval-steps',
      '100',
    ),
  ]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  result = subprocess.run(
    command,
    cwd=RECOMMEND,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] >= 300
  # The checkpoint holds the tables by key, not as CAPACITY-row variables.
  saved = dict(tf.train.list_variables(str(output / 'checkpoints')))
  assert not [
    n for n in saved if n.endswith('embeddings/.ATTRIBUTES/VARIABLE_VALUE')
  ]
  vectors = sorted(
    shape
    for name, shape in saved.items()
    if name.endswith('index/.ATTRIBUTES/vectors')
  )
  assert len(vectors) == 2 and all(0 < n <= 601 for n, _ in vectors)
  # The same checkpoint exported with twice the rows serves the same.
  grown = _with_features(
    data, _exact_features(2 * CAPACITY), 'exact-grown.yaml'
  )
  export = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      *_args(
        grown,
        output,
        '--hidden-layers:1',
        '16',
        '--action',
        'export',
        '--export-dir',
        str(tmp_path / 'grown'),
      ),
    ],
    cwd=RECOMMEND,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert export.returncode == 0, (export.stdout + export.stderr)[-4000:]
  user, item, history = _first(data)
  examples = [
    _example(user, item, history),
    _example(-5, item, history),
    _example(user, item, []),
  ]
  before = prediction.Model.load(str(output / 'model')).predict(examples)
  after = prediction.Model.load(str(tmp_path / 'grown')).predict(examples)
  # The index travelled: a trained user and an unknown one differ.
  assert before[0]['scores'] != pytest.approx(before[1]['scores'])
  for old, new in zip(before, after):
    assert new['scores'] == pytest.approx(old['scores'], abs=1e-6)


@pytest.mark.release
@pytest.mark.cluster
def test_exact_tables_train_on_multi_worker_mirrored_workers(data, tmp_path):
  # mxRec's mode: one process per device, synchronous updates. The workers
  # agree on every key's row; the chief checkpoints and exports.
  output = tmp_path / 'mirrored'
  exact = _with_features(data, _exact_features(CAPACITY), 'exact-mw.yaml')
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--cluster',
    'workers=2',
    *_args(
      exact,
      output,
      '--max-steps',
      '80',
      '--hidden-layers:1',
      '16',
      '--log-interval-steps',
      '40',
    ),
  ]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  result = subprocess.run(
    command,
    cwd=RECOMMEND,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] >= 80
  assert job['metrics']['auc'] > 0.6, job['metrics']
  saved = dict(tf.train.list_variables(str(output / 'checkpoints')))
  vectors = sorted(
    shape
    for name, shape in saved.items()
    if name.endswith('index/.ATTRIBUTES/vectors')
  )
  assert len(vectors) == 2 and all(0 < n <= 601 for n, _ in vectors)
  user, item, history = _first(data)
  model = prediction.Model.load(str(output / 'model'))
  seen, unseen = model.predict(
    [_example(user, item, history), _example(-5, item, history)]
  )
  assert seen['scores'] != pytest.approx(unseen['scores'])


@pytest.mark.slow
def test_dynamic_expansion_grows_in_a_training_run_and_a_restart_keeps_it(
  data, tmp_path
):
  # 600 users and 400 items against 64 rows each: the tables must grow.
  text = _exact_features(64).replace(
    '  hashing: exact\n', '  hashing: exact\n  dynamic_expansion: true\n'
  )
  data = _with_features(data, text, 'dynamic.yaml')
  trainer = _load_trainer()
  output = tmp_path / 'output'

  def train(steps):
    args, job = trainer.RecommenderArguments.parse(
      _args(data, output, '--max-steps', str(steps), '--hidden-layers:1', '16'),
      parse_job=True,
    )
    builder = trainer.Recommender(args, _dataset(data))
    model = training.ModelTrainer().train(builder, job)
    return {t.name: t for t in embeddings.find_tables(builder)}, model

  tables, model = train(100)
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  grown = {}
  for name, table in tables.items():
    assert table.dynamic_expansion and table.capacity == 64
    grown[name] = table.current_capacity()
    assert grown[name] > 64 and int(table.expansions.numpy()) >= 1
    held = _held_rows(table)
    assert len(set(held.tolist())) == len(held) == int(table.live_rows()) > 64
  held_items = dict(
    zip(*(t.numpy().tolist() for t in tables['item']._keys.export()[:2]))
  )
  # The exported model serves over the grown table.
  user, item, history = _first(data)
  assert model.predict([_example(user, item, history)])[0]['scores']
  # A restart from the checkpoint continues with the grown tables.
  again, _ = train(130)
  for name, table in again.items():
    assert table.current_capacity() >= grown[name]
  keys, entries = (t.numpy() for t in again['item']._keys.export()[:2])
  restored = dict(zip(keys.tolist(), entries.tolist()))
  for key, entry in held_items.items():
    if entry[0] >= 0:
      assert restored[key][0] == entry[0]  # Every held key kept its row.


@pytest.mark.release
@pytest.mark.cluster
def test_dynamic_expansion_grows_on_a_parameter_server_cluster(data, tmp_path):
  # 400 items against 64 rows: the item table must grow. On parameter
  # servers the chief grows it by restarting in place at a log interval.
  text = _exact_features(64).replace(
    '  hashing: exact\n', '  hashing: exact\n  dynamic_expansion: true\n'
  )
  data = _with_features(data, text, 'dynamic-ps.yaml')
  output = tmp_path / 'ps'
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')

  def train(steps):
    command = [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--cluster',
      'ps=1,workers=1',
      *_args(
        data,
        output,
        '--max-steps',
        str(steps),
        '--hidden-layers:1',
        '16',
        '--log-interval-steps',
        '40',
      ),
    ]
    # The launcher kills every task it started, by PID, when it ends.
    result = subprocess.run(
      command,
      cwd=RECOMMEND,
      env=env,
      capture_output=True,
      text=True,
      timeout=600,
      check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result.stdout + result.stderr

  log = train(200)
  assert "EmbeddingTable 'item' holds" in log and 'grows to 128 rows' in log
  assert 'Restarting the chief in place at step 40' in log
  assert 'Resumed from' in log
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] == 200
  grown = json.loads((output / 'checkpoints' / 'grown_tables.json').read_text())
  assert grown['item'] >= 257 and grown['user'] >= 129
  # Every key kept in the checkpoint has its own row within the rows, and
  # more keys than the table started with hold one.
  reader = tf.train.load_checkpoint(str(output / 'checkpoints'))
  held = []
  for name in reader.get_variable_to_shape_map():
    if name.endswith('index/.ATTRIBUTES/entries'):
      rows = reader.get_tensor(name)[:, 0]
      held.append(rows[rows >= 0])
      assert len(held[-1]) == len(set(held[-1].tolist())), name
      assert 64 not in held[-1]  # the default row
  assert len(held) == 2 and max(len(rows) for rows in held) > 128
  # A restart of the job continues with the grown tables.
  log = train(240)
  assert 'Resumed from' in log and 'Restarting the chief' not in log
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] == 240
  user, item, history = _first(data)
  model = prediction.Model.load(str(output / 'model'))
  seen, unseen = model.predict(
    [_example(user, item, history), _example(-5, item, history)]
  )
  assert seen['scores'] != pytest.approx(unseen['scores'])
