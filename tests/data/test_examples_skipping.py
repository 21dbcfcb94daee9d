"""TFRecord `skip_bad_records`: invalid records dropped and counted.

Gematria's `--gematria_drop_invalid_blocks`: a record that is not a
tf.Example, or whose features do not match the schema (a wrong type, a
wrong number of values, a missing required feature), is dropped and
counted, by the training reader and by the analysis, as bad CSV rows are.
"""

import logging
import os

import pytest
from test_examples import IRIS
from test_examples import SCHEMA
from test_examples import _read
from test_examples import example
from test_examples import record
from test_examples import write

from tensorfx import DataError
from tensorfx.data import ExamplesDataSet
from tensorfx.data import ExamplesDataSource
from tensorfx.data._examplebatches import record_batches

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

BAD = {
  3: (b'\x0a\x05garbage and more', 'not a serialized tf.Example'),
  5: (
    example(name=['e'], n=[1.5], v=[1, 2]).SerializeToString(),
    "bad feature 'n'",
  ),
  # An absent discrete feature is a missing value; an absent number with
  # no missing-value policy is an error.
  6: (
    example(name=['f'], v=[1, 2]).SerializeToString(),
    "missing required feature 'n'",
  ),
  9: (
    example(name=['i'], n=[1], v=[1, 2, 3]).SerializeToString(),
    "bad feature 'v'",
  ),
}


def _records():
  """12 records, 4 of them bad (1-based positions 3, 5, 6, 9)."""
  records = []
  for position in range(1, 13):
    bad = BAD.get(position)
    records.append(bad[0] if bad else record(f'r{position}', position))
  return records


def _good_names():
  return [f'r{p}' for p in range(1, 13) if p not in BAD]


@pytest.fixture
def warnings():
  messages = []
  handler = logging.Handler()
  handler.emit = lambda r: messages.append(r.getMessage())
  logging.getLogger('tensorfx').addHandler(handler)
  yield messages
  logging.getLogger('tensorfx').removeHandler(handler)


@pytest.mark.parametrize('batch_size', [1, 2, 4, 32])
def test_bad_records_are_dropped_and_counted(tmp_path, warnings, batch_size):
  source = ExamplesDataSource(
    write(tmp_path / 'a.tfrecord', _records()), SCHEMA, skip_bad_records=True
  )
  rows = _read(source, batch_size)
  assert rows['name'] == _good_names()
  assert rows['n'] == [p for p in range(1, 13) if p not in BAD]
  assert source.bad_records == 4
  skipped = [m for m in warnings if m.startswith('Skipping a bad record')]
  assert len(skipped) == 4
  # Batches parse in parallel: their warnings may come in any order.
  for _, problem in BAD.values():
    assert len([m for m in skipped if problem in m]) == 1, (problem, skipped)


def test_no_batch_is_left_empty(tmp_path):
  # Records 5 and 6 are both bad: with batches of 2 the third batch is empty.
  source = ExamplesDataSource(
    write(tmp_path / 'a.tfrecord', _records()[:8]),
    SCHEMA,
    skip_bad_records=True,
  )
  sizes = [int(batch['n'].shape[0]) for batch in source.read(2)]
  assert 0 not in sizes and sum(sizes) == 5


def test_counts_over_epochs(tmp_path):
  dataset = ExamplesDataSet(
    SCHEMA, train=write(tmp_path / 'a.tfrecord', _records())
  )
  dataset.skip_bad_records()
  assert len(_read(dataset['train'], 4, epochs=2)['name']) == 16
  assert dataset.bad_records() == {'train': 8}


def test_without_counting_bad_records_are_dropped_all_the_same(tmp_path):
  # As parameter-server workers read: in another process, uncounted.
  source = ExamplesDataSource(
    write(tmp_path / 'a.tfrecord', _records()), SCHEMA
  )
  source.enable_skipping(count=False)
  assert _read(source, 4)['name'] == _good_names()
  assert source.bad_records == 0


def test_without_skipping_the_first_bad_record_fails(tmp_path):
  path = write(tmp_path / 'a.tfrecord', _records())
  with pytest.raises(
    DataError, match=f'{path}: record 3: not a serialized tf.Example'
  ):
    _read(ExamplesDataSource(path, SCHEMA), 4)


def test_skip_bad_records_must_be_a_bool():
  with pytest.raises(
    DataError,
    match='skip_bad_records must be True or '
    "False. Received: skip_bad_records='yes'",
  ):
    ExamplesDataSet(SCHEMA, train='a.tfrecord', skip_bad_records='yes')


def test_the_beam_reader_skips_with_the_flag(tmp_path):
  path = write(tmp_path / 'a.tfrecord', _records())
  messages = []
  batches = list(
    record_batches(
      path, SCHEMA, skip_bad_records=True, on_bad_record=messages.append
    )
  )
  names = [
    n[0].decode()
    for b in batches
    for n in b.column(b.schema.get_field_index('name')).to_pylist()
  ]
  assert names == _good_names()
  assert [m.split(':')[1].strip() for m in messages] == [
    f'record {p}' for p in sorted(BAD)
  ]


def test_the_analysis_skips_and_counts(tmp_path, warnings):
  rows = [
    ['setosa', 5.1, 3.5, 1.4, 0.2],
    ['virginica', 6.3, 3.3, 6.0, 2.5],
    ['versicolor', 6.1, 2.8, 4.7, 1.2],
  ]
  records = [
    example(
      species=[r[0]],
      sepal_length=[r[1]],
      sepal_width=[r[2]],
      petal_length=[r[3]],
      petal_width=[r[4]],
    ).SerializeToString()
    for r in rows * 4
  ]
  records.insert(2, b'not an example at all')
  records.insert(
    7,
    example(
      species=['setosa'],
      sepal_length=['5.1'],
      sepal_width=[3.5],
      petal_length=[1.4],
      petal_width=[0.2],
    ).SerializeToString(),
  )
  dataset = ExamplesDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    skip_bad_records=True,
    train=write(tmp_path / 'train.tfrecord', records),
  )
  metadata = dataset.analyze(str(tmp_path / 'analysis'))
  assert metadata.instances == 12
  assert 'Skipped 2 bad records of train' in warnings
