"""`--batch-size all`: each step trains on the whole training data."""

import os

import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from tensorfx import ConfigurationError
from tensorfx import data
from tensorfx.models import nn
from tensorfx.training import ModelArguments
from tensorfx.training._arguments import batch_size as _batch_size
from tensorfx.training._settings import Settings
from test_trainer import _train


class _Counting(nn.FeedForwardClassification):
  """Counts the examples of each training step, and the largest step."""

  def build_inference(self, inputs, training):
    if not hasattr(self, 'trained_examples'):
      self.trained_examples = tf.Variable(
        0, dtype=tf.int64, trainable=False, name='trained_examples'
      )
      self.largest_step = tf.Variable(
        0, dtype=tf.int64, trainable=False, name='largest_step'
      )
    if training:
      size = tf.shape(inputs['Y'], out_type=tf.int64)[0]
      self.trained_examples.assign_add(size)
      self.largest_step.assign(tf.maximum(self.largest_step, size))
    return super().build_inference(inputs, training)


def test_one_step_sees_all_120_iris_rows(tmp_path, iris_dataset_factory):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--batch-size',
    'all',
    '--max-steps',
    '2',
    '--log-interval-steps',
    '1',
    builder_type=_Counting,
  )
  assert int(builder.largest_step.numpy()) == 120
  assert int(builder.trained_examples.numpy()) == 240
  assert builder.settings.loop.batch_size == 120
  # Evaluation batches default to the same size.
  assert builder.settings.validation.batch_size == 120
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['arguments']['batch_size'] == 'all'
  assert job['status'] == 'completed'


def test_the_whole_data_is_in_the_first_batch(tmp_path, iris_dataset_factory):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--batch-size',
    'ALL',
    '--max-steps',
    '1',
    '--no-shuffle',
  )
  batch = next(
    iter(
      builder.build_input(
        'train', builder.settings.loop.batch_size, None, False
      )
    )
  )
  labels = batch['Y'].numpy().tolist()
  assert len(labels) == 120
  # train.csv has 40 of each species.
  assert sorted(labels.count(k) for k in set(labels)) == [40, 40, 40]


def test_without_an_analysis_the_source_is_counted():
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
  )
  assert _batch_size.training_instances(dataset) == 120


def test_with_a_filter_one_step_is_one_pass_over_what_passes(
  tmp_path, iris_dataset_factory
):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--batch-size',
    'all',
    '--max-steps',
    '3',
    '--data-filter',
    'species=^(setosa|virginica)$',
    builder_type=_Counting,
  )
  # 80 of the 120 rows pass: each step is one pass over them.
  assert builder.settings.loop.batch_size == 80
  assert int(builder.largest_step.numpy()) == 80
  assert int(builder.trained_examples.numpy()) == 240


def test_the_flag_takes_all_or_a_positive_number():
  args = ModelArguments.parse(['--batch-size', 'All'])
  assert (args.batch_size, args.eval_batch_size) == ('all', 'all')
  settings = Settings.from_args(args)
  assert (settings.loop.batch_size, settings.validation.batch_size) == (
    'all',
    'all',
  )
  args = ModelArguments.parse(
    ['--batch-size', 'all', '--eval-batch-size', '16']
  )
  assert Settings.from_args(args).validation.batch_size == 16
  with pytest.raises(
    ConfigurationError,
    match='--batch-size must be a positive integer, or '
    "'all' .*Received: --batch-size=0",
  ):
    ModelArguments.parse(['--batch-size', '0'])
  with pytest.raises(SystemExit):
    ModelArguments.parse(['--batch-size', 'many'])
