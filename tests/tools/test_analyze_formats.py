"""`tensorfx analyze` over each file format and its CSV options."""

import json
import logging
import os

import pytest
import tensorflow as tf

from conftest import IRIS
from tensorfx.tools import main
from tensorfx.tools._analyze import data_format

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

SCHEMA = os.path.join(IRIS, 'schema.yaml')
FEATURES = os.path.join(IRIS, 'features.yaml')
ROWS = [
  ('setosa', 5.1, 3.5, 1.4, 0.2),
  ('virginica', 6.3, 3.3, 6.0, 2.5),
  ('versicolor', 6.1, 2.8, 4.7, 1.2),
]
NAMES = (
  'species',
  'sepal_length',
  'sepal_width',
  'petal_length',
  'petal_width',
)


def test_the_format_follows_the_file_names():
  assert data_format(['a.csv']) == 'csv'
  assert data_format(['a.tfrecord', 'b-*.tfrecord.gz']) == 'tfrecord'
  assert data_format(['a.tfrecord', 'b.csv']) == 'csv'
  assert data_format(['a.data'], 'tfrecord') == 'tfrecord'


def test_analyze_reads_gzip_tfrecords(tmp_path, capsys):
  path = str(tmp_path / 'train-0.tfrecord.gz')
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for row in ROWS:
      feature = {
        'species': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[row[0].encode()])
        )
      }
      for name, value in zip(NAMES[1:], row[1:]):
        feature[name] = tf.train.Feature(
          float_list=tf.train.FloatList(value=[value])
        )
      writer.write(
        tf.train.Example(
          features=tf.train.Features(feature=feature)
        ).SerializeToString()
      )

  code = main(
    [
      'analyze',
      '--data-train',
      str(tmp_path / 'train-*.tfrecord.gz'),
      '--data-schema',
      SCHEMA,
      '--data-features',
      FEATURES,
      '--output',
      str(tmp_path / 'analysis'),
    ]
  )
  assert code == 0
  assert 'Analyzed 3 instances' in capsys.readouterr().out
  metadata = json.loads((tmp_path / 'analysis' / 'metadata.json').read_text())
  assert metadata['fields']['species']['vocabulary'] == {
    'setosa': 1,
    'versicolor': 1,
    'virginica': 1,
  }


def test_analyze_with_a_header_delimiter_and_bad_rows(tmp_path, capsys):
  path = tmp_path / 'train.tsv'
  path.write_text(
    '\t'.join(NAMES)
    + '\n'
    + ''.join('\t'.join(map(str, row)) + '\n' for row in ROWS)
    + 'setosa\twide\t3\t1\t0.2\n'
  )

  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logger = logging.getLogger('tensorfx')
  logger.addHandler(handler)
  try:
    code = main(
      [
        'analyze',
        '--data-train',
        str(path),
        '--data-format',
        'csv',
        '--delimiter',
        '\t',
        '--skip-header',
        '--skip-bad-records',
        '--data-schema',
        SCHEMA,
        '--data-features',
        FEATURES,
        '--output',
        str(tmp_path / 'analysis'),
      ]
    )
  finally:
    logger.removeHandler(handler)
  assert code == 0
  assert 'Analyzed 3 instances' in capsys.readouterr().out
  messages = [r.getMessage() for r in records]
  assert 'Skipped 1 bad record of train' in messages
  assert (
    f"Skipping a bad record: {path}:5: column 'sepal_length' is not a "
    'real number: wide'
  ) in messages


def test_parquet_files_are_told_by_their_names():
  assert data_format(['a.parquet', 'b-*.parquet']) == 'parquet'
  assert data_format(['a.data'], 'parquet') == 'parquet'


def test_analyze_a_published_csv_by_its_header_and_tokens(tmp_path, capsys):
  # Columns in another order, one more, a space after each comma, NA cells.
  path = tmp_path / 'iris.csv'
  path.write_text(
    'id, '
    + ', '.join(reversed(NAMES))
    + '\n'
    + ''.join(
      f'{i}, ' + ', '.join(map(str, reversed(row))) + '\n'
      for i, row in enumerate(ROWS)
    )
    + '9, NA, 1.5, 3, 2.5, virginica\n'
  )
  schema = tmp_path / 'schema.yaml'
  with open(SCHEMA) as f:
    text = f.read()
  schema.write_text(text.replace('type: real', 'type: real\n  missing: mean'))
  code = main(
    [
      'analyze',
      '--data-train',
      str(path),
      '--header',
      '--na-values',
      'NA,?',
      '--strip-cells',
      '--data-schema',
      str(schema),
      '--data-features',
      FEATURES,
      '--output',
      str(tmp_path / 'analysis'),
    ]
  )
  assert code == 0
  assert 'Analyzed 4 instances' in capsys.readouterr().out
  metadata = json.loads((tmp_path / 'analysis' / 'metadata.json').read_text())
  assert metadata['fields']['petal_width']['missing'] == 1
  assert metadata['fields']['species']['vocabulary']['virginica'] == 2


def test_analyze_parquet(tmp_path, capsys):
  import pyarrow as pa
  import pyarrow.parquet as pq

  columns = {name: [row[i] for row in ROWS] for i, name in enumerate(NAMES)}
  pq.write_table(pa.table(columns), tmp_path / 'train.parquet')
  code = main(
    [
      'analyze',
      '--data-train',
      str(tmp_path / 'train.parquet'),
      '--data-schema',
      SCHEMA,
      '--data-features',
      FEATURES,
      '--output',
      str(tmp_path / 'analysis'),
    ]
  )
  assert code == 0
  assert 'Analyzed 3 instances' in capsys.readouterr().out
