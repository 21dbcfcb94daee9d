"""evict_after_secs: keys evicted by wall-clock time (mxRec's eviction_threshold)."""

import time

import pytest
import tensorflow as tf

from tensorfx import ConfigurationError
from tensorfx import DataError
from tensorfx import data
from tensorfx import embeddings


@pytest.fixture(autouse=True)
def _no_determinism():
  """The wall clock is read only without op determinism.

  Another test's --seed turns it on for the whole process.
  """
  from tensorflow.python.framework import config

  enabled = config.is_op_determinism_enabled()
  config.disable_op_determinism()
  yield
  if enabled:
    config.enable_op_determinism()


def _keys(*values):
  return tf.constant(values, tf.int64)


@pytest.mark.parametrize('hashing', ['exact', 'mod'])
def test_lookups_are_stamped_with_the_time_and_stale_keys_go(hashing):
  table = embeddings.EmbeddingTable(
    'items',
    dim=4,
    capacity=10,
    hashing=hashing,
    evict_after_secs=60,
    evict_every_secs=30,
  )
  assert (
    table.eviction_clock,
    table.evict_after_secs,
    table.evict_after_steps,
  ) == ('seconds', 60, None)
  before = int(time.time())
  # No step counter needed: the clock is the wall clock.
  table.lookup(_keys(1, 2), training=True)
  stamps = table.statistics(_keys(1, 2))['last_seen'].numpy()
  assert (stamps >= before).all() and (stamps <= time.time() + 1).all()
  # 59 seconds on: nothing is stale; 60 seconds after the stamp: both go.
  assert int(table.evict(now=tf.constant(before - 1 + 60, tf.int64))) == 0
  assert (
    int(table.evict(now=tf.constant(int(stamps.max()) + 60, tf.int64))) == 2
  )
  assert table.statistics(_keys(1, 2))['count'].numpy().tolist() == [0, 0]


def test_the_stamps_and_the_schedule_are_checkpointed(tmp_path):
  def make():
    table = embeddings.EmbeddingTable(
      'items', dim=4, capacity=10, hashing='exact', evict_after_secs=3600
    )
    table.build()
    return table

  table = make()
  table.lookup(_keys(7, 8), training=True)
  saved = table.statistics(_keys(7, 8))
  next_sweep = int(table.next_sweep.numpy())
  # The first training lookup swept (nothing) and scheduled the next sweep
  # a tenth of the threshold on.
  assert next_sweep >= int(saved['last_seen'][0]) + 360 - 1
  path = tf.train.Checkpoint(table=table).write(str(tmp_path / 'ckpt'))
  again = make()
  tf.train.Checkpoint(table=again).read(path).assert_existing_objects_matched()
  restored = again.statistics(_keys(7, 8))
  for key in ('row', 'count', 'last_seen'):
    assert restored[key].numpy().tolist() == saved[key].numpy().tolist()
  assert int(again.next_sweep.numpy()) == next_sweep


def test_one_clock_per_table_and_features_yaml_names_the_key():
  with pytest.raises(
    ConfigurationError,
    match='give evict_after_steps or evict_after_secs, not both',
  ):
    embeddings.EmbeddingTable(
      't', dim=2, capacity=4, evict_after_steps=5, evict_after_secs=5
    )
  with pytest.raises(
    ConfigurationError, match='evict_every_secs needs evict_after_secs'
  ):
    embeddings.EmbeddingTable('t', dim=2, capacity=4, evict_every_secs=5)
  table = embeddings.EmbeddingTable.from_params(
    'item', {'dim': 2, 'capacity': 8, 'evict_after_secs': 86400}
  )
  assert table.evict_after_secs == 86400
  features = data.FeatureSet.parse(
    'features:\n- name: item\n  type: embedding\n  fields: item\n'
    '  dim: 2\n  capacity: 8\n  evict_after_secs: 600\n'
    '  evict_every_secs: 60\n',
    source='f.yaml',
  )
  table = embeddings.EmbeddingTable.from_params('item', features['item'].params)
  assert (table.evict_after_secs, table.eviction_clock) == (600, 'seconds')
  for extra, problem in (
    (
      '  evict_after_steps: 5\n  evict_after_secs: 5\n',
      "'evict_after_steps' or 'evict_after_secs', not both",
    ),
    ('  evict_every_secs: 5\n', "'evict_every_secs' needs 'evict_after_secs'"),
  ):
    with pytest.raises(DataError, match=r'f\.yaml:\d+: .*' + problem):
      data.FeatureSet.parse(
        'features:\n- name: item\n  type: embedding\n  fields: item\n'
        '  dim: 2\n  capacity: 8\n' + extra,
        source='f.yaml',
      )


def test_under_op_determinism_the_wall_clock_is_refused_by_name():
  from tensorflow.python.framework import config

  table = embeddings.EmbeddingTable(
    'items', dim=4, capacity=10, hashing='exact', evict_after_secs=60
  )
  config.enable_op_determinism()
  with pytest.raises(
    ConfigurationError,
    match=r"'items' evicts after "
    'evict_after_secs=60 seconds of wall-clock time.*--seed',
  ):
    table.lookup(_keys(1), training=True)
