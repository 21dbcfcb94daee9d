"""Embedding tables under MultiWorkerMirroredStrategy: replicas stay equal.

Two worker processes (127.0.0.1, free ports) train a ModelBuilder's
training graph on different data. Each keeps a copy of the table and its
statistics; the copies must stay identical (the same counts, stamps,
evictions and rows), and only rows some replica looked up may change. An
exact-key table's copies hold the same key -> row map (each step's new
keys agreed across workers), the tables' gradients travel as slices, and
training converges.
"""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.release]

_SCRIPT = r"""
import json, os, sys
import numpy as np
index = int(sys.argv[1])
import tensorflow as tf
from tensorfx import embeddings, training
from tensorfx.training._builderbase import engine_of

strategy = tf.distribute.MultiWorkerMirroredStrategy()

class Builder(training.ModelBuilder):
  def build_input(self, source, batch, epochs, shuffle):
    # Lists of 0 to 2 keys, drifting (old keys go stale and are evicted);
    # each worker reads its own part.
    keys = tf.data.Dataset.range(400).map(
        lambda i: tf.range(i % 3) * 7 + i // 40)
    return tf.data.Dataset.zip({'keys': keys,
                                'y': tf.data.Dataset.range(400)}).map(
        lambda d: dict(d, y=tf.cast(d['y'] % 2, tf.float32))).ragged_batch(8)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'table'):
      self.table = embeddings.EmbeddingTable(
          'keys', dim=4, capacity=64, admit_after=2, evict_after_steps=6,
          evict_every_steps=2)
      self.dense = __import__('tf_keras').layers.Dense(1)
    return self.dense(self.table.lookup(inputs['keys'], 'sum',
                                        training=training))[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    return tf.reduce_mean(tf.square(inferences - inputs['y'])), self.optimizer

args = training.ModelArguments.parse(['--batch-size', '8', '--seed', '1'])
builder = Builder(args, None)
engine_of(builder).strategy = strategy
with strategy.scope():
  engine_of(builder).global_step = tf.Variable(
      0, dtype=tf.int64, trainable=False,
      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  train = builder.build_training_graph()
before = builder.table.embeddings.numpy()
loss, steps = train.loop(iter(train.dataset), tf.constant(20, tf.int64))
after = builder.table.embeddings.numpy()
moments = builder.sparse_optimizer._m_slots[0].numpy()
print(json.dumps({
    'steps': int(steps),
    'counts': builder.table.counts.numpy().tolist(),
    'last_seen': builder.table.last_seen.numpy().tolist(),
    'evicted': int(builder.table.evicted.numpy()),
    'rows': float(np.abs(after).sum()),
    'changed': np.nonzero((before != after).any(axis=1))[0].tolist(),
    'moments': np.nonzero(moments.any(axis=1))[0].tolist(),
}))
"""


def _port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _run_workers(script, *args, lines=1, chief=False):
  """The last JSON line (or `lines` lines) each of two workers printed.

  With `chief`, the first is a chief (as in a tensorfx job's TF_CONFIG).
  """
  tasks = (
    [('chief', 0), ('worker', 0)] if chief else [('worker', 0), ('worker', 1)]
  )
  cluster = {}
  for kind, _ in tasks:
    cluster.setdefault(kind, []).append(f'127.0.0.1:{_port()}')
  processes = []
  try:
    for index, (kind, task) in enumerate(tasks):
      env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL='3',
        TF_CONFIG=json.dumps(
          {'cluster': cluster, 'task': {'type': kind, 'index': task}}
        ),
      )
      processes.append(
        subprocess.Popen(
          [sys.executable, '-c', script, str(index), *args],
          env=env,
          stdout=subprocess.PIPE,
          stderr=subprocess.PIPE,
          text=True,
        )
      )
    outputs = [p.communicate(timeout=240) for p in processes]
  finally:
    for p in processes:
      if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
  for p, (_, err) in zip(processes, outputs):
    assert p.returncode == 0, err[-3000:]
  if lines == 1:
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
  return [
    [json.loads(line) for line in out.strip().splitlines()[-lines:]]
    for out, _ in outputs
  ]


def test_replicas_keep_identical_tables_and_statistics():
  first, second = _run_workers(_SCRIPT)
  assert first == second
  assert first['steps'] == 20
  # Keys (rows) are below 20; nothing else but the default row (64) trains.
  keys = set(range(20))
  assert set(first['changed']) <= keys | {64}
  assert set(first['moments']) <= keys | {64}
  assert sum(first['counts']) > 0 and first['evicted'] > 0


