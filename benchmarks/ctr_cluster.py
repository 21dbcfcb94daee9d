"""The reference model on a hand-written TensorFlow cluster: its tasks.

What a user writes without tensorfx, one process per task, each reading its
role from `TF_CONFIG` (`distributed.py` starts them on 127.0.0.1 and
compares them with `tensorfx train --cluster`):

- `serve`: a parameter server or a worker of a parameter-server cluster:
  a `tf.distribute.Server` that serves until it is killed.
- `ps`: the coordinator (the chief) of that cluster: a
  `tf.distribute.ParameterServerStrategy` (variables above `--min-shard-
  bytes` split over the servers, as tensorfx splits them), a
  `ClusterCoordinator` scheduling closures of `--steps-per-closure` steps
  on per-worker datasets, joined every `--window` steps. The embeddings
  are `tf.Variable`s looked up by `tf.nn.embedding_lookup` (Keras
  `Embedding`), or with `--exact-keys` by exact key (`exact_tables.py`:
  `tf.lookup` tables beside the split variables); `--adagrad-tables RATE`
  trains them with Adagrad, which updates only the rows looked up.
- `mwm`: one replica of a `tf.distribute.MultiWorkerMirroredStrategy`
  cluster (the global batch split across the replicas, the data sharded
  by element), `--window` steps per `tf.function` call.

The coordinator, or the replica of the `chief` job, prints one JSON line:
`{"rate": examples/s, "began": ..., "ended": ...}`, measured after
`--warmup` steps (the span's ends in seconds since the epoch).

  TF_CONFIG=... python benchmarks/ctr_cluster.py ps --data D --rows N ...
"""

import argparse
from collections.abc import Callable
import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import ctr_data
import ctr_model
import tensorflow as tf
import tf_keras


def _example_inputs() -> dict[str, tf.Tensor]:
  """One row of model inputs: what builds the variables before training."""
  inputs = {r: tf.zeros([1]) for r in ctr_data.REALS}
  inputs.update({c: tf.zeros([1], tf.int64) for c in ctr_data.CATEGORICALS})
  return inputs


def _model_and_step(
  strategy: Any,
  adagrad_tables: float | None = None,
  table_kind: str | None = None,
) -> Callable[..., tf.Tensor]:
  """CtrNet and Adam made under `strategy`; returns the per-replica step.

  The variables are created here, up front: a parameter-server strategy
  cannot create them inside a step that runs on a worker. With
  `adagrad_tables` (a learning rate) the embeddings train with Keras'
  Adagrad, which updates only the rows a step looked up (as a tensorfx
  table's sparse optimizer does), the dense layers with Adam.
  `table_kind`: `CtrNet`'s `tables` (None: Keras `Embedding`s;
  `'hand-exact'`: exact keys by hand).
  """
  with strategy.scope():
    model = ctr_model.CtrNet(table_kind)
    optimizer = tf_keras.optimizers.Adam(ctr_model.LEARNING_RATE)
    model(_example_inputs())
    tables = [
      v for layer in model.embeddings for v in layer.trainable_variables
    ]
    dense = [
      v for v in model.trainable_variables if all(v is not t for t in tables)
    ]
    table_optimizer = None
    if adagrad_tables is not None:
      table_optimizer = tf_keras.optimizers.Adagrad(adagrad_tables)
      table_optimizer.build(tables)
      optimizer.build(dense)
    else:
      optimizer.build(model.trainable_variables)
  replicas = strategy.num_replicas_in_sync

  def step(inputs: dict[str, tf.Tensor], labels: tf.Tensor) -> tf.Tensor:
    with tf.GradientTape() as tape:
      # The replicas' gradients are summed: each scales its own share.
      # Training: exact keys not seen before take rows.
      loss = ctr_model.loss_of(labels, model(inputs, training=True))
      loss /= replicas
    if table_optimizer is None:
      variables = model.trainable_variables
      optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
      return loss
    gradients = tape.gradient(loss, dense + tables)
    optimizer.apply_gradients(zip(gradients[: len(dense)], dense))
    table_optimizer.apply_gradients(zip(gradients[len(dense) :], tables))
    return loss

  return step


def _timed(
  run: Callable[[int], None], args: argparse.Namespace
) -> dict[str, float]:
  """`--steps` steps, `--window` a call, after `--warmup` steps.

  Returns:
    `{'rate': examples/s, 'began': ..., 'ended': ...}`: the measured span's
    ends in seconds since the epoch (for the CPU sampler).
  """
  for done in range(0, args.warmup, args.window):
    run(min(args.window, args.warmup - done))
  began = time.time()
  start = time.perf_counter()
  for done in range(0, args.steps, args.window):
    run(min(args.window, args.steps - done))
  seconds = time.perf_counter() - start
  return {
    'rate': args.steps * args.batch / seconds,
    'began': began,
    'ended': time.time(),
  }


