"""dynamic_expansion: an exact-key table grows while it trains.

As mxRec's use_dynamic_expansion: it keeps every row and optimizer slot, and a restart
from its checkpoint continues with the grown table.

Single node: a `tf.function` training step, and a `ModelBuilder`'s own
training graph (the engine's step, several steps per call). Under
parameter servers (a child process with an in-process cluster) the rows
are fixed, as many as the job grew the table to: remote execution cannot
pass variables of a shape not fully known.
"""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from ps_cluster_script import in_process_cluster
from tensorfx import ConfigurationError
from tensorfx import embeddings
from tensorfx import training
from tensorfx.training import _callbacks
from tensorfx.training._builderbase import engine_of
from tensorfx.training._callbacks import table_fill
from tensorfx.training._run import summaries as _summaries

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


def _keys(*values):
  return tf.constant(values, tf.int64)


def _table_and_trainer(capacity=4, **kwargs):
  step = tf.Variable(0, dtype=tf.int64)
  optimizer = embeddings.LazyAdam(0.1)
  table = embeddings.EmbeddingTable(
    'items',
    dim=4,
    capacity=capacity,
    hashing='exact',
    step_counter=step,
    optimizer=optimizer,
    dynamic_expansion=True,
    **kwargs,
  )
  table.build()
  optimizer.build(table.shards)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
  def train(keys):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(table.lookup(keys, training=True) - 1))
    gradients = tape.gradient(loss, table.shards)
    optimizer.apply_gradients(zip(gradients, table.shards))
    step.assign_add(1)

  return table, step, optimizer, lambda *keys: train(_keys(*keys))


def _state(table, optimizer, keys):
  rows = table.rows(keys).numpy()
  return {
    'rows': rows,
    'vectors': table.lookup(keys).numpy(),
    'm': optimizer._m_slots[0].numpy()[rows],
    'v': optimizer._v_slots[0].numpy()[rows],
    'count': table.statistics(keys)['count'].numpy(),
  }


@pytest.mark.release
def test_a_table_grows_past_its_capacity_keeping_rows_and_slots(tmp_path):
  table, step, optimizer, train = _table_and_trainer(capacity=4)
  train(1, 2, 3)  # 3 of 4 rows: not yet past 0.8
  assert (table.current_capacity(), int(table.expansions.numpy())) == (4, 0)
  first = _state(table, optimizer, _keys(1, 2, 3))
  train(4)  # 4 of 4: doubles, in the step
  assert (table.current_capacity(), int(table.expansions.numpy())) == (8, 1)
  # The rows and slots already there did not move or change.
  after = _state(table, optimizer, _keys(1, 2, 3))
  for name in ('rows', 'vectors', 'm', 'v', 'count'):
    np.testing.assert_array_equal(after[name], first[name], err_msg=name)
  train(5, 6, 7, 8)  # 8 of 8: 16
  train(9, 10, 11)
  assert table.current_capacity() == 16 and table.capacity == 4
  keys = _keys(*range(1, 12))
  rows = table.rows(keys).numpy()
  # Every key its own row; the default row (4, the starting capacity) is
  # nobody's; slots grew with the rows.
  assert (rows >= 0).all() and len(set(rows.tolist())) == 11
  assert table.default_row == 4 and 4 not in rows.tolist()
  assert optimizer._m_slots[0].shape[0] is None
  assert optimizer._m_slots[0].numpy().shape == (17, 4)
  assert int(table.live_rows()) == 11

  # A restart from the checkpoint: the table of the same configuration
  # grows to the saved rows and continues with every key.
  saved = _state(table, optimizer, keys)
  path = tf.train.Checkpoint(step=step, table=table, optimizer=optimizer).write(
    str(tmp_path / 'ck')
  )
  again, again_step, again_optimizer, train_again = _table_and_trainer(4)
  tf.train.Checkpoint(
    step=again_step, table=again, optimizer=again_optimizer
  ).read(path).assert_existing_objects_matched()
  assert again.current_capacity() == 16
  assert int(again.expansions.numpy()) == 2
  restored = _state(again, again_optimizer, keys)
  for name, value in saved.items():
    np.testing.assert_array_equal(restored[name], value, err_msg=name)
  train_again(12, 13)
  assert (
    sorted(again.rows(_keys(12, 13)).numpy().tolist())
    == sorted(set(range(17)) - {4} - set(rows.tolist()))[:2]
  )
  assert int(again.live_rows()) == 13


def test_dynamic_expansion_needs_exact_keys_and_a_threshold_in_range():
  with pytest.raises(ConfigurationError, match="give hashing='exact'"):
    embeddings.EmbeddingTable('t', dim=2, capacity=4, dynamic_expansion=True)
  with pytest.raises(
    ConfigurationError,
    match=r'expansion_threshold must be '
    r'a share of the rows in \(0, 1\]',
  ):
    embeddings.EmbeddingTable(
      't',
      dim=2,
      capacity=4,
      hashing='exact',
      dynamic_expansion=True,
      expansion_threshold=2,
    )
  with pytest.raises(
    ConfigurationError,
    match='its optimizer must grow its '
    'slots with the rows.*Received: optimizer=Adam',
  ):
    embeddings.EmbeddingTable(
      't',
      dim=2,
      capacity=4,
      hashing='exact',
      dynamic_expansion=True,
      optimizer=tf_keras.optimizers.Adam(),
    )
  table = embeddings.EmbeddingTable.from_params(
    'item',
    {'dim': 2, 'capacity': 8, 'hashing': 'exact', 'dynamic_expansion': True},
  )
  assert table.dynamic_expansion


