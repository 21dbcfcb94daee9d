"""--jit-compile: XLA compiles the steps, and changes nothing but their speed.

The compiled training step must train exactly like the plain one (same
seed, same batches: the same variables after a few steps, within float
tolerance); a step XLA cannot compile must train without it, with a
warning that says why, never fail inside XLA.
"""

import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from conftest import IRIS
from conftest import ROOT
from mirrored_script import PREAMBLE
from tensorfx import embeddings
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._builderbase import engine_of


def _interfaces(dataset, *flags):
  args = nn.FeedForwardClassificationArguments.parse(
    [
      '--no-shuffle',
      '--seed',
      '3',
      '--hidden-layers',
      '16',
      '8',
      '--batch-size',
      '16',
      *flags,
    ]
  )
  builder = nn.FeedForwardClassification(args, dataset)
  interfaces = builder.build_graph_interfaces(training.Configuration.local())
  return builder, interfaces


def _compiled_functions(concrete):
  """Names of the functions in `concrete`'s graph that XLA must compile."""
  library = concrete.graph.as_graph_def().library
  return [
    f.signature.name for f in library.function if f.attr['_XlaMustCompile'].b
  ]


def _train(builder, interface, steps):
  iterator = iter(interface.dataset)
  losses = [
    float(interface.loop(iterator, tf.constant(1, tf.int64))[0])
    for _ in range(steps)
  ]
  return losses, {v.name: v.numpy() for v in builder.trainable_variables}


def test_compiled_step_trains_like_the_plain_step(iris_dataset_factory):
  plain, (plain_training, _, _) = _interfaces(iris_dataset_factory())
  compiled, (compiled_training, _, _) = _interfaces(
    iris_dataset_factory(), '--jit-compile'
  )
  iterator = iter(compiled_training.dataset)
  graph = compiled_training.loop.get_concrete_function(
    iterator, tf.constant(1, tf.int64)
  )
  assert _compiled_functions(graph), 'no XLA cluster in the training loop'
  assert not _compiled_functions(
    plain_training.loop.get_concrete_function(
      iter(plain_training.dataset), tf.constant(1, tf.int64)
    )
  )

  plain_losses, plain_variables = _train(plain, plain_training, 12)
  compiled_losses, compiled_variables = _train(compiled, compiled_training, 12)
  np.testing.assert_allclose(compiled_losses, plain_losses, rtol=1e-4)
  assert set(compiled_variables) == set(plain_variables)
  (initial,) = _interfaces(iris_dataset_factory(), '--max-steps', '0')[:1]
  assert any(
    not np.allclose(v.numpy(), compiled_variables[v.name])
    for v in initial.trainable_variables
  ), 'nothing trained'
  for name, value in plain_variables.items():
    np.testing.assert_allclose(
      compiled_variables[name], value, rtol=1e-4, atol=1e-5, err_msg=name
    )
  assert int(compiled.global_step.numpy()) == 12


def test_compiled_step_with_float16_loss_scaling(iris_dataset_factory):
  builder, (interface, _, _) = _interfaces(
    iris_dataset_factory(), '--jit-compile', '--precision', 'mixed_float16'
  )
  iterator = iter(interface.dataset)
  assert _compiled_functions(
    interface.loop.get_concrete_function(iterator, tf.constant(1, tf.int64))
  )
  loss, ran = interface.loop(iterator, tf.constant(20, tf.int64))
  assert int(ran) == 20 and np.isfinite(float(loss))
  # The scale optimizer applied the updates inside the compiled step (an
  # overflowing step would be skipped, not applied).
  assert 0 < int(builder.optimizer.iterations.numpy()) <= 20
  assert np.isfinite(float(engine_of(builder).loss_scale_optimizer.loss_scale))


def test_compiled_evaluation_gives_the_same_metrics(iris_dataset_factory):
  results = []
  for flags in ((), ('--jit-compile',)):
    builder, (_, evaluation, _) = _interfaces(iris_dataset_factory(), *flags)
    count = evaluation.loop(iter(evaluation.dataset('train')))
    results.append(
      (
        int(count),
        {
          name: float(metric.result())
          for name, metric in evaluation.metrics.items()
        },
      )
    )
  (plain_count, plain), (compiled_count, compiled) = results
  assert plain_count == compiled_count == 120
  assert compiled['accuracy'] == plain['accuracy']
  assert compiled['loss'] == pytest.approx(plain['loss'], rel=1e-5)


class _StringTable(nn.FeedForwardClassification):
  """Adds an embedding table with string keys: a hash XLA cannot compile."""

  def build_inference(self, inputs, training):
    if not hasattr(self, 'species_table'):
      self.species_table = embeddings.EmbeddingTable(
        'petal_bucket', dim=4, capacity=64, key_dtype=tf.string
      )
      self.mix = tf_keras.layers.Dense(3, name='mix')
    keys = tf.strings.as_string(tf.round(inputs['X'][:, 0] * 4))
    vectors = self.species_table.lookup(keys, training=training)
    return super().build_inference(inputs, training) + self.mix(vectors)


