"""Variables: created once, eagerly, and routed to their optimizers.

Hooks create their variables (layers, optimizer slots, metrics) on their
first call. The engine makes that first call eagerly, under the
strategy's scope, before anything is traced: a `tf.function` that creates
variables on its first trace is traced twice, and variables made inside a
trace cannot be placed by every strategy.
"""

import contextlib
import logging
from typing import Any

import tensorflow as tf

from tensorfx import embeddings
from tensorfx._errors import ConfigurationError
from tensorfx.embeddings import internal as _tables
from tensorfx.training._engine import precision
from tensorfx.training._engine import strategies


def create_variables(builder, engine, dataset):
  """Calls the hooks eagerly once, so every variable exists before tracing.

  Keeps, in the engine's state (checkpointed with the builder), the
  optimizer `build_training` returns and the metrics `build_evaluation`
  returns.

  Args:
    builder: the `ModelBuilder`.
    engine: its `EngineState`.
    dataset: the training dataset; its element spec shapes the call.
  """
  if engine.variables_created:
    return
  inputs = tf.nest.map_structure(_zeros_like_spec, dataset.element_spec)
  # Layers take the --precision policy when they are made: here.
  with precision.policy(builder.settings.speed.precision):
    inferences = precision.to_float32(
      builder.build_inference(inputs, training=False)
    )
  _, optimizer = builder.build_training(engine.global_step, inputs, inferences)
  engine.training_optimizer = optimizer
  outputs = builder.build_output(inferences)
  metrics = {}

  def evaluation_pass():
    metrics.update(builder.build_evaluation(inputs, outputs))
    return tf.constant(0)

  if strategies.replicated(engine.strategy):
    # Metrics of mirrored replicas may only be updated in replica context;
    # eagerly, once (TensorFlow's warning about eager overhead is moot).
    with _quiet_eager_run():
      engine.strategy.run(evaluation_pass)
  else:
    evaluation_pass()
  # The pass over zeros counted in them: cleared, as after each evaluation.
  for metric in metrics.values():
    if hasattr(metric, 'reset_state'):
      metric.reset_state()
  engine.keep_evaluation_metrics(metrics)
  dense, groups = route(builder, engine, trainable(builder), optimizer)
  if hasattr(optimizer, 'build'):
    optimizer.build(dense)
  for table_optimizer, variables in groups:
    table_optimizer.build(variables)
  engine.variables_created = True


def trainable(builder):
  """The builder's trainable variables.

  Raises:
    ConfigurationError: `build_inference` created none.
  """
  variables = tuple(builder.trainable_variables)
  if not variables:
    raise ConfigurationError(
      f'{type(builder).__name__}.build_inference created no trainable '
      'variables; create layers on its first call and keep them as '
      'attributes of the builder.'
    )
  return variables


def route(builder, engine, variables, optimizer):
  """Splits variables into the dense ones and each table optimizer's.

  Embedding tables' rows go to their optimizer (their own, or
  `builder.sparse_optimizer`), which also becomes their clock's partner
  for eviction; everything else to `optimizer`.

  Returns:
    `(dense, [(table_optimizer, table_variables), ...])`.
  """
  tables = embeddings.find_tables(builder)
  for table in tables:
    table.bind(
      step_counter=engine.global_step,
      optimizer=None
      if table.optimizer is not None
      else builder.sparse_optimizer,
    )
  owner = {}
  for table in tables:
    if table.built:
      for shard in table.shards:
        owner[id(shard)] = table.optimizer
  dense: list[Any] = []
  groups: dict[Any, Any] = {}
  for variable in variables:
    table_optimizer = owner.get(id(variable))
    if table_optimizer is None or table_optimizer is optimizer:
      dense.append(variable)
    else:
      groups.setdefault(id(table_optimizer), (table_optimizer, []))[1].append(
        variable
      )
  return dense, list(groups.values())


def warm_start_variables(builder, engine, made_optimizers):
  """The model's variables, without optimizer, metric and step state.

  What a warm start (`--warm-start`) assigns: a warm start begins a new
  optimization.

  Args:
    builder: the `ModelBuilder`.
    engine: its `EngineState`.
    made_optimizers: the optimizers the builder made itself (its
      `optimizer` and `sparse_optimizer`, if used).
  """
  skip = {id(engine.global_step)}
  optimizers = [engine.training_optimizer, *made_optimizers]
  optimizers += [table.optimizer for table in embeddings.find_tables(builder)]
  for optimizer in optimizers:
    for variable in getattr(optimizer, 'variables', ()) or ():
      # Slots of a table sharded over parameter servers are saved as one
      # ShardedVariable; the model lists its shards.
      skip.update(id(v) for v in _tables.sharding.shards(variable))
  if engine.accumulator is not None:
    skip.update(id(v) for v in engine.accumulator.sums)
  metrics = list(engine.evaluation_metrics.values())
  if engine.run.eval_loss is not None:
    metrics.append(engine.run.eval_loss)
  for metric in metrics:
    skip.update(id(v) for v in metric.variables)
  return [v for v in builder.variables if id(v) not in skip]


def _zeros_like_spec(spec):
  # One instance: the batch dimension may be static (the batch size of an
  # endless read) in some features and not in others (sparse ones).
  shape = [1 if d is None else d for d in spec.shape.as_list()]
  if shape:
    shape[0] = 1
  if spec.dtype == tf.string:
    return tf.fill(shape, '')
  return tf.zeros(shape, spec.dtype)


class _EagerRunFilter(logging.Filter):
  def filter(self, record):
    return 'eagerly has significant overhead' not in record.getMessage()


@contextlib.contextmanager
def _quiet_eager_run():
  """Drops TensorFlow's warning that a strategy's `run` is eager."""
  logger, quiet = logging.getLogger('tensorflow'), _EagerRunFilter()
  logger.addFilter(quiet)
  try:
    yield
  finally:
    logger.removeFilter(quiet)