class _Builder(training.ModelBuilder):
  """Ever new keys: 8 a step, against a table of 16 rows."""

  def build_input(self, source, batch, epochs, shuffle):
    keys = tf.data.Dataset.range(10_000).map(lambda i: i // 2)
    return tf.data.Dataset.zip(
      {'keys': keys, 'y': keys.map(lambda k: tf.cast(k % 2, tf.float32))}
    ).batch(batch)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'table'):
      self.table = embeddings.EmbeddingTable(
        'keys', dim=4, capacity=16, hashing='exact', dynamic_expansion=True
      )
      self.dense = tf_keras.layers.Dense(1)
    return self.dense(self.table.lookup(inputs['keys'], training=training))[
      :, 0
    ]

  def build_training(self, global_steps, inputs, inferences):
    return (tf.reduce_mean(tf.square(inferences - inputs['y'])), self.optimizer)


def _scalars(directory):
  """TensorBoard's scalars in the event files of `directory`: tag -> values."""
  found = {}
  for path in tf.io.gfile.glob(os.path.join(directory, 'events.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        found.setdefault(value.tag, []).append(
          float(tf.make_ndarray(value.tensor))
        )
  return found


def test_the_engine_s_training_loop_grows_the_table_without_stopping(
  tmp_path, caplog
):
  builder = _Builder(
    training.ModelArguments.parse(['--batch-size', '16', '--seed', '1']), None
  )
  engine_of(builder).strategy = tf.distribute.get_strategy()
  engine_of(builder).global_step = tf.Variable(
    0, dtype=tf.int64, trainable=False
  )
  train = builder.build_training_graph()
  iterator = iter(train.dataset)
  # The trainer's callback of the table's fill, with a real summary writer.
  summaries = _summaries.Summaries(str(tmp_path))
  fill = table_fill.TableFillCallback()
  fill.set_context(
    _callbacks.RunContext(
      builder=builder, output=str(tmp_path), summaries=summaries
    )
  )
  fill.on_train_begin({'step': 0})
  # One call of the loop: 12 steps in one tf.function call (96 keys).
  _, steps = train.loop(iterator, tf.constant(12, tf.int64))
  table = builder.table
  assert int(steps) == 12
  assert table.current_capacity() == 128 and table.capacity == 16
  assert int(table.expansions.numpy()) == 3
  assert int(table.live_rows()) == 96
  rows = table.rows(tf.range(96, dtype=tf.int64)).numpy()
  assert (rows >= 0).all() and len(set(rows.tolist())) == 96
  # The sparse optimizer's slots grew too, and trained the rows looked up.
  moments = builder.sparse_optimizer._m_slots[0].numpy()
  assert moments.shape == (129, 4) and np.abs(moments[rows]).sum() > 0
  with caplog.at_level(logging.INFO, logger='tensorfx'):
    fill.on_step_end(12, {'loss': 0.1})
  summaries.close()
  assert "EmbeddingTable 'keys' grew from 16 to 128 rows" in caplog.text
  scalars = _scalars(os.path.join(str(tmp_path), 'train'))
  assert scalars['embeddings/keys/capacity'] == [128.0]
  assert scalars['embeddings/keys/live_rows'] == [96.0]
  assert scalars['embeddings/keys/fill'] == [0.75]


_PS_SCRIPT = (
  r"""
import json, socket
import tensorflow as tf
from tensorfx import embeddings, training
from tensorfx.embeddings import _expansion

num_ps = 1
"""
  + in_process_cluster(1)
  + r"""
_expansion.start_rows({'items': 129})  # the job grew it once before
with strategy.scope():
  fresh = embeddings.EmbeddingTable('fresh', dim=8, capacity=64,
                                    hashing='exact', dynamic_expansion=True)
  grown = embeddings.EmbeddingTable('items', dim=8, capacity=64,
                                    hashing='exact', dynamic_expansion=True)
  fresh.build()
  grown.build()
print(json.dumps({t.name: {
    'shape': t.embeddings.shape.as_list(),
    'in_step': t.grows_in_step,
    'capacity': t.current_capacity(),
    'free': int(t._keys.indexes[0].free_rows()),
    'stack': t._keys.indexes[0].free.shape.as_list(),
} for t in (fresh, grown)}))
"""
)


@pytest.mark.slow
@pytest.mark.cluster
def test_under_parameter_servers_a_table_has_the_fixed_rows_its_job_grew_to():
  # Remote execution cannot pass a variable whose shape is not fully known:
  # there the table's rows are fixed, as many as the job grew it to (the
  # chief grows it by restarting in place; see test_table_training).
  result = subprocess.run(
    [sys.executable, '-c', _PS_SCRIPT],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  tables = json.loads(result.stdout.strip().splitlines()[-1])
  assert tables['fresh'] == {
    'shape': [65, 8],
    'in_step': False,
    'capacity': 64,
    'free': 64,
    'stack': [64],
  }
  # The grown rows past the default row wait for the restore to free them.
  assert tables['items'] == {
    'shape': [129, 8],
    'in_step': False,
    'capacity': 128,
    'free': 64,
    'stack': [128],
  }
