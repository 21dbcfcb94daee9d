"""The training graph: the step, and the loop that runs it for the strategy.

Built once, eagerly, under the strategy's scope: the training input, every
variable (by one eager call of the hooks), the step and its loop.
"""

import tensorflow as tf

from tensorfx import _autograph
from tensorfx.training import _interfaces
from tensorfx.training import _optimizers
from tensorfx.training._engine import local_loop
from tensorfx.training._engine import precision
from tensorfx.training._engine import ps_loop
from tensorfx.training._engine import strategies
from tensorfx.training._engine import train_step as train_steps
from tensorfx.training._engine import variables as engine_variables
from tensorfx.training._engine import xla


def build(builder, engine):
  """Builds the `TrainingInterface` of `builder` under its strategy."""
  _autograph.skip_library()
  settings = builder.settings
  strategy = engine.strategy
  parameter_servers = strategies.parameter_servers(strategy)
  shuffle = settings.loop.shuffle
  # Parameter-server workers read independently and forever; the step
  # count (--max-steps) bounds training.
  epochs = None if parameter_servers else settings.loop.epochs
  dataset = engine.call(
    builder, 'build_input', 'train', settings.loop.batch_size, epochs, shuffle
  )
  if not parameter_servers:
    # The pipeline's threads start with the iterator, not at the first
    # batch asked for: the first batches are read while the training
    # loop is traced, on the core tracing does not use.
    options = tf.data.Options()
    options.experimental_warm_start = True
    dataset = dataset.with_options(options)
  engine_variables.create_variables(builder, engine, dataset)
  optimizer = engine.training_optimizer
  variables = _optimizers.select_variables(
    engine_variables.trainable(builder), settings.optimizer.trainable_pattern
  )
  dense, groups = engine_variables.route(builder, engine, variables, optimizer)
  accumulator = train_steps.build_accumulator(
    engine,
    tuple(dense) + tuple(v for _, vs in groups for v in vs),
    settings.optimizer.accumulation_steps,
    tables=bool(groups),
  )
  loss_scale = precision.loss_scale_optimizer(
    engine, optimizer, settings.speed.precision
  )

  def compiled(fn):
    return xla.Step(
      fn,
      'training step',
      settings.speed.jit_compile,
      reason=_no_xla(parameter_servers),
    )

  train_step, variables, gradients_step, last_norm = (
    train_steps.make_train_step(
      builder,
      engine,
      dense,
      groups,
      accumulator,
      loss_scale=loss_scale,
      compiled=compiled,
    )
  )
  gradients_step.check(dataset.element_spec, strategy)
  # The guards stop the loop at the first bad step, compared on the
  # device: no host synchronisation per step.
  loss_limit = settings.guards.loss_limit
  read = None
  if parameter_servers:
    loop, distributed, read = ps_loop.make_loop(
      builder,
      engine,
      train_step,
      last_norm,
      epochs,
      shuffle,
      loss_limit,
      settings.loop.steps_per_closure,
    )
  else:
    run_step = train_steps.make_step_runner(
      engine, train_step, accumulator, loss_scale or optimizer
    )
    loop = local_loop.make_loop(
      strategy,
      run_step,
      loss_limit,
      one_step_per_call=_exchanges_slices(builder, strategy, groups),
    )

    def input_from(batches=0):
      # Resuming skips the batches read before the sharding: the same
      # count on every worker of a multi-worker cluster.
      data = dataset.skip(batches) if batches else dataset
      if not strategies.replicated(strategy):
        return data
      return strategy.experimental_distribute_dataset(
        strategies.shard_by_data(data)
      )

    distributed = input_from()
  return _interfaces.TrainingInterface(
    dataset=distributed,
    global_step=engine.global_step,
    loop=loop,
    optimizer=optimizer,
    variables=variables,
    batch_size=settings.loop.batch_size,
    gradient_norm=engine.run.gradient_norm,
    input_from=None if parameter_servers else input_from,
    input_read=read,
  )


def _no_xla(parameter_servers):
  """Why a training step is never compiled here, or None."""
  if parameter_servers:
    return (
      'not with parameter servers (the step runs on the workers, its '
      'variables on the servers)'
    )
  return None


def _exchanges_slices(builder, strategy, groups):
  """Whether replicas' steps exchange parts of varying size (one a call).

  Embedding tables' gradients summed as slices, and exact-key tables'
  keys, under one replica per process (see
  `tensorfx.embeddings._replicas`).
  """
  from tensorfx import embeddings
  from tensorfx.embeddings import internal as _tables

  # Any table: a hashed table without an optimizer of its own (no group)
  # still gathers its admission counts and stamps as rows.
  tables = embeddings.find_tables(builder)
  if not (tables and _tables.replicas.one_per_process(strategy)):
    return False
  exact = any(t.hashing == 'exact' for t in tables)
  return exact or _tables.replicas.sparse_sums(strategy)
