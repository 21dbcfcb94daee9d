"""What the engine asks of a distribution strategy."""

from typing import Any
import weakref

import tensorflow as tf

# Each multi-worker strategy's vote, a traced function: run eagerly, the
# vote's collective warns about its overhead at every call.
_votes: 'weakref.WeakKeyDictionary[Any, Any]' = weakref.WeakKeyDictionary()


def parameter_servers(strategy):
  """Whether `strategy` trains with parameter servers (asynchronously)."""
  return isinstance(strategy, tf.distribute.ParameterServerStrategy)


def worker_count(strategy):
  """The workers of a parameter-server cluster (1 where it cannot be read).

  Only closure sizes depend on it (`ps_loop.closure_steps`): a TensorFlow
  that no longer keeps the count where 2.21 does costs their balance, not
  correctness. `strategy.cluster_resolver` is None for this strategy.
  """
  return max(1, int(getattr(strategy, '_num_workers', 1) or 1))


def replicated(strategy):
  """Whether steps run on several synchronous replicas (mirrored)."""
  return not parameter_servers(strategy) and strategy.num_replicas_in_sync > 1


def multi_worker(strategy):
  """Whether replicas in several processes step together (in lockstep)."""
  return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def shard_by_data(dataset):
  """Shards by element, not file: a job may have fewer files than workers."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
    tf.data.experimental.AutoShardPolicy.DATA
  )
  return dataset.with_options(options)


def agree(strategy, flag):
  """True when any replica says so (just `flag` off multi-worker).

  Replicas of a multi-worker cluster must take the same decisions (save a
  checkpoint now, stop now) or their collective operations deadlock; each
  decision that depends on a replica's own clock or signals is voted on.
  """
  if not multi_worker(strategy):
    return bool(flag)
  if strategy not in _votes:

    @tf.function
    def vote(flag):
      votes = strategy.run(lambda flag: tf.cast(flag, tf.int32), (flag,))
      return strategy.reduce(tf.distribute.ReduceOp.SUM, votes, axis=None)

    _votes[strategy] = vote
  return bool(_votes[strategy](tf.constant(bool(flag))) > 0)


def spread(strategy, values):
  """The smallest and the largest `values` (int64s) across the replicas.

  Example:
    >>> spread(strategy, (step, batches))   # ((100, 7), (100, 7)): agreed
  """
  values = tf.constant([values], tf.int64)

  @tf.function
  def gather(values):
    per_replica = strategy.run(tf.identity, (values,))
    return strategy.gather(per_replica, axis=0)

  every = gather(values)
  low = tf.reduce_min(every, axis=0).numpy().tolist()
  high = tf.reduce_max(every, axis=0).numpy().tolist()
  return tuple(low), tuple(high)
