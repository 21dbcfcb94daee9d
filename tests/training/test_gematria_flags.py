"""Gematria-style controls: --training-num-epochs and the record filter."""

import os

import numpy as np
import pytest
import tensorflow as tf

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import TrainingError
from tensorfx import training
from tensorfx.data import _filters
from tensorfx.models import nn
from tensorfx.training import ModelArguments
from test_trainer import _train


def test_training_num_epochs_is_max_steps(tmp_path):
  assert ModelArguments.parse(['--training-num-epochs', '0']).max_steps == 0
  config = tmp_path / 'run.yaml'
  config.write_text('training_num_epochs: 7\n')
  assert ModelArguments.parse(['--config', str(config)]).max_steps == 7
  config.write_text('training_num_epochs: 7\nmax_steps: 8\n')
  with pytest.raises(
    ConfigurationError, match='already set by training_num_epochs'
  ):
    ModelArguments.parse(['--config', str(config)])


def test_training_num_epochs_zero_trains_until_the_data_ends(
  tmp_path, iris_dataset_factory
):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--training-num-epochs',
    '0',
    '--epochs',
    '1',
    '--batch-size',
    '40',
  )
  assert int(builder.global_step.numpy()) == 3  # 120 rows / 40.


def _raw(dataset, source='train', batch=16):
  return dataset[source].read(batch, epochs=1)


def _rows(raw):
  rows = []
  sizes = []
  for batch in raw:
    sizes.append(int(tf.shape(batch['species'])[0]))
    rows.extend(
      zip(
        batch['species'].numpy().tolist(),
        batch['sepal_length'].numpy().tolist(),
      )
    )
  return rows, sizes


def test_filter_keeps_matching_records_in_full_batches(iris_dataset_factory):
  dataset = iris_dataset_factory()
  filters = _filters.parse_filters(['species=setosa|virginica'], dataset.schema)
  rows, sizes = _rows(_filters.filter_records(_raw(dataset), filters, 16))
  assert {s for s, _ in rows} == {b'setosa', b'virginica'}
  assert len(rows) == 80
  assert sizes == [16] * 5
  # Numbers match as text; several filters must all match.
  filters = _filters.parse_filters(
    ['species=^setosa$', r'sepal_length=^5\.'], dataset.schema
  )
  rows, _ = _rows(_filters.filter_records(_raw(dataset), filters, 16))
  every, _ = _rows(_raw(dataset))
  expected = [r for r in every if r[0] == b'setosa' and 5.0 <= r[1] < 6.0]
  assert rows == expected and rows


def test_filter_on_a_multivalent_field():
  # Two records: tags {a, bx} and {c}; a sparse [batch, None] field.
  tags = tf.sparse.SparseTensor(
    [[0, 0], [0, 1], [1, 0]], [b'a', b'bx', b'c'], [2, 2]
  )
  raw = tf.data.Dataset.from_tensors({'tags': tags, 'id': tf.constant([1, 2])})
  kept = list(_filters.filter_records(raw, [('tags', '^b')], 8))
  assert [b['id'].numpy().tolist() for b in kept] == [[1]]
  np.testing.assert_array_equal(
    tf.sparse.to_dense(kept[0]['tags']).numpy(), [[b'a', b'bx']]
  )


@pytest.mark.parametrize(
  'item, message',
  [
    ('species', '--data-filter expects FIELD=REGEX'),
    ('species=(', r"--data-filter species: '\(' is not a regular"),
    ('colour=red', "names the field 'colour', which the schema does not have"),
  ],
)
def test_bad_filters(iris_dataset_factory, item, message):
  with pytest.raises(ConfigurationError, match=message):
    _filters.parse_filters([item], iris_dataset_factory().schema)


def test_bad_filter_flag():
  with pytest.raises(ConfigurationError, match='--data-filter expects'):
    ModelArguments.parse(['--data-filter', 'species'])


def test_trainer_reads_only_matching_records(tmp_path, iris_dataset_factory):
  args = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      tmp_path, '--hidden-layers', '4', '--data-filter', 'species=^setosa$'
    )
  )
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  builder.build_graph_interfaces(training.Configuration.local())
  labels = np.concatenate(
    [b['Y'].numpy() for b in builder.build_input('train', 32, 1, False)]
  )
  assert len(labels) == 40 and len(set(labels.tolist())) == 1
  trained, _ = _train(
    tmp_path / 'job',
    iris_dataset_factory(),
    '--max-steps',
    '0',
    '--epochs',
    '1',
    '--batch-size',
    '20',
    '--data-filter',
    'species=^setosa$',
  )
  assert int(trained.global_step.numpy()) == 2  # 40 setosa rows / 20.
  assert os.path.exists(tmp_path / 'job' / 'model' / 'saved_model.pb')


def test_a_filter_that_matches_nothing_says_so_with_the_values_held(
  tmp_path, iris_dataset_factory
):
  with pytest.raises(
    TrainingError,
    match='--data-filter species=\\^setoza matched none of the 120 records '
    "read of the data; its field 'species' holds: 'setosa' \\(40\\), "
    "'versicolor' \\(40\\), 'virginica' \\(40\\)",
  ):
    _train(
      tmp_path / 'job',
      iris_dataset_factory(),
      '--max-steps',
      '5',
      '--data-filter',
      'species=^setoza',
    )
  assert not os.path.exists(tmp_path / 'job' / 'model' / 'saved_model.pb')
