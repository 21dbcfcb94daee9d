"""Whether a resumed run ends as the uninterrupted one would: said at start-up.

Under `--seed`, synchronous training resumes exactly: a run stopped at any
step (SIGKILL, SIGTERM) and started again with the same command ends with
the same variables, bit for bit, as one never stopped. A checkpoint holds
the model, the optimizer, the step and the input's position
(`input_position`); the seed makes the input's order, the initial values
and the kernels the same in every process. What breaks it is said in one
line when the run starts:

- no `--seed`: the data is shuffled differently by each process, and
  kernels are not made deterministic;
- parameter servers: workers step asynchronously and a closure may run
  twice;
- random operations in the training step whose state lives in the
  kernel (`tf.random.uniform`, `tf.nn.dropout`, a Keras `Dropout` made
  before the seed was set): a new process draws them from the start of
  their sequence again. Keras' random layers made after it draw from
  `tf.random.Generator`s, which the checkpoints hold (`random_state`).

An operation with no deterministic kernel fails when it runs under
`--seed` (TensorFlow's op determinism), so it needs no line here.
"""

import tensorflow as tf

from tensorfx._logging import logger
from tensorfx.training._engine import random_state as _random_state
from tensorfx.training._engine import strategies

# Random operations that keep their state in the kernel, where no
# checkpoint reaches it. The stateless ones and `tf.random.Generator`'s
# (state in a variable) are not among them.
KERNEL_STATE_RANDOM_OPS = frozenset(
  {
    'RandomUniform',
    'RandomUniformInt',
    'RandomStandardNormal',
    'TruncatedNormal',
    'ParameterizedTruncatedNormal',
    'RandomGamma',
    'RandomPoisson',
    'RandomPoissonV2',
    'RandomShuffle',
    'Multinomial',
  }
)


def report(settings, strategy, training, iterator, builder=None, saved=()):
  """Logs why a resume of this run would not be exact, if it would not.

  Args:
    settings: the run's `Settings`.
    strategy: its distribution strategy.
    training: the `TrainingInterface`.
    iterator: the iterator its loop reads (to trace the loop over).
    builder: the `ModelBuilder`, whose random layers' generators must be
      among `saved`.
    saved: the `tf.random.Generator`s its checkpoints hold.

  Returns:
    The reason, or None when a resume is exact.
  """
  reason = why_inexact(settings, strategy, training, iterator, builder, saved)
  if reason is not None:
    logger.info('A resumed run is not exact: %s', reason)
  return reason


def why_inexact(settings, strategy, training, iterator, builder=None, saved=()):
  """Why a resume of this run would not be exact; None when it would be.

  See `report` for the arguments.
  """
  if strategies.parameter_servers(strategy):
    return (
      'parameter-server workers step asynchronously and a closure may run '
      'twice (it resumes from the checkpoint, without the promise)'
    )
  if settings.loop.seed is None:
    return (
      'without --seed '
      + (
        'each run shuffles the training data in its own order and '
        if settings.loop.shuffle
        else ''
      )
      + 'kernels are not made deterministic (pass --seed for an exact resume)'
    )
  found = kernel_state_random_ops(_loop_graph(training, iterator))
  if found:
    return (
      f'the training step draws from random operations ({", ".join(found)}) '
      'whose state no checkpoint holds: a restarted run draws them afresh. '
      'Draw from stateless random operations seeded by the step '
      '(tf.random.stateless_uniform(shape, seed=[SEED, step])), or from a '
      'tf.random.Generator the builder holds as an attribute'
    )
  if builder is not None:
    # A generator made while the step was traced, after the checkpoint
    # was restored (a random layer built inside the step).
    unsaved = [
      g
      for g in _random_state.generators_of(builder)
      if not any(g is s for s in saved)
    ]
    if unsaved:
      return (
        f'{len(unsaved)} random layer(s) made their generator while the '
        'training step was traced, too late for checkpoints to hold it: '
        'build them in the first call of build_inference'
      )
  return None


def kernel_state_random_ops(graph):
  """The kernel-state random operations a graph and its functions run.

  Example:
    >>> graph = tf.function(lambda: tf.random.uniform([2])).get_concrete_function().graph
    >>> kernel_state_random_ops(graph)
    ['RandomUniform']

  Returns:
    Their sorted operation types; empty for no graph.
  """
  if graph is None:
    return []
  definition = graph.as_graph_def()
  nodes = list(definition.node)
  for function in definition.library.function:
    nodes.extend(function.node_def)
  return sorted({n.op for n in nodes if n.op in KERNEL_STATE_RANDOM_OPS})


def _loop_graph(training, iterator):
  """The training loop's graph, traced over `iterator`; None if untraceable.

  Traced as the first call would trace it (the call reuses the trace).
  """
  loop = training.loop
  if not hasattr(loop, 'get_concrete_function'):
    return None
  try:
    return loop.get_concrete_function(iterator, tf.constant(1, tf.int64)).graph
  except Exception:  # noqa: BLE001  (the first call raises it where the run reports errors)
    return None
