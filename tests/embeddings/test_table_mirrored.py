"""Embedding tables under MultiWorkerMirroredStrategy: replicas stay equal.

Two worker processes (127.0.0.1, free ports) train a ModelBuilder's
training graph on different data. Each keeps a copy of the table and its
statistics; the copies must stay identical (the same counts, stamps,
evictions and rows), and only rows some replica looked up may change.
"""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

_SCRIPT = r'''
import json, os, sys
import numpy as np
index = int(sys.argv[1])
import tensorflow as tf
from tensorfx import embeddings, training

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
builder._strategy = strategy
with strategy.scope():
  builder.global_step = tf.Variable(
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
'''


def _port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def test_replicas_keep_identical_tables_and_statistics():
  cluster = {'worker': [f'127.0.0.1:{_port()}', f'127.0.0.1:{_port()}']}
  processes = []
  try:
    for index in range(2):
      env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', TF_CONFIG=json.dumps(
          {'cluster': cluster, 'task': {'type': 'worker', 'index': index}}))
      processes.append(subprocess.Popen(
          [sys.executable, '-c', _SCRIPT, str(index)], env=env,
          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=240) for p in processes]
  finally:
    for p in processes:
      if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
  for p, (_, err) in zip(processes, outputs):
    assert p.returncode == 0, err[-3000:]
  first, second = (json.loads(out.strip().splitlines()[-1])
                   for out, _ in outputs)
  assert first == second
  assert first['steps'] == 20
  # Keys (rows) are below 20; nothing else but the default row (64) trains.
  keys = set(range(20))
  assert set(first['changed']) <= keys | {64}
  assert set(first['moments']) <= keys | {64}
  assert sum(first['counts']) > 0 and first['evicted'] > 0
