"""The in-memory cache of the transformed training data (`--cache`).

Reading, parsing and the tf.Transform graph run once, in the first epoch;
later epochs replay the transformed batches from memory. Shuffling still
differs every epoch: the first is shuffled as it is read (files and
records), each later one draws the cached batches in a new order and mixes
their instances again through a shuffle buffer as large as the reader's.

`--cache auto` (the default) caches when training reads the data more than
once (`--epochs` above 1, or repeating until `--max-steps` past one epoch)
and the estimated size fits the budget: the instance count of the analysis
(`DataSet.metadata.instances`) times the bytes of one transformed instance
(from the transform's output feature spec: fixed-size features exactly,
lists by their analyzed mean length). The budget is `--cache-budget-mb`,
or a quarter of this machine's memory (its cgroup limit when lower). Each
process that reads the training data holds a cache of all of it, so the
budget is per process; with parameter servers the chief decides for
workers whose memory it cannot see, so `auto` caches there only when
`--cache-budget-mb` is given. `--cache memory` caches regardless (with a
warning above the default budget, an error above an explicit one);
`--cache none` never does.
"""

import dataclasses
import math
import os
from typing import Optional

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger
from tensorfx.training._engine import strategies

# Bytes one value takes in a batch: a string's tf.tstring (24 bytes, short
# values inline) plus a little text; a list value's int64 [row, column]
# index in the batch's SparseTensor.
_STRING_BYTES = 32
_SPARSE_INDEX_BYTES = 16
# The mean length of a list feature when the analysis cannot tell.
_DEFAULT_LIST_LENGTH = 8
_MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class CachePlan:
  """Whether the training data is cached, and why.

  Attributes:
    cache: whether the transformed training data is kept in memory.
    reason: why, in a sentence (logged).
    estimate_bytes: the estimated size of the cache; None if unknown.
    budget_bytes: the budget it was held against; None if none applies.
  """

  cache: bool
  reason: str
  estimate_bytes: Optional[int] = None
  budget_bytes: Optional[int] = None


def plan(engine, settings, dataset, batch, epochs):
  """Decides whether the training data is cached (once per run).

  Args:
    engine: the run's `EngineState` (its strategy; it keeps the plan).
    settings: the job's `Settings`.
    dataset: the `DataSet` trained on.
    batch: the training batch size.
    epochs: the passes over the data (None: repeat until `--max-steps`).

  Returns:
    The `CachePlan`, logged the first time.

  Raises:
    ConfigurationError: `--cache memory` with parameter servers and an
      estimate above `--cache-budget-mb`.
  """
  made = engine.run.cache_plan
  if made is not None:
    return made
  estimate = _safe_estimate(dataset) if settings.speed.cache != 'none' else None
  made = decide(
    settings.speed.cache,
    settings.speed.cache_budget_mb,
    estimate=estimate,
    instances=dataset.metadata.instances if estimate else None,
    batch=batch,
    epochs=epochs,
    max_steps=settings.loop.max_steps,
    parameter_servers=engine.strategy is not None
    and strategies.parameter_servers(engine.strategy),
  )
  engine.run.cache_plan = made
  logger.info('--cache %s: %s', settings.speed.cache, made.reason)
  return made


def cached(
  dataset, batch, epochs, shuffle, seed=None, shuffle_buffer=10000, batches=None
):
  """The pipeline that replays `dataset`'s first pass from memory.

  Args:
    dataset: one pass over the transformed training data, in batches
      (shuffled as it is read, when `shuffle`).
    batch: the batch size of the later epochs.
    epochs: the passes in all (None: forever).
    shuffle: whether later epochs are shuffled again.
    seed: the shuffle seed.
    shuffle_buffer: the instances each later epoch's shuffle mixes.
    batches: about how many batches one pass holds (sizes the buffer that
      reorders them), or None.

  Returns:
    The `tf.data.Dataset`: the first pass fills the cache, later passes
    read it, and nothing reads the source again.
  """
  memory = dataset.cache()
  if epochs == 1:
    return memory
  later = None if epochs is None else epochs - 1
  if not shuffle:
    replay = memory.repeat(later)
  else:
    # Reordering cached batches copies no data (they share its buffers);
    # the instances are then mixed across the batches drawn together.
    order = max(16, min(2 * (batches or 0) + 16, 1 << 20))
    # Shuffled per epoch (as the reader does): each epoch holds every
    # instance once.
    replay = memory.shuffle(order, seed=seed, reshuffle_each_iteration=True)
    replay = (
      replay.unbatch()
      .shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
      .batch(batch)
    )
    replay = replay.repeat(later)
  # One cache: the replay reads what the first pass (the same dataset)
  # wrote, however many times it repeats.
  return memory.concatenate(replay).prefetch(tf.data.AUTOTUNE)


def estimate_bytes(dataset):
  """The estimated bytes of the transformed training data; None if unknown.

  The analysis' instance count times one transformed instance's bytes.
  """
  metadata = dataset.metadata
  if metadata is None or dataset.features is None:
    return None
  spec = dataset.transform_output.transformed_feature_spec()
  return metadata.instances * instance_bytes(spec, _list_lengths(dataset))


