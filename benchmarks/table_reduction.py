"""Embedding tables' gradients under MultiWorkerMirroredStrategy: sparse vs dense.

Two workers on 127.0.0.1 (free ports) train the same model of one hashed
table twice in turns, in the same processes: the table's gradients and
admission counts summed across workers as slices (what tensorfx does, one
step per call) and as dense tensors of the table's size (what it did
before, 50 steps per call). Prints steps/s of each and their ratio (one run, no timing is
asserted anywhere).

  python benchmarks/table_reduction.py --capacity 100000 --steps 200
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys

_WORKER = r"""
import json, sys, time
import tensorflow as tf
import tf_keras
from tensorfx import embeddings, training
from tensorfx.embeddings import _replicas
from tensorfx.training._builderbase import engine_of

capacity, steps, batch = (int(a) for a in sys.argv[2:5])
strategy = tf.distribute.MultiWorkerMirroredStrategy()


class Builder(training.ModelBuilder):
  def build_input(self, source, batch, epochs, shuffle):
    keys = tf.data.Dataset.range(10**9).map(lambda i: (i * 7919) % (capacity * 3))
    return keys.map(lambda k: {'keys': k, 'y': tf.cast(k % 2, tf.float32)}
                    ).batch(batch)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'table'):
      self.table = embeddings.EmbeddingTable('t', dim=16, capacity=capacity)
      self.dense = tf_keras.layers.Dense(1)
    return self.dense(self.table.lookup(inputs['keys'], training=training))[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    return tf.reduce_mean(tf.square(inferences - inputs['y'])), self.optimizer


def make(dense):
  builder = Builder(training.ModelArguments.parse(
      ['--batch-size', str(batch), '--seed', '1']), None)
  engine = engine_of(builder)
  engine.strategy = strategy
  # Read when the step is traced (below).
  _replicas.SPARSE_SUMS = not dense
  with strategy.scope():
    engine.global_step = tf.Variable(
        0, dtype=tf.int64, trainable=False,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    train = builder.build_training_graph()
  iterator = iter(train.dataset)
  train.loop(iterator, tf.constant(5, tf.int64))  # traced, warmed up
  return train, iterator


def rate(train, iterator, per_call):
  start = time.perf_counter()
  done = 0
  while done < steps:
    _, ran = train.loop(iterator, tf.constant(min(per_call, steps - done),
                                              tf.int64))
    done += int(ran)
  return steps / (time.perf_counter() - start)


sparse, dense = make(False), make(True)
results = {'sparse': [], 'dense': []}
for _ in range(2):
  results['sparse'].append(rate(*sparse, 50))
  results['dense'].append(rate(*dense, 50))
print(json.dumps(results))
"""


def _port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--capacity', type=int, default=100000)
  parser.add_argument('--steps', type=int, default=200)
  parser.add_argument('--batch', type=int, default=256)
  args = parser.parse_args()
  cluster = {'worker': [f'127.0.0.1:{_port()}', f'127.0.0.1:{_port()}']}
  processes = []
  try:
    for index in range(2):
      env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL='3',
        TF_CONFIG=json.dumps(
          {'cluster': cluster, 'task': {'type': 'worker', 'index': index}}
        ),
      )
      processes.append(
        subprocess.Popen(
          [
            sys.executable,
            '-c',
            _WORKER,
            str(index),
            str(args.capacity),
            str(args.steps),
            str(args.batch),
          ],
          env=env,
          stdout=subprocess.PIPE,
          stderr=subprocess.PIPE,
          text=True,
        )
      )
    outputs = [p.communicate(timeout=1800) for p in processes]
  finally:
    for p in processes:
      if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
  for p, (_, err) in zip(processes, outputs):
    if p.returncode:
      sys.exit(err[-3000:])
  results = json.loads(outputs[0][0].strip().splitlines()[-1])
  sparse = max(results['sparse'])
  dense = max(results['dense'])
  print(f'table {args.capacity} x 16, batch {args.batch} a worker, 2 workers')
  print(f'sparse (slices, 1 step a call): {sparse:8.1f} steps/s')
  print(f'dense  (table-sized, 50 a call): {dense:8.1f} steps/s')
  print(f'sparse / dense: {sparse / dense:.2f}')


if __name__ == '__main__':
  main()
