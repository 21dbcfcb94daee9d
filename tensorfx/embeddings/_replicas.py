"""Synchronous replicas: what every replica must agree on, gathered sparsely.

Under `MirroredStrategy` and `MultiWorkerMirroredStrategy` each replica
holds its own copy of a table (rows, statistics, an exact table's index)
and applies the same updates to it, so the copies stay equal. Two things
travel between replicas each training step, both of a size that varies
from step to step and from replica to replica:
- an exact table's new keys: every replica records the keys of all
  replicas, in one order (see `ExactKeys.lookup_rows`);
- the tables' gradients, `tf.IndexedSlices` of the rows looked up: summed
  across replicas as slices (`reduce_slices`), not as dense tensors of the
  table's size.

One process per replica (`MultiWorkerMirroredStrategy` with one device a
worker, mxRec's mode) is what this supports: `gather` gathers every
replica's size, pads each part to the largest, gathers the padded parts
and drops the padding. Replicas of one process (`MirroredStrategy` over
several devices) keep today's dense sum, and exact-key tables are refused
there.

A collective keeps the shape it first had within a call of the training
loop's `tf.function`: one whose size changes from step to step inside the
loop's `tf.while_loop` fails ("Shape mismatch in the collective
instance"; TensorFlow's own all-reduce of `tf.IndexedSlices` too). So the
loop runs one step per call when tables exchange slices (see
`local_loop.make_loop`).
"""

from typing import Any

import tensorflow as tf

__all__ = [
  'gather',
  'one_per_process',
  'reduce_slices',
  'replicated',
  'sparse_sums',
]

# False: hashed tables' gradients and statistics are summed densely, as
# tensorfx did before (the benchmarks' baseline; read when a training
# step is traced).
SPARSE_SUMS = True


def replicated(context: Any = None) -> bool:
  """Whether a step runs on synchronous replicas (mirrored), in replica context.

  Example:
    >>> strategy.run(lambda: tf.constant(replicated()))  # True on 2 replicas
  """
  if context is None:
    context = tf.distribute.get_replica_context()
  return (
    context is not None
    and context.num_replicas_in_sync > 1
    and not isinstance(
      tf.distribute.get_strategy(), tf.distribute.ParameterServerStrategy
    )
  )


def one_per_process(strategy: Any) -> bool:
  """Whether `strategy` runs synchronous replicas one per process.

  `MultiWorkerMirroredStrategy` with one device a worker: the replicas
  whose tables' keys and gradients travel as slices.

  Example:
    >>> one_per_process(tf.distribute.MultiWorkerMirroredStrategy())
    True
  """
  return (
    isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    and len(strategy.extended.worker_devices) == 1
  )


def sparse_sums(strategy: Any) -> bool:
  """Whether tables' gradients and statistics are summed as slices.

  Under one replica per process (`one_per_process`), unless the
  benchmarks' baseline turned it off (`SPARSE_SUMS`).

  Example:
    >>> sparse_sums(tf.distribute.MultiWorkerMirroredStrategy())
    True
  """
  return SPARSE_SUMS and one_per_process(strategy)


def gather(context: Any, tensors: list[Any]) -> tuple[list[Any], Any]:
  """Every replica's tensors, concatenated in replica order (on each replica).

  The tensors of one replica share their first dimension, which may differ
  from replica to replica.

  Example:
    >>> (keys, counts), sizes = gather(context, [keys, counts])

  Args:
    context: the replica context.
    tensors: tensors of equal first dimension (this replica's part).

  Returns:
    `(gathered, sizes)`: the tensors of all replicas, and int64 [R] the
    size of each replica's part.
  """
  size = tf.shape(tensors[0], out_type=tf.int64)[:1]
  sizes = context.all_gather(size, axis=0)
  longest = tf.reduce_max(sizes)
  keep = tf.reshape(tf.sequence_mask(sizes, longest), [-1])
  gathered = []
  for tensor in tensors:
    padding = [[0, longest - size[0]]] + [[0, 0]] * (tensor.shape.rank - 1)
    padded = tf.pad(tensor, padding, constant_values=tf.zeros([], tensor.dtype))
    gathered.append(tf.boolean_mask(context.all_gather(padded, axis=0), keep))
  return gathered, sizes


def reduce_slices(context: Any, slices: tf.IndexedSlices) -> tf.IndexedSlices:
  """The sum of every replica's `tf.IndexedSlices`: slices, each row once.

  Each replica first sums its own duplicate rows, so what travels is one
  row per distinct row looked up by a replica; every replica then sums the
  rows several replicas looked up, in the same order.

  Example:
    >>> total = reduce_slices(tf.distribute.get_replica_context(), gradient)

  Args:
    context: the replica context.
    slices: this replica's gradient of a table.
  """
  rows, values = _summed(tf.cast(slices.indices, tf.int64), slices.values)
  (rows, values), _ = gather(context, [rows, values])
  rows, values = _summed(rows, values)
  return tf.IndexedSlices(values, rows, slices.dense_shape)


def _summed(rows: Any, values: Any) -> tuple[Any, Any]:
  """Distinct rows (in order of first appearance) and their summed values."""
  unique, position = tf.unique(rows, out_idx=tf.int64)
  return unique, tf.math.unsorted_segment_sum(
    values, position, tf.size(unique, out_type=tf.int64)
  )
