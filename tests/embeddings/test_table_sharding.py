"""Tables sharded over parameter servers: sparse training and re-sharding.

Each run is a child process with an in-process cluster (a chief, a worker
and N parameter servers on free ports): connecting to a cluster renames
the process's devices. A table trained over 2 parameter servers is saved,
restored over 1, trained and saved again, and restored over 2.
"""

import json
import subprocess
import sys

import pytest

from ps_cluster_script import in_process_cluster

pytestmark = [
  pytest.mark.cluster,
  pytest.mark.slow,
  pytest.mark.xdist_group('test_table_sharding'),
]

_SCRIPT = (
  r"""
import json, socket, sys
import numpy as np
import tensorflow as tf
from tensorfx import embeddings, training

num_ps, restore, save = int(sys.argv[1]), sys.argv[2], sys.argv[3]

"""
  + in_process_cluster(1)
  + r"""
with strategy.scope():
  step = tf.Variable(0, dtype=tf.int64, name='step')
  optimizer = embeddings.LazyAdam(0.05)
  table = embeddings.EmbeddingTable(
      'items', dim=8, capacity=20000, admit_after=2, evict_after_steps=1000,
      step_counter=step, optimizer=optimizer)
  table.build()
  optimizer.build(table.shards)
checkpoint = tf.train.Checkpoint(step=step, table=table, optimizer=optimizer)

def whole(variables):
  return np.concatenate([v.numpy() for v in variables])

def state():
  return {'embeddings': table.embeddings.numpy() if num_ps == 1 else
                        whole(table.shards),
          'm': whole(optimizer._m_slots), 'v': whole(optimizer._v_slots),
          'counts': tf.convert_to_tensor(table.counts).numpy(),
          'last_seen': tf.convert_to_tensor(table.last_seen).numpy(),
          'step': step.numpy()}

report = {'shards': [[v.device, int(v.shape[0])] for v in table.shards]}
if restore != '-':
  checkpoint.read(restore + '/ckpt').assert_existing_objects_matched()
  expected = np.load(restore + '/state.npz')
  got = state()
  report['restored'] = all(np.array_equal(got[k], expected[k])
                           for k in expected.files)

def train_step(keys):
  with tf.GradientTape() as tape:
    vectors = table.lookup(keys, training=True)
    loss = tf.reduce_sum(tf.square(vectors - 1.0))
  gradients = tape.gradient(loss, table.shards)
  optimizer.apply_gradients(zip(gradients, table.shards))
  step.assign_add(1)

@tf.function
def worker_step(keys):
  strategy.run(train_step, (keys,))

coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
before = state()
keys = tf.constant([5, 5, 17, 10001, 19999, 25], tf.int64)
for _ in range(3):
  coordinator.schedule(worker_step, args=(keys,))
coordinator.join()
after = state()
rows = lambda a, b: sorted(np.nonzero((a != b).any(axis=1))[0].tolist())
report['changed'] = rows(before['embeddings'], after['embeddings'])
report['moments'] = rows(np.zeros_like(after['m']), after['m'])
report['counts'] = [int(after['counts'][r]) for r in (5, 17, 25, 10001)]
checkpoint.write(save + '/ckpt')
np.savez(save + '/state.npz', **after)
print(json.dumps(report))
"""
)


def _run(num_ps, restore, save):
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT, str(num_ps), str(restore), str(save)],
    capture_output=True,
    text=True,
    timeout=180,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp('sharded')
  two, one, again = root / 'two', root / 'one', root / 'again'
  for path in (two, one, again):
    path.mkdir()
  return {
    'two': _run(2, '-', two),
    'one': _run(1, two, one),
    'again': _run(2, one, again),
  }


def test_the_table_is_split_across_parameter_servers(runs):
  # Round-robin placement: the first shard goes to the next free server.
  devices, rows = zip(*runs['two']['shards'])
  assert sorted(devices) == [
    '/job:ps/replica:0/task:0/device:CPU:0',
    '/job:ps/replica:0/task:1/device:CPU:0',
  ]
  assert rows == (10001, 10000)
  assert runs['one']['shards'] == [
    ['/job:ps/replica:0/task:0/device:CPU:0', 20001]
  ]


def test_only_looked_up_rows_train_on_parameter_servers(runs):
  first = runs['two']
  # Each key has its row; a key seen once reads the default row (20000)
  # until its second sighting (key 5, twice in a batch, at once). Rows on
  # both servers change; lazy Adam's moments exist for those rows only.
  assert first['changed'] == [5, 17, 25, 10001, 19999, 20000]
  assert first['moments'] == [5, 17, 25, 10001, 19999, 20000]
  assert first['counts'] == [6, 3, 3, 3]


def test_a_checkpoint_of_two_servers_restores_on_one_and_back(runs):
  assert runs['one']['restored']
  assert runs['again']['restored']
  # Training goes on from the restored counts.
  assert runs['one']['counts'] == [12, 6, 6, 6]
  assert runs['again']['counts'] == [18, 9, 9, 9]
