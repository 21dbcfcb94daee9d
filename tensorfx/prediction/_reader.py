"""The input of batch prediction: files read a batch of records at a time.

TFRecord files of tf.Example (optionally GZIP or ZLIB), CSV lines, JSON
lines and Parquet files (each row an instance by column name, a null a
missing value), each format told by the file's name unless given; stdin is
lines.
Records are read in input order, each with its place (for messages) and
its size on disk (for progress).
"""

import dataclasses
import json
import re
import sys
from typing import Any, Optional

from tensorfx._errors import DataError
from tensorfx.data import _examplescan
from tensorfx.data._examples import compression_of

# Also tells a TFRecord output (output_format='auto').
TFRECORD = re.compile(
  r'\.(tfrecords?|tfr)(\.(gz|gzip|zz|zlib))?$', re.IGNORECASE
)
_JSON = re.compile(r'\.(jsonl?|ndjson)$', re.IGNORECASE)
_CSV = re.compile(r'\.csv$', re.IGNORECASE)
_PARQUET = re.compile(r'\.(parquet|pq)$', re.IGNORECASE)


@dataclasses.dataclass
class Record:
  """One input record: its kind, value, place (for messages) and size."""

  kind: str  # 'example' (bytes), 'csv' (str), 'json' (dict) or 'bad'.
  value: Any
  where: str
  size: int = 0
  problem: Optional[str] = None  # Why a 'bad' record is bad.
  original: Any = None  # A protocol buffer record, before decoding.


def format_of(path, input_format):
  """The input format of `path`: `input_format`, or guessed from the name."""
  if input_format != 'auto':
    return input_format
  if path == '-':
    return 'lines'
  if TFRECORD.search(path):
    return 'tfrecord'
  if _JSON.search(path):
    return 'json'
  if _CSV.search(path):
    return 'csv'
  if _PARQUET.search(path):
    return 'parquet'
  return 'lines'


def total_bytes(paths, input_format, compression):
  """The bytes of the input, when progress can be measured in them."""
  import tensorflow as tf

  total = 0
  for path in paths:
    if path == '-':
      return None
    if format_of(path, input_format) == 'tfrecord' and compression_of(
      path, compression
    ):
      return None  # Compressed: records do not add up to the file size.
    try:
      total += tf.io.gfile.stat(path).length
    except tf.errors.OpError:
      return None
  return total


def batches(paths, input_format, compression, batch_size):
  """Lists of `Record`s, `batch_size` at most, in input order."""
  for path in paths:
    kind = format_of(path, input_format)
    if kind == 'tfrecord':
      yield from _tfrecord_batches(
        path, compression_of(path, compression), batch_size
      )
    elif kind == 'parquet':
      yield from _parquet_batches(path, batch_size)
    else:
      yield from _text_batches(path, kind, batch_size)


def _tfrecord_batches(path, compression, batch_size):
  number = 0
  for records in _examplescan.record_batches(
    path, compression, batch_size, prefetch=1
  ):
    batch = []
    for value in records.numpy():
      number += 1
      # On disk: length (8 bytes), its CRC (4), the data, its CRC (4).
      batch.append(
        Record('example', value, f'{path}: record {number}', len(value) + 16)
      )
    yield batch


def _parquet_batches(path, batch_size):
  """Each row of a Parquet file as a dict instance (null: a missing value)."""
  import pyarrow as pa
  import pyarrow.parquet as pq
  import tensorflow as tf

  with tf.io.gfile.GFile(path, 'rb') as f:
    data = f.read()
  try:
    reader = pq.ParquetFile(pa.BufferReader(data))
  except (OSError, pa.ArrowException) as e:
    raise DataError(f'{path}: not a Parquet file: {e}') from None
  # Progress counts bytes: each row its share of the file.
  size = len(data) // max(reader.metadata.num_rows, 1)
  number = 0
  for batch in reader.iter_batches(batch_size=batch_size):
    records = []
    for row in batch.to_pylist():
      number += 1
      records.append(Record('json', row, f'{path}: row {number}', size))
    yield records


def _text_batches(path, kind, batch_size):
  import tensorflow as tf

  name = '<stdin>' if path == '-' else path
  stream = sys.stdin.buffer if path == '-' else tf.io.gfile.GFile(path, 'rb')
  try:
    batch = []
    for number, line in enumerate(stream, start=1):
      record = text_record(line, kind, f'{name}:{number}')
      if record is None:
        continue
      batch.append(record)
      if len(batch) == batch_size:
        yield batch
        batch = []
    if batch:
      yield batch
  finally:
    if path != '-':
      stream.close()


def text_record(line, kind, where):
  """The `Record` of one line, or None for a blank one."""
  size = len(line)
  try:
    text = line.decode('utf-8').rstrip('\r\n')
  except UnicodeDecodeError as e:
    return Record('bad', line, where, size, f'not UTF-8 text ({e.reason})')
  if not text.strip():
    return None
  if kind == 'json' or (kind == 'lines' and text.lstrip().startswith('{')):
    try:
      value = json.loads(text)
    except json.JSONDecodeError as e:
      return Record('bad', text, where, size, f'invalid JSON: {e}')
    if not isinstance(value, dict):
      return Record(
        'bad',
        text,
        where,
        size,
        f'expected a JSON object of features. Received: {type(value).__name__}',
      )
    return Record('json', value, where, size)
  return Record('csv', text, where, size)
