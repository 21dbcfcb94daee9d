"""The hand-written exact-key reference gives every key its own row.

`benchmarks/exact_tables.py` is what `distributed.py` compares tensorfx's
exact-key tables with: `tf.lookup` hash tables beside the shards of each
table's rows. On one device: a distinct row per distinct key, the same row
on every later lookup, the default row once the table is full, nothing
inserted outside training, and training that moves only the rows looked
up. Under parameter servers (an in-process cluster in a child process):
the rows split over two servers, each shard's index beside it, and two
workers training at once on overlapping new keys never hand one key two
rows nor one row two keys.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import exact_tables  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402


def _keys(*values):
  return tf.constant(values, tf.int64)


def _located(layer, keys, training=False):
  return [tuple(p) for p in layer.locate(0, _keys(*keys), training).numpy()]


def test_each_distinct_key_gets_its_own_row_and_keeps_it():
  layer = exact_tables.ExactEmbeddings([50], dim=4)
  layer([_keys(0)])
  first = _located(layer, [7, 9, 7, 123456789, -3, 9], training=True)
  # Repeats of a key in one lookup share its row; distinct keys do not.
  assert first[0] == first[2] and first[1] == first[5]
  rows = {first[i] for i in (0, 1, 3, 4)}
  assert len(rows) == 4
  # A later lookup, training or not, finds the same rows, and new keys
  # beside them take rows of their own.
  assert _located(layer, [-3, 123456789, 9, 7]) == [
    first[4],
    first[3],
    first[1],
    first[0],
  ]
  again = _located(layer, [9, 8, 7], training=True)
  assert again[0] == first[1] and again[2] == first[0]
  assert again[1] not in rows
  # The vectors are the rows': one key, one vector.
  (vectors,) = layer([_keys(7, 9, 7)], training=True)
  table = layer.rows[0].numpy()
  np.testing.assert_array_equal(
    vectors.numpy(), table[[first[0][1], first[1][1], first[0][1]]]
  )


def test_a_full_table_reads_the_default_row_and_inserts_nothing():
  layer = exact_tables.ExactEmbeddings([3], dim=2)
  layer([_keys(0)])
  default = (0, 3)  # One shard of 4 rows: the last is the default.
  held = _located(layer, [10, 11, 12], training=True)
  assert sorted(held) == [(0, 0), (0, 1), (0, 2)]
  # Full: new keys read the default row, now and later, and the keys
  # that hold rows keep them.
  assert _located(layer, [13, 14, 10], training=True) == [
    default,
    default,
    held[0],
  ]
  assert _located(layer, [13, 11], training=True) == [default, held[1]]
  assert int(layer.indexes[0][0].size()) == 3


def test_a_lookup_outside_training_inserts_nothing():
  layer = exact_tables.ExactEmbeddings([10], dim=2)
  layer([_keys(0)])
  assert _located(layer, [5, 6]) == [(0, 10), (0, 10)]
  assert int(layer.indexes[0][0].size()) == 0
  assert _located(layer, [5], training=True) == [(0, 0)]


def test_training_moves_only_the_rows_looked_up():
  layer = exact_tables.ExactEmbeddings([20, 20], dim=3)
  layer([_keys(0), _keys(0)])
  optimizer = tf_keras.optimizers.Adagrad(0.5)
  optimizer.build(layer.trainable_variables)

  @tf.function
  def step(first, second):
    with tf.GradientTape() as tape:
      a, b = layer([first, second], training=True)
      loss = tf.reduce_sum(tf.square(a - 1.0)) + tf.reduce_sum(b)
    variables = layer.trainable_variables
    gradients = tape.gradient(loss, variables)
    # Only the rows looked up: a sparse gradient, as Embedding's.
    assert all(isinstance(g, tf.IndexedSlices) for g in gradients)
    optimizer.apply_gradients(zip(gradients, variables))

  before = [v.numpy() for v in layer.rows]
  step(_keys(4, 8, 4), _keys(300))
  after = [v.numpy() for v in layer.rows]
  moved = [
    sorted(np.flatnonzero((b != a).any(axis=1)).tolist())
    for b, a in zip(before, after)
  ]
  assert moved == [
    sorted(r for _, r in _located(layer, [4, 8])),
    [int(layer.locate(1, _keys(300)).numpy()[0, 1])],
  ]


_CLUSTER_SCRIPT = r"""
import json, os, socket, sys
import numpy as np
import tensorflow as tf
import tf_keras
sys.path.insert(0, sys.argv[1])
import exact_tables

def port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

cluster = {'chief': [f'127.0.0.1:{port()}'],
           'worker': [f'127.0.0.1:{port()}' for _ in range(2)],
           'ps': [f'127.0.0.1:{port()}' for _ in range(2)]}
