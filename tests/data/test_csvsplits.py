"""CSV read for the analysis in byte ranges: every line once, lines named."""

import logging
import os
import pathlib

import pytest

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import _csvsplits

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

IRIS = os.path.join(
  os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
  'samples',
  'iris',
)
SCHEMA = os.path.join(IRIS, 'schema.yaml')
FEATURES = os.path.join(IRIS, 'features.yaml')
LINES = (
  pathlib.Path(os.path.join(IRIS, 'data', 'train.csv')).read_text().splitlines()
)


@pytest.mark.parametrize(
  'split_bytes,block_bytes', [(7, 5), (64, 1000), (1000, 16), (10**6, 10**6)]
)
@pytest.mark.parametrize('ending', ['\n', '', '\r\n'])
def test_ranges_hold_every_line_once(
  tmp_path, split_bytes, block_bytes, ending
):
  lines = ['a,1', '', 'bb,22', 'ccc,333', 'd' * 40 + ',4', 'e,5']
  text = '\n'.join(lines).replace('\n', ending if ending else '\n') + ending
  path = tmp_path / 'a.csv'
  path.write_bytes(text.encode())

  seen = b''
  for name, start, end in _csvsplits.splits([str(path)], split_bytes):
    for offset, data in _csvsplits.blocks(name, start, end, block_bytes):
      assert start <= offset < end
      assert data.endswith(b'\n') or offset + len(data) == len(text)
      seen += data
  assert seen == text.encode()


def test_lines_before_a_position_are_counted(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text('a\nb\n\nc\n')
  assert [_csvsplits.count_lines(str(path), end) for end in range(8)] == [
    0,
    0,
    1,
    1,
    2,
    3,
    3,
    4,
  ]


@pytest.fixture
def small_ranges(monkeypatch):
  """Ranges of 300 bytes read in blocks of 100: many of each per file."""
  monkeypatch.setattr(_csvsplits, 'SPLIT_BYTES', 300)
  monkeypatch.setattr(_csvsplits, 'BLOCK_BYTES', 100)


def test_a_bad_line_in_a_later_range_is_named(tmp_path, small_ranges):
  path = tmp_path / 'train.csv'
  bad = LINES[:90] + ['setosa,5.0,wide,1.5,0.2'] + LINES[90:]
  path.write_text('\n'.join(bad) + '\n')
  dataset = CsvDataSet(SCHEMA, features=FEATURES, train=str(path))

  with pytest.raises(DataError) as info:
    dataset.analyze(str(tmp_path / 'analysis'))
  assert str(info.value) == (
    f"{path}:91: column 'sepal_width' is not a real number: wide"
  )


def test_skipped_lines_are_named_and_counted(tmp_path, small_ranges, caplog):
  path = tmp_path / 'train.csv'
  rows = ['species,sepal_length,sepal_width,petal_length,petal_width']
  rows += (
    LINES[:50] + ['setosa,5.0'] + LINES[50:100] + ['', 'x,1,2,3,'] + LINES[100:]
  )
  path.write_text('\n'.join(rows) + '\n')
  dataset = CsvDataSet(
    SCHEMA,
    features=FEATURES,
    train=str(path),
    skip_header=True,
    skip_bad_records=True,
  )

  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    metadata = dataset.analyze(str(tmp_path / 'analysis'))
  assert metadata.instances == len(LINES)
  messages = [r.getMessage() for r in caplog.records]
  assert (
    f'Skipping a bad record: {path}:52: expected 5 columns, found 2' in messages
  )
  assert (
    f"Skipping a bad record: {path}:104: column 'petal_width' is "
    'empty; say what a missing petal_width means in the schema '
    '(missing: mean, median, mode or zero; or default: VALUE), or fix '
    'the data'
  ) in messages
  assert 'Skipped 2 bad records of train' in messages
