"""--cache: the transformed training data is read once, then replayed.

Later epochs must read no file (the proof: the data file is renamed in
the middle of training, and only the cached run finishes), must still be
shuffled differently each epoch, and `auto` must cache only when the
data is read more than once and fits the budget.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from conftest import IRIS
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._builderbase import engine_of
from tensorfx.training._engine import cache


class _RenameData(training.Callback):
  """Moves the training file away once training is past its first epoch."""

  def __init__(self, path, at_step):
    super().__init__()
    self.path = path
    self.at_step = at_step
    self.renamed_at = None

  def on_step_end(self, step, logs):
    if self.renamed_at is None and step >= self.at_step:
      os.rename(self.path, self.path + '.moved')
      self.renamed_at = step


def _copy_of_iris(tmp_path, analysis, copies=1):
  """A training file of `copies` times the iris training rows."""
  train = tmp_path / 'train.csv'
  with open(os.path.join(IRIS, 'data', 'train.csv')) as f:
    rows = f.read()
  train.write_text(rows * copies)
  return str(train), data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(train),
  )


def _train(output, dataset, callbacks, *flags):
  args, job = nn.FeedForwardClassificationArguments.parse(
    [
      '--output',
      str(output),
      '--hidden-layers',
      '8',
      '--batch-size',
      '60',
      '--epochs',
      '3',
      '--max-steps',
      '0',
      '--log-interval-steps',
      '50',
      '--seed',
      '1',
      *flags,
    ],
    parse_job=True,
  )
  builder = nn.FeedForwardClassification(args, dataset)
  training.ModelTrainer(callbacks=callbacks).train(builder, job)
  return builder


def test_later_epochs_read_no_file(tmp_path, iris_analysis):
  # 12,000 instances in batches of 60: 200 steps an epoch, 600 in all. The
  # file disappears at step 250, in the second epoch: far enough from the
  # third that the uncached reader cannot have opened it already (without
  # shuffling, whose buffer of 10,000 records reads most of an epoch
  # ahead).
  path, dataset = _copy_of_iris(tmp_path, iris_analysis, copies=100)
  mover = _RenameData(path, at_step=250)
  builder = _train(
    tmp_path / 'cached', dataset, [mover], '--cache', 'memory', '--no-shuffle'
  )
  assert mover.renamed_at == 250
  assert int(builder.global_step.numpy()) == 600

  # The same run without the cache reads the file again, and fails.
  os.rename(path + '.moved', path)
  mover = _RenameData(path, at_step=250)
  with pytest.raises(Exception, match='train.csv'):
    _train(
      tmp_path / 'uncached', dataset, [mover], '--cache', 'none', '--no-shuffle'
    )
  assert mover.renamed_at == 250


def test_auto_caches_a_repeating_run_also_without_epochs(
  tmp_path, iris_analysis
):
  # --epochs not given (repeat until --max-steps): 40 steps of 8 are 2.7
  # epochs of iris, which the cache holds after the first.
  path, dataset = _copy_of_iris(tmp_path, iris_analysis)
  mover = _RenameData(path, at_step=20)
  args, job = nn.FeedForwardClassificationArguments.parse(
    [
      '--output',
      str(tmp_path / 'out'),
      '--hidden-layers',
      '8',
      '--batch-size',
      '8',
      '--max-steps',
      '40',
      '--log-interval-steps',
      '5',
    ],
    parse_job=True,
  )
  builder = nn.FeedForwardClassification(args, dataset)
  training.ModelTrainer(callbacks=[mover]).train(builder, job)
  assert engine_of(builder).run.cache_plan.cache
  assert int(builder.global_step.numpy()) == 40


def _epochs(dataset, rows, epochs):
  """The X rows of each epoch of `dataset`, as tuples."""
  values = np.concatenate([batch['X'].numpy() for batch in dataset])
  assert len(values) == rows * epochs
  return [
    [tuple(row) for row in values[i * rows : (i + 1) * rows]]
    for i in range(epochs)
  ]


def test_cached_epochs_are_shuffled_differently(iris_dataset_factory):
  args = nn.FeedForwardClassificationArguments.parse(
    ['--cache', 'memory', '--seed', '5']
  )
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  epochs = _epochs(builder.build_input('train', 16, 3, True), 120, 3)
  assert engine_of(builder).run.cache_plan.cache
  # Each epoch holds every instance once, in its own order.
  assert sorted(epochs[1]) == sorted(epochs[0]) == sorted(epochs[2])
  assert epochs[0] != epochs[1] != epochs[2] != epochs[0]

  # Unshuffled, every epoch replays the file's order.
  args = nn.FeedForwardClassificationArguments.parse(['--cache', 'memory'])
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  epochs = _epochs(builder.build_input('train', 16, 3, False), 120, 3)
  assert epochs[0] == epochs[1] == epochs[2]


def test_estimate_is_the_transformed_data_size(iris_dataset_factory):
  dataset = iris_dataset_factory()
  # X: 4 float32s, Y: an int64 class index; 120 instances analyzed.
  assert dataset.metadata.instances == 120
  assert cache.estimate_bytes(dataset) == 120 * (4 * 4 + 8)
  args = nn.FeedForwardClassificationArguments.parse([])
  builder = nn.FeedForwardClassification(args, dataset)
  one_pass = builder.build_input('train', 32, 1, False)
  actual = sum(
    t.numpy().nbytes for batch in one_pass for t in tf.nest.flatten(batch)
  )
  assert actual == cache.estimate_bytes(dataset)


def test_instance_bytes_of_lists_and_strings():
  spec = {
    'ids': tf.io.VarLenFeature(tf.int64),
    'name': tf.io.FixedLenFeature([], tf.string),
    'x': tf.io.FixedLenFeature([3], tf.float32),
  }
  # A list value: 8 bytes and a 16-byte sparse index; a string ~32 bytes.
  assert cache.instance_bytes(spec, {'ids': 2.5}) == 60 + 32 + 12


@pytest.mark.parametrize(
  'mode, budget_mb, epochs, max_steps, servers, cached',
  [
    ('auto', None, 3, None, False, True),
    ('auto', None, 1, None, False, False),
    # 10 steps of 256 read less than one epoch.
    ('auto', None, None, 10, False, False),
    ('auto', None, None, 10000, False, True),
    ('auto', 50, 3, None, False, False),
    ('auto', None, 3, None, True, False),
    ('auto', 200, 3, None, True, True),
    ('memory', 50, 3, None, False, True),
    ('none', None, 3, None, False, False),
  ],
)
def test_decision(mode, budget_mb, epochs, max_steps, servers, cached):
  plan = cache.decide(
    mode,
    budget_mb,
    estimate=100 << 20,
    instances=100000,
    batch=256,
    epochs=epochs,
    max_steps=max_steps,
    parameter_servers=servers,
  )
  assert plan.cache is cached, plan.reason


def test_default_budget_is_a_quarter_of_memory():
  assert cache.default_budget_bytes() == cache.memory_bytes() // 4
  assert cache.memory_bytes() > 0


def test_forced_cache_above_the_workers_budget_is_an_error():
  with pytest.raises(
    ConfigurationError,
    match=r'--cache-budget-mb.*Received: --cache-budget-mb=50',
  ):
    cache.decide(
      'memory',
      50,
      estimate=100 << 20,
      instances=100000,
      batch=256,
      epochs=3,
      parameter_servers=True,
    )


def test_unknown_size_is_not_cached_by_auto():
  plan = cache.decide(
    'auto', None, estimate=None, instances=None, batch=8, epochs=3
  )
  assert not plan.cache and 'unknown' in plan.reason


def test_flags_are_checked():
  with pytest.raises(ConfigurationError, match='Received: --cache-budget-mb=0'):
    nn.FeedForwardClassificationArguments.parse(['--cache-budget-mb', '0'])
  with pytest.raises(SystemExit):
    nn.FeedForwardClassificationArguments.parse(['--cache', 'disk'])