class _IntTable(_StringTable):
  """The same table with int64 keys (hashed by `mod`): XLA compiles it."""

  def build_inference(self, inputs, training):
    if not hasattr(self, 'species_table'):
      self.species_table = embeddings.EmbeddingTable(
        'petal_bucket', dim=4, capacity=64, key_dtype=tf.int64
      )
      self.mix = tf_keras.layers.Dense(3, name='mix')
    keys = tf.cast(tf.round(inputs['X'][:, 0] * 4), tf.int64)
    vectors = self.species_table.lookup(keys, training=training)
    return nn.FeedForwardClassification.build_inference(
      self, inputs, training
    ) + self.mix(vectors)


def _table_run(builder_type, dataset, *flags):
  args = nn.FeedForwardClassificationArguments.parse(
    [
      '--no-shuffle',
      '--seed',
      '3',
      '--hidden-layers',
      '8',
      '--batch-size',
      '16',
      *flags,
    ]
  )
  builder = builder_type(args, dataset)
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  losses, variables = _train(builder, interface, 6)
  return builder, interface, losses, variables


@pytest.mark.slow
def test_step_xla_cannot_compile_trains_without_it(
  iris_dataset_factory, caplog
):
  caplog.set_level(logging.WARNING, logger='tensorfx')
  builder, interface, losses, _ = _table_run(
    _StringTable, iris_dataset_factory(), '--jit-compile'
  )
  warnings = [
    r.getMessage()
    for r in caplog.records
    if 'runs without XLA' in r.getMessage()
  ]
  assert warnings and 'training step' in warnings[0]
  # The reason names the op XLA has no kernel for.
  assert 'AsString' in warnings[0] or 'StringToHashBucketFast' in warnings[0]
  assert not _compiled_functions(
    interface.loop.get_concrete_function(
      iter(interface.dataset), tf.constant(1, tf.int64)
    )
  )
  assert all(np.isfinite(losses)) and int(builder.global_step.numpy()) == 6
  # The table trained: its counts saw every training lookup.
  assert int(tf.reduce_sum(builder.species_table.counts).numpy()) == 6 * 16


@pytest.mark.slow
def test_embedding_table_updates_stay_outside_the_compiled_step(
  iris_dataset_factory,
):
  plain = _table_run(_IntTable, iris_dataset_factory())
  compiled = _table_run(_IntTable, iris_dataset_factory(), '--jit-compile')
  assert _compiled_functions(
    compiled[1].loop.get_concrete_function(
      iter(compiled[1].dataset), tf.constant(1, tf.int64)
    )
  )
  np.testing.assert_allclose(compiled[2], plain[2], rtol=1e-4)
  for name, value in plain[3].items():
    np.testing.assert_allclose(
      compiled[3][name], value, rtol=1e-4, atol=1e-5, err_msg=name
    )
  # The sparse optimizer updated only the rows looked up.
  rows = compiled[0].species_table.embeddings
  initial = _table_run(_IntTable, iris_dataset_factory(), '--max-steps', '0')
  changed = np.any(
    rows.numpy() != initial[0].species_table.embeddings.numpy(), axis=1
  )
  assert 0 < changed.sum() < rows.shape[0]


_MIRRORED = PREAMBLE + textwrap.dedent("""


    def run(*flags):
      dataset = data.CsvDataSet(
          os.path.join(iris, 'schema.yaml'), metadata=analysis,
          features=os.path.join(iris, 'features.yaml'),
          train=os.path.join(iris, 'data', 'train.csv'))
      args = nn.FeedForwardClassificationArguments.parse([
          '--no-shuffle', '--seed', '7', '--hidden-layers', '4',
          '--batch-size', '16', *flags])
      builder = nn.FeedForwardClassification(args, dataset)
      interface, _, _ = builder.build_graph_interfaces(Mirrored.local())
      iterator = iter(interface.dataset)
      library = interface.loop.get_concrete_function(
          iterator, tf.constant(1, tf.int64)).graph.as_graph_def().library
      loss, _ = interface.loop(iterator, tf.constant(5, tf.int64))
      return {'loss': float(loss), 'compiled': sum(
                  f.attr['_XlaMustCompile'].b for f in library.function),
              'replicas':
              builder.strategy.num_replicas_in_sync,
              'final': {v.name: v.numpy().tolist()
                        for v in builder.trainable_variables}}


    print(json.dumps({'plain': run(), 'xla': run('--jit-compile')}))
""")


@pytest.mark.slow
def test_compiled_step_under_mirrored_replicas(tmp_path, iris_analysis):
  script = tmp_path / 'mirrored.py'
  script.write_text(_MIRRORED)
  env = dict(
    os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', '')
  )
  result = subprocess.run(
    [sys.executable, str(script), IRIS, iris_analysis],
    capture_output=True,
    text=True,
    timeout=600,
    env=env,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  runs = json.loads(result.stdout.strip().splitlines()[-1])
  assert runs['xla']['replicas'] == 2
  assert runs['xla']['compiled'] and not runs['plain']['compiled']
  assert runs['xla']['loss'] == pytest.approx(runs['plain']['loss'], rel=1e-4)
  for name, value in runs['plain']['final'].items():
    np.testing.assert_allclose(
      runs['xla']['final'][name], value, rtol=1e-4, atol=1e-5, err_msg=name
    )
