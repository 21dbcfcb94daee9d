"""Reading forever: every batch full, with a static batch dimension.

An endless stream has no last, partial batch, so the readers of one
record per row batch it with a static size: the training step traced on
it then needs no shape arithmetic per step (fewer operations, fewer
tensors sent to parameter servers). A finite read keeps its last, smaller
batch. CSV batches stay dynamic: blank lines are dropped after batching.
"""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from tensorfx.data import CsvDataSet
from tensorfx.data import DataFrameDataSet
from tensorfx.data import ExamplesDataSet
from tensorfx.data import ParquetDataSet
from tensorfx.data import Schema
from tensorfx.data._filters import filter_records
from tensorfx.data._filters import parse_filters

SCHEMA = Schema.parse("""\
fields:
- {name: name, type: discrete}
- {name: n, type: integer}
""")
NAMES = [f'r{i}' for i in range(10)]


def _csv(tmp_path):
  path = tmp_path / 'a.csv'
  path.write_text(''.join(f'{name},{i}\n' for i, name in enumerate(NAMES)))
  return CsvDataSet(SCHEMA, train=str(path))


def _tfrecord(tmp_path):
  path = str(tmp_path / 'a.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for i, name in enumerate(NAMES):
      features = {
        'name': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[name.encode()])
        ),
        'n': tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
      }
      example = tf.train.Example(features=tf.train.Features(feature=features))
      writer.write(example.SerializeToString())
  return ExamplesDataSet(SCHEMA, train=path)


def _dataframe(tmp_path):
  del tmp_path
  frame = pd.DataFrame({'name': NAMES, 'n': range(len(NAMES))})
  return DataFrameDataSet(SCHEMA, train=frame)


def _parquet(tmp_path):
  path = str(tmp_path / 'a.parquet')
  pq.write_table(pa.table({'name': NAMES, 'n': list(range(len(NAMES)))}), path)
  return ParquetDataSet(SCHEMA, train=path)


READERS = [_tfrecord, _dataframe, _parquet]


def _names(batches):
  return [[v.decode() for v in b['name'].numpy().tolist()] for b in batches]


@pytest.mark.parametrize('reader', READERS, ids=lambda r: r.__name__[1:])
def test_forever_every_batch_is_full_and_static(tmp_path, reader):
  source = reader(tmp_path)['train']

  forever = source.read(batch_size=4, epochs=None)

  assert forever.element_spec['name'].shape == [4]
  assert forever.element_spec['n'].shape == [4]
  # The third batch runs over into the second pass: nothing is dropped.
  assert _names(forever.take(3)) == [
    NAMES[0:4],
    NAMES[4:8],
    NAMES[8:10] + NAMES[0:2],
  ]


@pytest.mark.parametrize('reader', READERS, ids=lambda r: r.__name__[1:])
def test_a_finite_read_keeps_its_last_smaller_batch(tmp_path, reader):
  source = reader(tmp_path)['train']

  once = source.read(batch_size=4, epochs=1)

  assert once.element_spec['name'].shape.as_list() == [None]
  assert _names(once) == [NAMES[0:4], NAMES[4:8], NAMES[8:10]]


def test_csv_forever_reads_every_row_in_batches_of_at_most_the_size(tmp_path):
  (tmp_path / 'a.csv').write_text('r0,0\n\nr1,1\nr2,2\n')
  source = CsvDataSet(SCHEMA, train=str(tmp_path / 'a.csv'))['train']

  batches = _names(source.read(batch_size=2, epochs=None).take(4))

  assert [n for b in batches for n in b] == ['r0', 'r1', 'r2'] * 2
  assert all(len(b) <= 2 for b in batches)


def test_a_filter_keeps_full_static_batches_forever(tmp_path):
  source = _csv(tmp_path)['train']
  filters = parse_filters(['name=r[0-4]'], SCHEMA)

  forever = filter_records(
    source.read(batch_size=4, epochs=None), filters, 3, forever=True
  )
  once = filter_records(source.read(batch_size=4, epochs=1), filters, 3)

  assert forever.element_spec['name'].shape == [3]
  assert _names(forever.take(2)) == [NAMES[0:3], NAMES[3:5] + NAMES[0:1]]
  assert once.element_spec['name'].shape.as_list() == [None]
  assert _names(once) == [NAMES[0:3], NAMES[3:5]]
