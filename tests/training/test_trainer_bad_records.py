"""`--skip-bad-records`: bad rows are skipped, counted, logged, summarized."""

import logging
import os

import pytest
import yaml

from conftest import IRIS
from tensorfx import data
from tensorfx._errors import DataError
from test_trainer import _scalars
from test_trainer import _train


def _with_bad_rows(tmp_path, name, replacements):
  lines = open(os.path.join(IRIS, 'data', f'{name}.csv')).read().splitlines()
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


def test_skipped_rows_are_counted_in_log_summaries_and_job(tmp_path,
                                                           iris_analysis):
  train = _with_bad_rows(tmp_path, 'train', {
      5: 'setosa,5.0,oops,1.4,0.2', 17: 'setosa,5.0,1.4', 30: 'x,"1,2'})
  evaluate = _with_bad_rows(tmp_path, 'eval', {3: 'virginica,,,,'})
  dataset = data.CsvDataSet(os.path.join(IRIS, 'schema.yaml'),
                            metadata=iris_analysis,
                            features=os.path.join(IRIS, 'features.yaml'),
                            train=train, eval=evaluate)
  output = tmp_path / 'out'
  messages, handler = _messages_of('tensorfx')
  try:
    # 117 good rows of 120, batches of 64, one epoch: 2 steps.
    _, model = _train(output, dataset, '--skip-bad-records', '--epochs', '1',
                      '--max-steps', '0', '--log-interval-steps', '1',
                      '--no-shuffle')
  finally:
    logging.getLogger('tensorfx').removeHandler(handler)
  assert dataset.bad_records() == {'train': 3, 'eval': 1}
  assert 'Skipped bad records: 3 of train, 1 of eval' in messages
  assert ("Skipping a bad record: expected 5 columns, found 3: "
          "'setosa,5.0,1.4'") in messages
  assert any(m.startswith('Skipped 3 bad records of train so far')
             for m in messages)
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed'
  assert job['bad_records'] == {'train': 3, 'eval': 1}
  assert job['arguments']['skip_bad_records'] is True
  train_counts = _scalars(output / 'summaries' / 'train')['bad_records']
  assert train_counts[-1][1] == 3
  assert _scalars(output / 'summaries' / 'eval')['bad_records'][-1][1] == 1
  # Trained on the good rows only, and serving.
  assert model.predict(['6.3,3.3,6,2.5'])[0]['label'] in (
      'setosa', 'versicolor', 'virginica')


def test_without_the_flag_the_first_bad_row_fails_the_job(tmp_path,
                                                          iris_analysis):
  train = _with_bad_rows(tmp_path, 'train', {17: 'setosa,5.0,1.4'})
  dataset = data.CsvDataSet(os.path.join(IRIS, 'schema.yaml'),
                            metadata=iris_analysis,
                            features=os.path.join(IRIS, 'features.yaml'),
                            train=train)
  with pytest.raises(DataError, match=f'{train}:17: expected 5 columns, '
                     'found 3'):
    _train(tmp_path / 'out', dataset, '--max-steps', '5', '--no-shuffle')


def test_the_flag_is_refused_for_a_source_that_cannot_skip(tmp_path,
                                                          iris_analysis):
  path = tmp_path / 'train.tfrecord'
  path.write_bytes(b'')
  dataset = data.ExamplesDataSet(os.path.join(IRIS, 'schema.yaml'),
                                 metadata=iris_analysis,
                                 features=os.path.join(IRIS, 'features.yaml'),
                                 train=str(path))
  with pytest.raises(DataError, match=r"Source 'train' \(ExamplesDataSource\) "
                     'cannot skip bad records'):
    _train(tmp_path / 'out', dataset, '--skip-bad-records')
