"""RecordBatches for the analysis: built from decoded columns, coded for Beam."""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf

from tensorfx.data import Schema
from tensorfx.data import _arrow
from tensorfx.data import _arrowcoder

SCHEMA = Schema.parse(
  """
fields:
- name: word
  type: discrete
- name: pair
  type: discrete
  length: 2
- name: tags
  type: discrete
  length: 0
- name: x
  type: real
- name: n
  type: integer
  length: 0
"""
)
# Empty, non-ASCII and multi-byte values among plain ones.
WORDS = [b'Private', b'', 'Zürich'.encode(), b'?', b'a,b']
PAIRS = [
  [b'a', b'b'],
  [b'', 'é'.encode()],
  [b'c', b'd'],
  [b'e', b'f'],
  [b'g', b''],
]
TAGS = [[b'x'], [], ['ß'.encode(), b'y', b''], [], [b'z']]
NUMBERS = [[1], [], [2, 3], [4], []]
REALS = [1.5, -2.0, 0.0, 3.25, 1e-3]


def _sparse(rows, dtype):
  return tf.ragged.constant(rows, dtype=dtype, inner_shape=()).to_sparse()


def _expected():
  return {
    'word': [[w] for w in WORDS],
    'pair': PAIRS,
    'tags': TAGS,
    'x': [[v] for v in REALS],
    'n': NUMBERS,
  }


def _columns(as_tensors):
  columns = {
    'word': WORDS,
    'pair': PAIRS,
    'x': np.array(REALS, np.float32),
  }
  if not as_tensors:
    return dict(columns, tags=TAGS, n=NUMBERS)
  return {
    'word': tf.constant(columns['word']),
    'pair': tf.constant(columns['pair']),
    'x': tf.constant(columns['x']),
    'tags': _sparse(TAGS, tf.string),
    'n': _sparse(NUMBERS, tf.int64),
  }


@pytest.mark.parametrize('as_tensors', [True, False], ids=['tensors', 'python'])
def test_a_record_batch_holds_every_value_of_every_row(as_tensors):
  batch = _arrow.record_batch(_columns(as_tensors), SCHEMA)

  assert batch.schema == _arrow.arrow_schema(SCHEMA)
  got = batch.to_pydict()
  expected = _expected()
  assert [v for (v,) in got.pop('x')] == pytest.approx(
    [v for (v,) in expected.pop('x')]
  )
  assert got == expected


def test_string_tensors_and_their_numpy_values_make_the_same_batch():
  tensors = _columns(True)
  arrays = {name: tensors[name].numpy() for name in ('word', 'pair', 'x')} | {
    'tags': TAGS,
    'n': NUMBERS,
  }

  assert _arrow.record_batch(tensors, SCHEMA).equals(
    _arrow.record_batch(arrays, SCHEMA)
  )


def test_an_empty_string_tensor_makes_an_empty_column():
  schema = Schema.parse('fields:\n- name: w\n  type: discrete\n')
  batch = _arrow.record_batch({'w': tf.constant([], tf.string)}, schema)

  assert batch.num_rows == 0
  assert batch.column(0).type == pa.large_list(pa.large_binary())


def test_the_coder_round_trips_a_batch_and_sizes_it_without_encoding(
  monkeypatch,
):
  coder = _arrowcoder.RecordBatchCoder()
  batch = _arrow.record_batch(_columns(True), SCHEMA)

  assert coder.decode(coder.encode(batch)).equals(batch)
  encoded = []
  monkeypatch.setattr(coder, 'encode', encoded.append)
  size = coder.get_impl().estimate_size(batch)
  assert size == batch.nbytes > 0
  assert not encoded


def test_declared_batches_cross_a_shuffle_unchanged():
  from apache_beam.testing import util

  batch = _arrow.record_batch(_columns(True), SCHEMA)
  expected = batch.to_pydict()

  def check(rows):
    assert rows == [expected, expected]

  with beam.Pipeline() as pipeline:
    pcoll = _arrowcoder.declare(pipeline | beam.Create([batch, batch]))
    assert pcoll.element_type is pa.RecordBatch
    # A shuffle makes the runner encode and decode them with the coder.
    rows = pcoll | beam.Reshuffle() | beam.Map(lambda b: b.to_pydict())
    util.assert_that(rows, check)

  assert isinstance(
    beam.coders.registry.get_coder(pa.RecordBatch),
    _arrowcoder.RecordBatchCoder,
  )