spec = tf.train.ClusterSpec(cluster)
# Workers need spare inter-op threads on a 2-core machine.
config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
servers = [tf.distribute.Server(spec, job_name=job, task_index=i,
                                protocol='grpc', config=config)
           for job in ('worker', 'ps') for i in range(2)]
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
    spec, task_type='chief', task_id=0, rpc_layer='grpc')
# Split anything over 1 KiB: a table of 40,000 rows of 8 floats is two shards.
strategy = tf.distribute.ParameterServerStrategy(
    resolver,
    variable_partitioner=tf.distribute.experimental.partitioners
    .MinSizePartitioner(min_shard_bytes=1024, max_shards=2))
capacity = 39999
with strategy.scope():
  layer = exact_tables.ExactEmbeddings([capacity], dim=8)
  layer([tf.zeros([1], tf.int64)])
  optimizer = tf_keras.optimizers.Adagrad(0.1)
  optimizer.build(layer.trainable_variables)
shards = layer.trainable_variables
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

@tf.function
def insert(keys):
  strategy.run(lambda k: layer.locate(0, k, training=True), (keys,))

# Closures in pairs with the same keys, half of them new: the two workers
# run a pair at once, and without the lock both would find a new key absent
# and give it two rows (without it, this failed most runs).
for i in range(300):
  first = (i // 2) * 250
  coordinator.schedule(insert, args=(tf.range(first, first + 500, dtype=tf.int64),))
coordinator.join()
looked_up = set(range(first + 500))

def train(keys):
  with tf.GradientTape() as tape:
    (vectors,) = layer([keys], training=True)
    loss = tf.reduce_sum(tf.square(vectors - 1.0))
  gradients = tape.gradient(loss, shards)
  optimizer.apply_gradients(zip(gradients, shards))

@tf.function
def worker_step(keys):
  strategy.run(train, (keys,))

# Training: keys held and new ones, on both workers.
before = [s.numpy() for s in shards]
trained = set()
for i in range(8):
  keys = list(range(37500 + 100 * i, 37500 + 100 * i + 200))
  trained.update(keys)
  coordinator.schedule(worker_step, args=(tf.constant(keys, tf.int64),))
coordinator.join()
looked_up |= trained
after = [s.numpy() for s in shards]
keys = sorted(looked_up)
located = layer.locate(0, tf.constant(keys, tf.int64)).numpy().tolist()
moved = sorted(
    [s, int(r)] for s, (b, a) in enumerate(zip(before, after))
    for r in np.flatnonzero((b != a).any(axis=1)))
trained_rows = sorted(
    layer.locate(0, tf.constant(sorted(trained), tf.int64)).numpy().tolist())
print(json.dumps({
    'shards': [[int(s.shape[0]), s.device] for s in shards],
    'indexes': [[int(i.size()), i.resource_handle.device]
                for i in layer.indexes[0]],
    'counters': [int(c.numpy()) for c in layer.counters[0]],
    'keys': keys,
    'located': located,
    'moved': moved,
    'trained': trained_rows,
}))
"""


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.release
def test_two_workers_on_two_parameter_servers_never_share_a_row():
  result = subprocess.run(
    [
      sys.executable,
      '-c',
      _CLUSTER_SCRIPT,
      os.path.join(ROOT, 'benchmarks'),
    ],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
    env={**os.environ, 'GRPC_FAIL_FAST': 'use_caller'},
  )
  assert result.returncode == 0, result.stderr[-4000:]
  report = json.loads(result.stdout.strip().splitlines()[-1])
  # 40,000 rows split over the two servers, each index on its shard's
  # server.
  (rows0, device0), (rows1, device1) = report['shards']
  assert rows0 + rows1 == 40000 and {device0, device1} == {
    f'/job:ps/replica:0/task:{i}/device:CPU:0' for i in (0, 1)
  }
  assert [device for _, device in report['indexes']] == [device0, device1]
  keys, located = report['keys'], report['located']
  # Each key on the shard it routes to, in a row of its own, below the
  # shard's default row.
  assert [shard for shard, _ in located] == [k % 2 for k in keys]
  assert len({tuple(p) for p in located}) == len(keys)
  assert all(row < report['shards'][s][0] - 1 for s, row in located)
  # Every key was inserted once: no row was handed out and then lost.
  assert [size for size, _ in report['indexes']] == [
    sum(1 for k in keys if k % 2 == s) for s in (0, 1)
  ]
  assert report['counters'] == [size for size, _ in report['indexes']]
  # Training moved the rows it looked up, and no other.
  assert report['moved'] == report['trained']
