"""`tensorfx analyze` over each file format and its CSV options."""

import json
import logging
import os

import tensorflow as tf

from conftest import IRIS
from tensorfx.tools import main
from tensorfx.tools._analyze import data_format

SCHEMA = os.path.join(IRIS, 'schema.yaml')
FEATURES = os.path.join(IRIS, 'features.yaml')
ROWS = [('setosa', 5.1, 3.5, 1.4, 0.2), ('virginica', 6.3, 3.3, 6.0, 2.5),
        ('versicolor', 6.1, 2.8, 4.7, 1.2)]
NAMES = ('species', 'sepal_length', 'sepal_width', 'petal_length',
         'petal_width')


def test_the_format_follows_the_file_names():
  assert data_format(['a.csv']) == 'csv'
  assert data_format(['a.tfrecord', 'b-*.tfrecord.gz']) == 'tfrecord'
  assert data_format(['a.tfrecord', 'b.csv']) == 'csv'
  assert data_format(['a.data'], 'tfrecord') == 'tfrecord'


def test_analyze_reads_gzip_tfrecords(tmp_path, capsys):
  path = str(tmp_path / 'train-0.tfrecord.gz')
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for row in ROWS:
      feature = {'species': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[row[0].encode()]))}
      for name, value in zip(NAMES[1:], row[1:]):
        feature[name] = tf.train.Feature(float_list=tf.train.FloatList(
            value=[value]))
      writer.write(tf.train.Example(features=tf.train.Features(
          feature=feature)).SerializeToString())

  code = main(['analyze', '--data-train', str(tmp_path / 'train-*.tfrecord.gz'),
               '--data-schema', SCHEMA, '--data-features', FEATURES,
               '--output', str(tmp_path / 'analysis')])
  assert code == 0
  assert 'Analyzed 3 instances' in capsys.readouterr().out
  metadata = json.loads((tmp_path / 'analysis' / 'metadata.json').read_text())
  assert metadata['fields']['species']['vocabulary'] == {
      'setosa': 1, 'versicolor': 1, 'virginica': 1}


def test_analyze_with_a_header_delimiter_and_bad_rows(tmp_path, capsys):
  path = tmp_path / 'train.tsv'
  path.write_text('\t'.join(NAMES) + '\n' +
                  ''.join('\t'.join(map(str, row)) + '\n' for row in ROWS) +
                  'setosa\twide\t3\t1\t0.2\n')

  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logger = logging.getLogger('tensorfx')
  logger.addHandler(handler)
  try:
    code = main(['analyze', '--data-train', str(path), '--data-format', 'csv',
                 '--delimiter', '\t', '--skip-header', '--skip-bad-records',
                 '--data-schema', SCHEMA, '--data-features', FEATURES,
                 '--output', str(tmp_path / 'analysis')])
  finally:
    logger.removeHandler(handler)
  assert code == 0
  assert 'Analyzed 3 instances' in capsys.readouterr().out
  messages = [r.getMessage() for r in records]
  assert 'Skipped 1 bad records of train' in messages
  assert (f"Skipping a bad record: {path}:5: column 'sepal_length' is not a "
          'real number: wide') in messages
