"""predict_files: records in, the same records out with their predictions."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from iris_examples import FIELDS
from iris_examples import eval_rows as _rows
from iris_examples import example
from iris_examples import read_examples
from iris_examples import values as _values
from iris_examples import write_records
from tensorfx import DataError
from tensorfx import prediction

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_batch')


@pytest.fixture(scope='module')
def model(iris_model):
  output, _ = iris_model
  return prediction.Model.load(f'{output}/model')


@pytest.fixture(scope='module')
def expected(model):
  """The model's outputs for each eval row, predicted in one call."""
  return model.predict([example(row) for row in _rows()])


def test_tfrecord_in_tfrecord_out_adds_the_outputs(model, expected, tmp_path):
  rows = _rows()
  records = [example(row, id=i, note=b'kept') for i, row in enumerate(rows)]
  write_records(tmp_path / 'in.tfrecord', records)
  summary = prediction.predict_files(
    model,
    str(tmp_path / 'in.tfrecord'),
    str(tmp_path / 'out.tfrecord'),
    batch_size=7,
  )
  assert (summary.records, summary.predicted, summary.skipped) == (30, 30, 0)
  examples = read_examples(tmp_path / 'out.tfrecord')
  assert len(examples) == 30
  for i, (out, want) in enumerate(zip(examples, expected)):
    features = out.features.feature
    # The input record, untouched, in input order...
    assert _values(features['id']) == [i]
    assert _values(features['note']) == [b'kept']
    assert _values(features['sepal_length']) == pytest.approx(
      [float(rows[i][1])]
    )
    # ... with one feature per output.
    assert _values(features['label']) == [want['label'].encode()]
    # Batches of 7 against one of 30: the same up to float rounding.
    np.testing.assert_allclose(
      _values(features['scores']), want['scores'], rtol=1e-4, atol=1e-7
    )
  assert not os.path.exists(tmp_path / 'out.tfrecord.partial')


def test_gzip_in_json_lines_out(model, expected, tmp_path):
  rows = _rows()
  write_records(tmp_path / 'in.tfrecord.gz', [example(r) for r in rows], 'GZIP')
  prediction.predict_files(
    model, str(tmp_path / '*.tfrecord.gz'), str(tmp_path / 'out.jsonl')
  )
  lines = [
    json.loads(line)
    for line in (tmp_path / 'out.jsonl').read_text().splitlines()
  ]
  assert [line['label'] for line in lines] == [e['label'] for e in expected]
  assert lines[0]['species'] == rows[0][0]
  assert lines[0]['petal_width'] == pytest.approx(float(rows[0][4]))


def test_gzip_tfrecord_output(model, tmp_path):
  write_records(tmp_path / 'in.tfrecord', [example(r) for r in _rows()])
  prediction.predict_files(
    model, str(tmp_path / 'in.tfrecord'), str(tmp_path / 'out.tfrecord.gz')
  )
  assert len(read_examples(tmp_path / 'out.tfrecord.gz', 'GZIP')) == 30
  with pytest.raises(tf.errors.DataLossError):
    read_examples(tmp_path / 'out.tfrecord.gz')


def test_csv_and_json_lines(model, expected, tmp_path):
  rows = _rows()
  # With and without the target column, and JSON objects.
  lines = [
    ','.join(rows[0]),
    ','.join(rows[1][1:]),
    json.dumps(dict(zip(FIELDS[1:], map(float, rows[2][1:])))),
  ]
  (tmp_path / 'in.txt').write_text('\n'.join(lines) + '\n\n')
  prediction.predict_files(
    model, str(tmp_path / 'in.txt'), str(tmp_path / 'out.json')
  )
  out = [
    json.loads(line)
    for line in (tmp_path / 'out.json').read_text().splitlines()
  ]
  assert [o['label'] for o in out] == [e['label'] for e in expected[:3]]
  assert out[0]['species'] == rows[0][0]
  assert out[0]['sepal_length'] == pytest.approx(float(rows[0][1]))
  assert 'species' not in out[1] and out[1]['petal_width'] == pytest.approx(
    float(rows[1][4])
  )
  assert out[2]['sepal_width'] == pytest.approx(float(rows[2][2]))
  # CSV to TFRecord: typed features from the schema.
  (tmp_path / 'in.csv').write_text('\n'.join(','.join(r) for r in rows))
  prediction.predict_files(
    model, str(tmp_path / 'in.csv'), str(tmp_path / 'out.tfrecord')
  )
  first = read_examples(tmp_path / 'out.tfrecord')[0].features.feature
  assert _values(first['species']) == [rows[0][0].encode()]
  assert _values(first['sepal_length']) == pytest.approx([float(rows[0][1])])
  assert _values(first['label']) == [expected[0]['label'].encode()]