def serve() -> None:
  """This task's server, until the process is killed."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  server = tf.distribute.Server(
    resolver.cluster_spec(),
    job_name=resolver.task_type,
    task_index=resolver.task_id,
    protocol='grpc',
    start=True,
  )
  server.join()


def parameter_servers(
  args: argparse.Namespace, stats: dict[str, Any], files: list[str]
) -> dict[str, float]:
  """The coordinator's loop; returns examples/s and the span (`_timed`)."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  servers = len(resolver.cluster_spec().as_dict().get('ps', []))
  partitioner = None
  if servers > 1:
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
      min_shard_bytes=args.min_shard_bytes, max_shards=servers
    )
  strategy = tf.distribute.ParameterServerStrategy(
    resolver, variable_partitioner=partitioner
  )
  coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
  step = _model_and_step(
    strategy, args.adagrad_tables, 'hand-exact' if args.exact_keys else None
  )
  per_worker = coordinator.create_per_worker_dataset(
    lambda: ctr_model.tuned_pipeline(files, args.batch, stats)
  )
  run = coordinator_loop(
    strategy, coordinator, step, iter(per_worker), args.steps_per_closure
  )
  return _timed(run, args)


def coordinator_loop(
  strategy: Any,
  coordinator: Any,
  step: Callable[..., tf.Tensor],
  iterator: Any,
  steps_per_closure: int,
) -> Callable[[int], None]:
  """`run(count)`: `count` steps in closures of `steps_per_closure`, joined."""

  @tf.function
  def closure(iterator: Any, count: tf.Tensor) -> tf.Tensor:
    loss = tf.constant(0.0)
    for _ in tf.range(count):
      inputs, labels = next(iterator)
      loss = strategy.run(step, (inputs, labels))
    return loss

  def run(count: int) -> None:
    for done in range(0, count, steps_per_closure):
      coordinator.schedule(
        closure,
        args=(iterator, tf.constant(min(steps_per_closure, count - done))),
      )
    coordinator.join()

  return run


def multi_worker(
  args: argparse.Namespace, stats: dict[str, Any], files: list[str]
) -> dict[str, float]:
  """One replica's loop; examples/s (the global batch's) and the span."""
  # No collective timeout (`CommunicationOptions(timeout_seconds=...)`):
  # with one, TensorFlow 2.21 starts a thread per collective that waits
  # out the timeout, about 650 a second here at batch 1024, until a
  # process cannot start another (`std::system_error: Resource
  # temporarily unavailable`). `distributed.py` kills a run that hangs.
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  step = _model_and_step(strategy)
  dataset = ctr_model.tuned_pipeline(files, args.batch, stats)
  options = tf.data.Options()
  # By element: there may be fewer files than replicas.
  options.experimental_distribute.auto_shard_policy = (
    tf.data.experimental.AutoShardPolicy.DATA
  )
  iterator = iter(
    strategy.experimental_distribute_dataset(dataset.with_options(options))
  )

  @tf.function
  def loop(iterator: Any, count: tf.Tensor) -> tf.Tensor:
    loss = tf.constant(0.0)
    for _ in tf.range(count):
      inputs, labels = next(iterator)
      loss = strategy.reduce(
        tf.distribute.ReduceOp.SUM,
        strategy.run(step, (inputs, labels)),
        axis=None,
      )
    return loss

  return _timed(lambda count: loop(iterator, tf.constant(count)).numpy(), args)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('role', choices=['serve', 'ps', 'mwm'])
  parser.add_argument('--data')
  parser.add_argument('--rows', type=int)
  parser.add_argument('--shards', type=int)
  parser.add_argument('--batch', type=int, default=1024)
  parser.add_argument('--warmup', type=int, default=50)
  parser.add_argument('--steps', type=int, default=200)
  parser.add_argument('--window', type=int, default=50)
  parser.add_argument('--steps-per-closure', type=int, default=10)
  parser.add_argument('--min-shard-bytes', type=int, default=256 << 10)
  parser.add_argument(
    '--adagrad-tables',
    type=float,
    metavar='RATE',
    help='train the embeddings with Adagrad at this rate (the tables sections)',
  )
  parser.add_argument(
    '--exact-keys',
    action='store_true',
    help='exact-key embeddings (exact_tables.py; the ps role)',
  )
  args = parser.parse_args(argv)
  if args.exact_keys and args.role != 'ps':
    parser.error(
      f'--exact-keys: the {args.role} role has no exact-key tables; '
      'use it with the ps role'
    )
  if args.role == 'serve':
    serve()
    return 0
  files = ctr_data.paths(args.data, args.rows, args.shards)
  with open(files['stats']) as f:
    stats = json.load(f)
  train = parameter_servers if args.role == 'ps' else multi_worker
  measured = train(args, stats, files['tfrecord'])
  task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})
  if task.get('type', 'chief') == 'chief':
    print(json.dumps(measured), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
