"""Exact keys under parameter servers: concurrent workers, growth, re-sharding.

Each run is a child process with an in-process cluster (a chief, 2 workers
and N parameter servers on free ports). Two workers run steps at once on
overlapping, drifting keys (admission races, evictions), each step looking
the table up twice (as an item and a history share one). A table trained
over 2 parameter servers is saved and restored over 1 with twice the
capacity; a table grown there is restored over 2 again.
"""

import json
import subprocess
import sys

import pytest

from ps_cluster_script import in_process_cluster

pytestmark = [
  pytest.mark.cluster,
  pytest.mark.slow,
  pytest.mark.xdist_group('test_exact_sharding'),
  pytest.mark.release,
]

_SCRIPT = (
  r"""
import json, socket, sys
import numpy as np
import tensorflow as tf
from tensorfx import embeddings, training

num_ps, capacity = int(sys.argv[1]), int(sys.argv[2])
restore, save, first = sys.argv[3], sys.argv[4], int(sys.argv[5])

"""
  + in_process_cluster(2)
  + r'''
with strategy.scope():
  step = tf.Variable(0, dtype=tf.int64, name='step')
  optimizer = embeddings.LazyAdam(0.05)
  table = embeddings.EmbeddingTable(
      'items', dim=8, capacity=capacity, hashing='exact', admit_after=2,
      evict_after_steps=12, evict_every_steps=3, step_counter=step,
      optimizer=optimizer)
  table.build()
  optimizer.build(table.shards)
checkpoint = tf.train.Checkpoint(step=step, table=table, optimizer=optimizer)
exact = table._keys

def layout():
  """Every key's entry; whether held and free rows partition the rows."""
  keys, entries, free = (t.numpy() for t in exact.export())
  rows = entries[:, 0]
  held = rows[rows >= 0]
  everything = np.concatenate([held, free])
  return keys, entries, {
      'indexes': [int(index.table.size()) for index in exact.indexes],
      'held': int(held.size),
      'distinct': bool(np.unique(held).size == held.size),
      'partition': sorted(everything.tolist()) == list(range(capacity)),
      # Every index holds and hands out rows of its own shard only.
      'own_shard': all(
          bool(np.all((r < 0) | ((r >= first) & (r < limit))))
          for index, (first, limit) in zip(exact.indexes, exact.ranges)
          for r in [index.export()[1].numpy()[:, 0]])
      and all(
          bool(np.all((f >= first) & (f < limit)))
          for index, (first, limit) in zip(exact.indexes, exact.ranges)
          for f in [index.export()[2].numpy()]),
      'live': int(table.live_rows())}

def by_key(keys, entries):
  held = entries[:, 0] >= 0
  rows = entries[held, 0]
  m = np.concatenate([s.numpy() for s in optimizer._m_slots])
  return {'keys': keys[held], 'vectors': table.embeddings.numpy()[rows] if
          num_ps == 1 else np.concatenate([s.numpy() for s in table.shards])[rows],
          'm': m[rows], 'counts': entries[held, 1], 'last': entries[held, 2]}

report = {'shards': [int(v.shape[0]) for v in table.shards]}
if restore != '-':
  checkpoint.read(restore + '/ckpt').assert_existing_objects_matched()
  keys, entries, report['restored_layout'] = layout()
  got, expected = by_key(keys, entries), np.load(restore + '/keys.npz')
  order, saved_order = np.argsort(got['keys']), np.argsort(expected['keys'])
  report['restored'] = {name: bool(np.array_equal(got[name][order],
                                                  expected[name][saved_order]))
                        for name in expected.files}

def train_step(keys):
  with tf.GradientTape() as tape:
    # Twice in a step, as an item and a history of items share a table;
    # looked up together, one call per server records both.
    items, history = embeddings.lookup_tables(
        [(table, keys, 'sum'), (table, keys + 1, 'mean')], training=True)
    vectors = items + history
    loss = tf.reduce_sum(tf.square(vectors - 1.0))
  gradients = tape.gradient(loss, table.shards)
  optimizer.apply_gradients(zip(gradients, table.shards))
  step.assign_add(1)

@tf.function
def worker_step(keys):
  strategy.run(train_step, (keys,))

# The step's index calls: one per server, both lookups' keys in each.
graph = worker_step.get_concrete_function(
    tf.RaggedTensorSpec([2, None], tf.int64)).graph
report['server_calls'] = sorted(
    op.device.split('/job:ps/')[1].split('/')[1]
    for op in graph.get_operations()
    if op.type == 'StatefulPartitionedCall' and '/job:ps/' in op.device)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
# Lists of keys drifting upwards and overlapping: closures that run at once
# admit the same new keys; old keys go stale and are evicted.
for i in range(first, first + 40):
  keys = tf.ragged.constant([list(range(i * 40, i * 40 + 120, 3)),
                             list(range(i * 40, i * 40 + 60, 2))], tf.int64)
  coordinator.schedule(worker_step, args=(keys,))
coordinator.join()
keys, entries, report['layout'] = layout()
report['evicted'] = int(table.evicted.numpy())
report['steps'] = int(step.numpy())
checkpoint.write(save + '/ckpt')
np.savez(save + '/keys.npz', **by_key(keys, entries))
print(json.dumps(report))
'''
)


def _run(num_ps, capacity, restore, save, first):
  result = subprocess.run(
    [
      sys.executable,
      '-c',
      _SCRIPT,
      str(num_ps),
      str(capacity),
      str(restore),
      str(save),
      str(first),
    ],
    capture_output=True,
    text=True,
    timeout=240,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp('exact')
  two, grown, again = root / 'two', root / 'grown', root / 'again'
  for path in (two, grown, again):
    path.mkdir()
  return {
    'two': _run(2, 12000, '-', two, 0),
    'grown': _run(1, 24000, two, grown, 40),
    'again': _run(2, 24000, grown, again, 80),
  }


def test_concurrent_workers_never_give_two_keys_one_row(runs):
  first = runs['two']
  assert first['shards'] == [6001, 6000]  # the default row is the last
  layout = first['layout']
  assert len(layout['indexes']) == 2 and min(layout['indexes']) > 0
  assert layout['distinct'] and layout['partition'] and layout['own_shard']
  assert layout['held'] == layout['live'] > 100
  assert first['evicted'] > 0 and first['steps'] == 40
  # Two lookups, two indexes on two servers: one call to each server.
  assert first['server_calls'] == ['task:0', 'task:1']


def test_a_larger_capacity_over_other_servers_keeps_every_key(runs):
  grown = runs['grown']
  assert grown['shards'] == [24001]
  assert len(grown['restored_layout']['indexes']) == 1
  assert grown['restored_layout']['held'] == runs['two']['layout']['held']
  assert grown['restored_layout']['partition']
  assert grown['restored'] == {
    'keys': True,
    'vectors': True,
    'm': True,
    'counts': True,
    'last': True,
  }
  # Training goes on: new keys, rows from the larger capacity.
  assert grown['layout']['distinct'] and grown['layout']['partition']
  assert grown['steps'] == 80
  again = runs['again']
  assert again['restored'] == grown['restored']
  # Restored over 2 servers, the keys moved to rows of their index's shard.
  assert again['restored_layout']['own_shard']
  assert again['layout']['own_shard'] and again['layout']['partition']
  # Keys go to an index by a hash of the key: both get some.
  assert len(again['restored_layout']['indexes']) == 2
  assert min(again['restored_layout']['indexes']) > 0
  assert again['layout']['distinct'] and again['layout']['partition']
  assert again['steps'] == 120