def _bad_records():
  rows = _rows()
  wrong_type = tf.train.Example()
  wrong_type.ParseFromString(example(rows[3]))
  wrong_type.features.feature['sepal_length'].CopyFrom(
    tf.train.Feature(bytes_list=tf.train.BytesList(value=[b'5.1']))
  )
  missing = tf.train.Example()
  missing.ParseFromString(example(rows[5]))
  del missing.features.feature['petal_length']
  records = [example(row, id=i) for i, row in enumerate(rows)]
  records[1] = b'\x00\xffnot a tf.Example'
  records[3] = wrong_type.SerializeToString()
  records[5] = missing.SerializeToString()
  return records


def test_a_bad_record_is_named(model, tmp_path):
  write_records(tmp_path / 'in.tfrecord', _bad_records())
  with pytest.raises(
    DataError,
    match=r'in\.tfrecord: record 2: not a '
    r'serialized tf\.Example \(--skip-bad-records',
  ):
    prediction.predict_files(
      model,
      str(tmp_path / 'in.tfrecord'),
      str(tmp_path / 'out.tfrecord'),
      batch_size=4,
    )
  # Nothing half-written is left.
  assert sorted(os.listdir(tmp_path)) == ['in.tfrecord']


def test_bad_records_are_skipped_and_counted(model, tmp_path, caplog):
  write_records(tmp_path / 'in.tfrecord', _bad_records())
  with caplog.at_level(logging.WARNING, logger='tensorfx'):
    summary = prediction.predict_files(
      model,
      str(tmp_path / 'in.tfrecord'),
      str(tmp_path / 'out.tfrecord'),
      batch_size=4,
      skip_bad_records=True,
    )
  assert (summary.records, summary.predicted, summary.skipped) == (30, 27, 3)
  ids = [
    _values(e.features.feature['id'])[0]
    for e in read_examples(tmp_path / 'out.tfrecord')
  ]
  assert ids == [i for i in range(30) if i not in (1, 3, 5)]
  warnings = [
    r.getMessage()
    for r in caplog.records
    if 'Skipping a bad record' in r.getMessage()
  ]
  assert len(warnings) == 3
  assert 'record 2: not a serialized tf.Example' in warnings[0]
  assert 'record 4: ' in warnings[1] and 'sepal_length' in warnings[1]
  assert 'record 6: ' in warnings[2] and 'petal_length' in warnings[2]


def test_an_output_does_not_replace_an_input_feature(model, tmp_path):
  write_records(
    tmp_path / 'in.tfrecord', [example(r, label=b'mine') for r in _rows()]
  )
  with pytest.raises(
    DataError,
    match=r"record 1: the output 'label' would "
    r"replace the input feature 'label'.*--prefix",
  ):
    prediction.predict_files(
      model, str(tmp_path / 'in.tfrecord'), str(tmp_path / 'out.tfrecord')
    )
  prediction.predict_files(
    model,
    str(tmp_path / 'in.tfrecord'),
    str(tmp_path / 'out.tfrecord'),
    prefix='predicted_',
  )
  features = read_examples(tmp_path / 'out.tfrecord')[0].features.feature
  assert _values(features['label']) == [b'mine']
  assert 'predicted_label' in features and 'predicted_scores' in features


@pytest.mark.parametrize(
  'kwargs, message',
  [
    (
      {'input_format': 'xml'},
      'input_format must be one of auto, tfrecord, '
      "csv, json, parquet. Received: input_format='xml'",
    ),
    (
      {'output_format': 'csv'},
      'output_format must be one of auto, tfrecord, '
      "json. Received: output_format='csv'",
    ),
    (
      {'batch_size': 0},
      'batch_size must be a positive integer. Received: batch_size=0',
    ),
  ],
)
def test_bad_arguments(model, tmp_path, kwargs, message):
  with pytest.raises(DataError, match=message):
    prediction.predict_files(model, str(tmp_path / 'x.csv'), '-', **kwargs)
