"""`--skip-bad-records`: bad rows are skipped, counted, logged, summarized."""

import logging
import os
import pathlib

import pytest
import tensorflow as tf
import yaml

from conftest import IRIS
from iris_examples import example
from iris_examples import write_records
from tensorfx import DataError
from tensorfx import data
from test_trainer import _scalars
from test_trainer import _train

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


def _with_bad_rows(tmp_path, name, replacements):
  lines = (
    pathlib.Path(os.path.join(IRIS, 'data', f'{name}.csv'))
    .read_text()
    .splitlines()
  )
  for number, text in replacements.items():
    lines[number - 1] = text
  path = tmp_path / f'{name}.csv'
  path.write_text('\n'.join(lines) + '\n')
  return str(path)


def _messages_of(logger_name):
  """A list that receives the messages of a logger (which may not propagate)."""
  messages = []
  handler = logging.Handler()
  handler.emit = lambda record: messages.append(record.getMessage())
  logging.getLogger(logger_name).addHandler(handler)
  return messages, handler


def test_skipped_rows_are_counted_in_log_summaries_and_job(
  tmp_path, iris_analysis
):
  train = _with_bad_rows(
    tmp_path,
    'train',
    {5: 'setosa,5.0,oops,1.4,0.2', 17: 'setosa,5.0,1.4', 30: 'x,"1,2'},
  )
  evaluate = _with_bad_rows(tmp_path, 'eval', {3: 'virginica,,,,'})
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=iris_analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=train,
    eval=evaluate,
  )
  output = tmp_path / 'out'
  messages, handler = _messages_of('tensorfx')
  try:
    # 117 good rows of 120, batches of 64, one epoch: 2 steps; one
    # evaluation at the end, however slow the machine (no timed checkpoint).
    _, model = _train(
      output,
      dataset,
      '--skip-bad-records',
      '--epochs',
      '1',
      '--max-steps',
      '0',
      '--log-interval-steps',
      '1',
      '--no-shuffle',
      '--checkpoint-interval-secs',
      '86400',
    )
  finally:
    logging.getLogger('tensorfx').removeHandler(handler)
  assert dataset.bad_records() == {'train': 3, 'eval': 1}
  assert 'Skipped bad records: 3 of train, 1 of eval' in messages
  # Each named by its file and line, as prediction names them.
  assert (
    f'Skipping a bad record: {train}:17: expected 5 columns, found 3: '
    "'setosa,5.0,1.4'"
  ) in messages
  assert any(
    m.startswith(f'Skipping a bad record: {train}:5: ') for m in messages
  ), messages
  assert any(
    m.startswith(f'Skipping a bad record: {evaluate}:3: ') for m in messages
  ), messages
  assert any(
    m.startswith('Skipped 3 bad records of train so far') for m in messages
  )
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['bad_records'] == {'train': 3, 'eval': 1}
  assert job['arguments']['skip_bad_records'] is True
  train_counts = _scalars(output / 'summaries' / 'train')['bad_records']
  assert train_counts[-1][1] == 3
  assert _scalars(output / 'summaries' / 'eval')['bad_records'][-1][1] == 1
  # Trained on the good rows only, and serving.
  assert model.predict(['6.3,3.3,6,2.5'])[0]['label'] in (
    'setosa',
    'versicolor',
    'virginica',
  )


def test_without_the_flag_the_first_bad_row_fails_the_job(
  tmp_path, iris_analysis
):
  train = _with_bad_rows(tmp_path, 'train', {17: 'setosa,5.0,1.4'})
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=iris_analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=train,
  )
  # As prediction's: it says how to go on.
  with pytest.raises(
    DataError,
    match=f'^{train}:17: expected 5 columns, found 3 '
    r'\(--skip-bad-records skips and counts such records\)$',
  ):
    _train(tmp_path / 'out', dataset, '--max-steps', '5', '--no-shuffle')


def test_a_header_read_as_data_names_the_header_options(tmp_path):
  rows = pathlib.Path(IRIS, 'data', 'train.csv').read_text()
  train = tmp_path / 'train.csv'
  train.write_text(
    'species,sepal_length,sepal_width,petal_length,petal_width\n' + rows
  )
  # No analysis given: the job's own analysis reads the header first.
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(train),
  )
  with pytest.raises(DataError) as raised:
    _train(tmp_path / 'out', dataset, '--max-steps', '5')
  assert str(raised.value) == (
    f"{train}:1: column 'sepal_length' is not a real number: sepal_length "
    '(line 1 looks like a header: CsvDataSet(..., header=True) in the '
    'trainer reads the columns by it, skip_header=True skips it; tensorfx '
    'analyze: --header, --skip-header)'
  )
  # Read as a header, the same file trains.
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(train),
    header=True,
  )
  _train(tmp_path / 'read', dataset, '--max-steps', '5')
  job = yaml.safe_load((tmp_path / 'read' / 'job.yaml').read_text())
  assert job['status'] == 'completed'


def test_tfrecord_records_are_skipped_and_counted(tmp_path, iris_analysis):
  # Gematria's --gematria_drop_invalid_blocks: not a tf.Example, a feature
  # of the wrong type, a missing feature.
  with open(os.path.join(IRIS, 'data', 'train.csv')) as f:
    records = [example(line.strip().split(',')) for line in f if line.strip()]
  wrong_type = tf.train.Example.FromString(records[10])
  wrong_type.features.feature['petal_width'].CopyFrom(
    tf.train.Feature(bytes_list=tf.train.BytesList(value=[b'0.2']))
  )
  missing = tf.train.Example.FromString(records[20])
  del missing.features.feature['species']
  records[5] = b'\x0a\x02not a tf.Example'
  records[10] = wrong_type.SerializeToString()
  records[20] = missing.SerializeToString()
  path = tmp_path / 'train.tfrecord.gz'
  write_records(path, records, 'GZIP')
  dataset = data.ExamplesDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=iris_analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=str(path),
  )
  output = tmp_path / 'out'
  # 117 good records of 120, batches of 40 (less what is dropped of
  # each), one epoch: 3 steps.
  messages, handler = _messages_of('tensorfx')
  try:
    builder, _ = _train(
      output,
      dataset,
      '--skip-bad-records',
      '--epochs',
      '1',
      '--max-steps',
      '0',
      '--batch-size',
      '40',
      '--no-shuffle',
    )
  finally:
    logging.getLogger('tensorfx').removeHandler(handler)
  assert int(builder.global_step.numpy()) == 3
  # Each named by its file and record (1-based), as prediction names them.
  for number in (6, 11, 21):
    assert any(
      m.startswith(f'Skipping a bad record: {path}: record {number}: ')
      for m in messages
    ), messages
  assert dataset.bad_records() == {'train': 3}
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['bad_records'] == {'train': 3}
  assert _scalars(output / 'summaries' / 'train')['bad_records'][-1][1] == 3


def test_the_flag_is_refused_for_a_source_that_cannot_skip(
  tmp_path, iris_analysis
):
  import pandas as pd

  frame = pd.read_csv(
    os.path.join(IRIS, 'data', 'train.csv'),
    header=None,
    names=[
      'species',
      'sepal_length',
      'sepal_width',
      'petal_length',
      'petal_width',
    ],
  )
  dataset = data.DataFrameDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=iris_analysis,
    features=os.path.join(IRIS, 'features.yaml'),
    train=frame,
  )
  with pytest.raises(
    DataError,
    match=r"Source 'train' \(DataFrameDataSource\) "
    'cannot skip bad records; CSV and TFRecord sources can',
  ):
    _train(tmp_path / 'out', dataset, '--skip-bad-records')
