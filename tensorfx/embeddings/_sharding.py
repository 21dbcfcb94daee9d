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
    variable: a variable or `ShardedVariable` of rank >= 1, or a list of
      shards.
    rows: int64 [N] global row numbers (each in range).

  Returns:
    A list of `(shard, local_rows)` pairs, one per shard, where
    `local_rows` is int64 [N_i] (possibly empty), in the order of `rows`.
  """
  parts = _parts(variable)
  rows = tf.cast(rows, tf.int64)
  if len(parts) == 1:
    return [(parts[0], rows)]
  owner, local = _locate(parts, rows)
  pieces = tf.dynamic_partition(local, owner, len(parts))
  return list(zip(parts, pieces))


def gather(variable, rows):
  """The rows `rows` (global numbers) of a variable, whatever its sharding.

  Example:
    >>> gather([first_half, second_half], tf.constant([7, 0])).shape
    TensorShape([2, 16])

  Args:
    variable: a variable, a `ShardedVariable` or a list of shards.
    rows: int64 [N] global row numbers (each in range).

  Returns:
    [N, ...] the rows, in the order of `rows`.
  """
  parts = _parts(variable)
  rows = tf.cast(rows, tf.int64)
  if len(parts) == 1:
    return tf.gather(parts[0], rows)
  owner, local = _locate(parts, rows)
  pieces = tf.dynamic_partition(local, owner, len(parts))
  positions = tf.dynamic_partition(
    tf.range(tf.size(rows, out_type=tf.int32)), owner, len(parts)
  )
  return tf.dynamic_stitch(
    positions, [tf.gather(p, piece) for p, piece in zip(parts, pieces)]
  )


def scatter_update(variable, rows, values):
  """Writes `values` into the rows `rows` of a variable, whatever its sharding.

  Example:
    >>> scatter_update(table.embeddings, tf.constant([3]), tf.zeros([1, 16]))

  Args:
    variable: a variable, a `ShardedVariable` or a list of shards.
    rows: int64 [N] global row numbers (each in range, no repeats).
    values: [N, ...] the new rows.

  Returns:
    The list of each shard's update (for control dependencies).
  """
  parts = _parts(variable)
  rows = tf.cast(rows, tf.int64)
  if len(parts) == 1:
    return [parts[0].scatter_update(tf.IndexedSlices(values, rows))]
  owner, local = _locate(parts, rows)
  pieces = tf.dynamic_partition(local, owner, len(parts))
  blocks = tf.dynamic_partition(values, owner, len(parts))
  return [
    p.scatter_update(tf.IndexedSlices(block, piece))
    for p, piece, block in zip(parts, pieces, blocks)
  ]


def starts(variable):
  """The first global row of each shard: `[0, rows of shard 0, ...]`."""
  result = [0]
  for part in _parts(variable)[:-1]:
    result.append(result[-1] + int(part.shape[0]))
  return result


def _parts(variable):
  if isinstance(variable, (list, tuple)):
    return list(variable)
  return shards(variable)


def _locate(parts, rows):
  """(owner shard as int32, local row) of global rows."""
  # Shard i holds [starts[i], starts[i + 1]).
  first = tf.constant(starts(parts), tf.int64)
  owner = tf.searchsorted(first, rows, side='right') - 1
  return tf.cast(owner, tf.int32), rows - tf.gather(first, owner)