def instance_bytes(spec, list_lengths=None):
  """The bytes of one instance of a transformed feature `spec`.

  Example:
    >>> instance_bytes({'x': tf.io.FixedLenFeature([4], tf.float32),
    ...                 'ids': tf.io.VarLenFeature(tf.int64)}, {'ids': 2})
    64

  Args:
    spec: a tf.io feature spec (`FixedLenFeature`, `VarLenFeature`, ...).
    list_lengths: the mean length of variable-length features, by name.
  """
  list_lengths = list_lengths or {}
  total = 0
  for name, feature in spec.items():
    dtype = tf.as_dtype(feature.dtype)
    size = _STRING_BYTES if dtype == tf.string else dtype.size
    if isinstance(feature, tf.io.FixedLenFeature):
      total += math.prod(feature.shape or []) * size
    else:
      length = list_lengths.get(name, _DEFAULT_LIST_LENGTH)
      total += math.ceil(length * (size + _SPARSE_INDEX_BYTES))
  return int(total)


def memory_bytes():
  """This machine's memory: the smaller of RAM and the cgroup limit."""
  limits = []
  try:
    limits.append(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES'))
  except (ValueError, OSError, AttributeError):
    pass
  for path in (
    '/sys/fs/cgroup/memory.max',
    '/sys/fs/cgroup/memory/memory.limit_in_bytes',
  ):
    try:
      with open(path) as f:
        text = f.read().strip()
    except OSError:
      continue
    if text.isdigit():
      limits.append(int(text))
  # Unlimited cgroups read as a huge number: RAM is the smaller.
  return min(limits) if limits else None


def default_budget_bytes():
  """A quarter of this machine's memory (None when it cannot be read)."""
  memory = memory_bytes()
  return None if memory is None else memory // 4


def decide(
  mode,
  budget_mb,
  *,
  estimate,
  instances,
  batch,
  epochs,
  max_steps=None,
  parameter_servers=False,
):
  """The `CachePlan` of `--cache mode` (see the module's docstring).

  Example:
    >>> decide('auto', 64, estimate=100 << 20, instances=10 ** 6,
    ...        batch=256, epochs=5).cache   # 100 MiB, a 64 MiB budget
    False

  Args:
    mode: 'auto', 'memory' or 'none' (`--cache`).
    budget_mb: `--cache-budget-mb`, or None for the default budget.
    estimate: the estimated bytes of the cache, or None if unknown.
    instances: the instances analyzed (one epoch), or None.
    batch: the training batch size.
    epochs: the passes over the data (None: repeat until `max_steps`).
    max_steps: the step training stops at, or None.
    parameter_servers: whether workers of a parameter-server cluster read
      the data.

  Raises:
    ConfigurationError: `--cache memory` with parameter servers and an
      estimate above `--cache-budget-mb`.
  """
  if mode == 'none':
    return CachePlan(
      False, 'the training data is read from its files every epoch'
    )
  explicit = budget_mb is not None
  budget = budget_mb * _MIB if explicit else default_budget_bytes()
  size = _mib(estimate)
  if mode == 'memory':
    if estimate is not None and budget is not None and estimate > budget:
      if explicit and parameter_servers:
        raise ConfigurationError(
          f'--cache memory: the training data (about {size}) does not fit '
          "the workers' --cache-budget-mb; raise it, or pass --cache none."
          f' Received: --cache-budget-mb={budget_mb}'
        )
      logger.warning(
        '--cache memory: the training data (about %s) is above '
        'the cache budget (%s) of each process that reads it',
        size,
        _mib(budget),
      )
    return CachePlan(
      True,
      f'caching the transformed training data in memory '
      f'after its first epoch (about {size})',
      estimate,
      budget,
    )
  # auto
  if epochs == 1:
    return CachePlan(
      False, 'one epoch (--epochs 1): nothing to replay', estimate, budget
    )
  if estimate is None:
    return CachePlan(
      False,
      'not caching: the size of the training data is '
      'unknown without an analysis (--cache memory to cache '
      'anyway)',
      None,
      budget,
    )
  if (
    epochs is None
    and max_steps is not None
    and instances is not None
    and max_steps * batch <= instances
  ):
    return CachePlan(
      False,
      f'not caching: {max_steps} steps of {batch} read '
      f'less than the {instances} instances analyzed once',
      estimate,
      budget,
    )
  if parameter_servers and not explicit:
    return CachePlan(
      False,
      'not caching on parameter-server workers without '
      '--cache-budget-mb (the chief cannot see their memory)',
      estimate,
      None,
    )
  if budget is None:
    return CachePlan(
      False,
      "not caching: this machine's memory is unknown (pass --cache-budget-mb)",
      estimate,
      None,
    )
  if estimate > budget:
    return CachePlan(
      False,
      f'not caching: the training data (about {size}) '
      f'is above the budget ({_mib(budget)}; '
      '--cache-budget-mb)',
      estimate,
      budget,
    )
  return CachePlan(
    True,
    f'caching the transformed training data in memory '
    f'after its first epoch (about {size} of a '
    f'{_mib(budget)} budget)',
    estimate,
    budget,
  )


def _safe_estimate(dataset):
  try:
    return estimate_bytes(dataset)
  except (ValueError, KeyError, TypeError) as e:
    logger.debug('No cache size estimate: %s', e)
    return None


def _list_lengths(dataset):
  """The mean length of each feature's raw values, from the analysis."""
  metadata = dataset.metadata
  instances = max(metadata.instances, 1)
  lengths = {}
  for feature in dataset.features:
    counts = []
    for field in feature.fields or ():
      stats = metadata.fields.get(field) if metadata.fields else None
      if stats and stats.get('count') is not None:
        counts.append(stats['count'] / instances)
    if counts:
      lengths[feature.name] = max(*counts, 1.0)
  return lengths


def _mib(value):
  if value is None:
    return 'unknown size'
  return f'{value / _MIB:,.0f} MiB' if value >= _MIB else f'{value:,} bytes'
