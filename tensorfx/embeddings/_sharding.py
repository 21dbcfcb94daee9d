"""Rows of a variable that may be split across parameter servers.

Under `ParameterServerStrategy` with a variable partitioner, a large
variable is a `ShardedVariable`: consecutive blocks of rows, one block per
parameter server (TensorFlow's "div" layout). Sparse updates address the
blocks with local row numbers; these helpers translate.
"""

import tensorflow as tf


def shards(variable):
  """The variables that hold `variable`'s rows: its shards, or itself.

  Example:
    >>> [v.shape[0] for v in shards(table.embeddings)]   # over 2 ps
    [500001, 500000]
  """
  return list(getattr(variable, 'variables', None) or [variable])


def split_rows(variable, rows):
  """Splits global row numbers into each shard's local row numbers.

  Example:
    >>> [local.numpy().tolist() for _, local in split_rows(sharded, rows)]
    [[0, 3], [1]]

  Args:
    variable: a variable or `ShardedVariable` of rank >= 1.
    rows: int64 [N] global row numbers (each in range).

  Returns:
    A list of `(shard, local_rows)` pairs, one per shard, where
    `local_rows` is int64 [N_i] (possibly empty), in the order of `rows`.
  """
  parts = shards(variable)
  rows = tf.cast(rows, tf.int64)
  if len(parts) == 1:
    return [(parts[0], rows)]
  sizes = [int(p.shape[0]) for p in parts]
  # Where each shard starts; shard i holds [starts[i], starts[i + 1]).
  starts = [0]
  for size in sizes[:-1]:
    starts.append(starts[-1] + size)
  starts = tf.constant(starts, tf.int64)
  owner = tf.searchsorted(starts, rows, side='right') - 1
  local = rows - tf.gather(starts, owner)
  pieces = tf.dynamic_partition(local, tf.cast(owner, tf.int32), len(parts))
  return list(zip(parts, pieces))