_EXACT_SCRIPT = r'''
import json, os, sys
import numpy as np
import tensorflow as tf
import tf_keras
from tensorfx import embeddings, training
from tensorfx.training._builderbase import engine_of

args = training.ModelArguments.parse(
    ['--batch-size', '16', '--seed', '1', '--learning-rate', '0.05'])
# The strategy a job's chief and worker make, as in a job.
strategy = training.Configuration.environment().create_device_setter(args)
KEYS = 40


class Recording(embeddings.LazyAdam):
  """Remembers the type of the gradients it is given (when traced)."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.seen = set()

  def update_step(self, gradient, variable):
    self.seen.add(type(gradient).__name__)
    return super().update_step(gradient, variable)


class Builder(training.ModelBuilder):
  """y = key % 2 from the key's own row; old keys drift out and are evicted."""

  def build_input(self, source, batch, epochs, shuffle):
    keys = tf.data.Dataset.range(100000).map(
        lambda i: (i * 7) % KEYS + (i // 600) * KEYS)
    return keys.map(lambda k: {
        'keys': k, 'y': tf.cast(k % 2, tf.float32)}).batch(batch)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'items'):
      self.items = embeddings.EmbeddingTable(
          'items', dim=4, capacity=128, hashing='exact', admit_after=2,
          evict_after_steps=30, evict_every_steps=5)
      self.users = embeddings.EmbeddingTable('users', dim=4, capacity=32)
      self.dense = tf_keras.layers.Dense(1)
    keys = inputs['keys']
    vectors = tf.concat([self.items.lookup(keys, training=training),
                         self.users.lookup(keys * 3, training=training)], 1)
    return self.dense(vectors)[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    return tf.reduce_mean(tf.square(inferences - inputs['y'])), self.optimizer

  def build_sparse_optimizer(self):
    return Recording(learning_rate=0.05)


builder = Builder(args, None)
engine_of(builder).strategy = strategy
with strategy.scope():
  engine_of(builder).global_step = tf.Variable(
      0, dtype=tf.int64, trainable=False,
      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  train = builder.build_training_graph()
iterator = iter(train.dataset)
first, _ = train.loop(iterator, tf.constant(1, tf.int64))
threads = len(os.listdir('/proc/self/task'))
last, steps = train.loop(iterator, tf.constant(119, tf.int64))
threads = len(os.listdir('/proc/self/task')) - threads
keys, entries = builder.items._keys.indexes[0].table.export()
order = np.argsort(keys.numpy())
print(json.dumps({
    'steps': int(steps) + 1,
    'first_loss': float(first), 'last_loss': float(last),
    'keys': keys.numpy()[order].tolist(),
    'entries': entries.numpy()[order].tolist(),
    'rows': builder.items.embeddings.numpy().tolist(),
    'free': int(builder.items._keys.indexes[0].free_rows()),
    'evicted': int(builder.items.evicted.numpy()),
    'gradients': sorted(builder.sparse_optimizer.seen),
    'kind': type(strategy).__name__,
}))
print(json.dumps({'threads_added': threads}))
'''


@pytest.mark.cluster
def test_exact_keys_agree_across_workers_and_train():
  (first, first_threads), (second, second_threads) = _run_workers(
    _EXACT_SCRIPT, lines=2, chief=True
  )
  assert first['kind'] == 'CollectiveAllReduceStrategy'  # multi-worker
  # 119 calls of the step (one step each) leave no threads behind: a
  # collective timeout once held a thread per collective for 300 s, and
  # long runs aborted.
  assert first_threads['threads_added'] < 20, first_threads
  assert second_threads['threads_added'] < 20, second_threads
  # The same keys in the same rows, with the same counts and stamps, and
  # the same vectors: every worker recorded every worker's keys.
  assert first == second
  assert first['steps'] == 120
  rows = [row for row, _, _ in first['entries'] if row >= 0]
  assert len(rows) == len(set(rows)) and all(0 <= r < 128 for r in rows)
  # 240 steps of 16 instances moved past the first 40 keys: they were
  # evicted and their rows given to the next ones.
  assert first['evicted'] >= 40 and first['free'] == 128 - len(rows)
  assert first['gradients'] == ['IndexedSlices']
  assert first['last_loss'] < 0.05 < first['first_loss']
