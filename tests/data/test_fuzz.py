"""Fuzzing the data layer with damaged inputs.

A seeded generator damages real files the way users' files get damaged:
random byte edits in CSV rows, truncated and bit-flipped TFRecord files
(plain and GZIP), random deletions in schema and feature YAML, feature
sets naming fields the schema lacks. Every case must end in one of:

- the data read as the rules say (CSV: both readers, TensorFlow's and the
  Python one Beam uses, agree value for value, and each value read is
  what the cell's text says);
- a `DataError` naming the file (and the line, record or key);
- a documented skip (`skip_bad_records`: the rows dropped are exactly the
  bad ones, and counted).

Never another exception (a raw TensorFlow error, a KeyError, ...), and
never a hang (each test has a timeout). TENSORFX_FUZZ_CASES and
TENSORFX_FUZZ_SEED change how many cases run and which.
"""

import collections
import csv
import gzip
import math
import os
import pathlib
import random
import re
import zlib

import pytest
import tensorflow as tf

import fuzzing
from tensorfx import DataError
from tensorfx.data import CsvDataSource
from tensorfx.data import DataSet
from tensorfx.data import ExamplesDataSource
from tensorfx.data import Schema
from tensorfx.data._csv import read_rows
from tensorfx.data._validation import data_errors

ROOT = os.path.dirname(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
SAMPLES = os.path.join(ROOT, 'samples')
CASES = int(os.environ.get('TENSORFX_FUZZ_CASES', '30'))
SEED = int(os.environ.get('TENSORFX_FUZZ_SEED', '19'))
IRIS_SCHEMA = Schema.load(os.path.join(SAMPLES, 'iris', 'schema.yaml'))
# Bytes that break CSV rows and YAML in interesting ways, and plain ones.
_BYTES = b',"\n\r\x00\xff\xc3\t .-+eE9Z\\:'


def _damage(rng, content):
  """`content` (bytes) with 1-3 random edits."""
  data = bytearray(content)
  for _ in range(rng.randint(1, 3)):
    at = rng.randrange(len(data) + 1)
    kind = rng.choice(('replace', 'insert', 'delete', 'duplicate'))
    byte = _BYTES[rng.randrange(len(_BYTES))]
    if kind == 'replace' and at < len(data):
      data[at] = byte
    elif kind == 'insert':
      data.insert(at, byte)
    elif kind == 'delete' and at < len(data):
      del data[at : at + rng.randint(1, 4)]
    else:
      data[at:at] = data[at : at + rng.randint(1, 8)]
  return bytes(data)


def _cases(name):
  """A seeded generator per test: the same cases each run."""
  return random.Random(f'{SEED}-{name}')


# CSV rows with random byte edits.


def _tf_rows(path, skip=False):
  """The rows TensorFlow's reader gives, or the DataError it raises."""
  source = CsvDataSource(path, IRIS_SCHEMA, skip_bad_records=skip)
  rows = []
  try:
    with data_errors():
      for batch in source.read(8):
        columns = {k: v.numpy().tolist() for k, v in batch.items()}
        for i in range(len(columns['species'])):
          rows.append(
            {
              k: (
                v[i].decode('utf-8', 'replace')
                if isinstance(v[i], bytes)
                else v[i]
              )
              for k, v in columns.items()
            }
          )
  except DataError as e:
    return e, source.bad_records
  return rows, source.bad_records


def _python_rows(path, skip=False):
  """The rows the Python (Beam) reader gives, or the DataError it raises."""
  skipped = []
  try:
    rows = list(
      read_rows(
        path, IRIS_SCHEMA, skip_bad_records=skip, on_bad_record=skipped.append
      )
    )
  except DataError as e:
    return e, skipped
  return rows, skipped


def _same_rows(a, b):
  if len(a) != len(b):
    return False
  for x, y in zip(a, b):
    if x['species'] != y['species']:
      return False
    for name in x:
      if name != 'species' and not math.isclose(
        x[name], y[name], rel_tol=1e-6, abs_tol=1e-30
      ):
        return False
  return True


def _as_written(path):
  r"""The rows as an independent reading of the text says they are.

  Each non-empty line (cut at \n) split at the commas (by Python's csv
  module where there are quotes), five cells, numbers by float().
  """
  rows = []
  with open(path, encoding='utf-8', newline='') as f:
    for line in f.read().split('\n'):
      line = line[:-1] if line.endswith('\r') else line
      if not line:
        continue
      # A carriage return inside a line is dropped (tf.io.decode_csv's
      # rule, which the Python reader follows).
      line = line.replace('\r', '')
      cells = (
        next(csv.reader([line], strict=True))
        if '"' in line
        else line.split(',')
      )
      assert len(cells) == 5, line
      rows.append(
        {
          'species': cells[0],
          **{
            field.name: float(cell)
            for field, cell in zip(list(IRIS_SCHEMA)[1:], cells[1:])
          },
        }
      )
  return rows


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_csv_rows_with_random_byte_edits(tmp_path):
  rng = _cases('csv')
  original = pathlib.Path(
    os.path.join(SAMPLES, 'iris', 'data', 'eval.csv')
  ).read_bytes()
  outcomes = collections.Counter()
  for case in range(CASES):
    path = str(tmp_path / f'case{case}.csv')
    damaged = _damage(rng, original)
    with open(path, 'wb') as f:
      f.write(damaged)
    context = f'case {case}: {damaged!r}'
    python, skipped = _python_rows(path)
    tensorflow, _ = _tf_rows(path)
    if isinstance(python, DataError):
      # Named: the file and the line of the first bad row.
      assert re.match(rf'{re.escape(path)}:\d+: \S', str(python)), context
      if 'not UTF-8 text' in str(python) and not isinstance(
        tensorflow, DataError
      ):
        # Documented: the training reader reads the bytes of a discrete
        # cell as they are (checking costs it a third of its speed); the
        # analysis rejects the line.
        outcomes['not utf-8'] += 1
      else:
        assert isinstance(tensorflow, DataError), context
        assert str(tensorflow) == str(python), context
      outcomes['error'] += 1
      # The documented skip: exactly the bad rows go, and are counted.
      python_kept, skipped = _python_rows(path, skip=True)
      tf_kept, counted = _tf_rows(path, skip=True)
      assert not isinstance(python_kept, DataError), context
      assert not isinstance(tf_kept, DataError), (context, tf_kept)
      assert skipped and all(
        re.match(rf'{re.escape(path)}:\d+: ', s) for s in skipped
      ), context
      assert _same_rows(tf_kept, python_kept), context
      assert counted == len(skipped), context
    else:
      # Accepted: what both readers read is what the text says.
      assert not isinstance(tensorflow, DataError), (context, tensorflow)
      assert _same_rows(tensorflow, python), context
      assert _same_rows(python, _as_written(path)), context
      outcomes['read'] += 1
  # The generator makes both kinds of case.
  assert outcomes['error'] and outcomes['read'], outcomes


# TFRecord files truncated or bit-flipped.


def _write_records(path, compression):
  rows = list(
    read_rows(os.path.join(SAMPLES, 'iris', 'data', 'eval.csv'), IRIS_SCHEMA)
  )
  options = tf.io.TFRecordOptions(compression_type=compression)
  with tf.io.TFRecordWriter(path, options) as writer:
    for row in rows:
      feature = {
        'species': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[row['species'].encode()])
        )
      }
      for name, value in row.items():
        if name != 'species':
          feature[name] = tf.train.Feature(
            float_list=tf.train.FloatList(value=[value])
          )
      writer.write(
        tf.train.Example(
          features=tf.train.Features(feature=feature)
        ).SerializeToString()
      )
  return len(rows)


def _read_examples(path):
  source = ExamplesDataSource(path, IRIS_SCHEMA)
  count = 0
  with data_errors():
    for batch in source.read(8):
      count += int(tf.shape(batch['species'])[0])
  return count


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize('compression', ['', 'GZIP'])
def test_truncated_and_bit_flipped_tfrecords(tmp_path, compression):
  rng = _cases(f'tfrecord{compression}')
  suffix = '.tfrecord.gz' if compression else '.tfrecord'
  clean = str(tmp_path / f'clean{suffix}')
  _write_records(clean, compression)
  original = pathlib.Path(clean).read_bytes()
  plain = gzip.decompress(original) if compression else original
  outcomes = collections.Counter()
  for case in range(CASES):
    data = bytearray(original)
    if rng.random() < 0.5:
      cut = rng.randrange(1, len(data))
      data = data[:cut]
      what = f'truncated at {cut} of {len(original)}'
    else:
      at = rng.randrange(len(data))
      data[at] ^= 1 << rng.randrange(8)
      what = f'bit flipped at {at}'
    path = str(tmp_path / f'case{case}{suffix}')
    with open(path, 'wb') as f:
      f.write(bytes(data))
    try:
      count = _read_examples(path)
    except DataError as e:
      assert str(e).startswith(f'{path}:') or f'{path}' in str(e), (what, e)
      outcomes['error'] += 1
      continue
    # Read without an error: documented, TensorFlow's reader cannot tell
    # a file cut between two records, or inside the 12-byte header of the
    # next, from a shorter file.
    # With GZIP, what matters is where the data that still inflates ends.
    outcomes['read'] += 1
    if compression:
      inflated = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(bytes(data))
      assert count == _records_before(plain, len(inflated)), what
    else:
      assert count == _records_before(plain, len(data)), what
  assert outcomes['error'] >= CASES // 3, outcomes


def _records_before(plain, offset):
  """The records of a TFRecord file cut at `offset`, or None.

  The records if it is cut between two records or in a record's header;
  else None.
  """
  at = count = 0
  while True:
    if offset - at < 12:
      return count
    length = int.from_bytes(plain[at : at + 8], 'little')
    at += 8 + 4 + length + 4
    if at > offset:
      return None
    count += 1


# Schema and feature YAML with random deletions.


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize('sample', ['iris', 'census'])
def test_schema_and_features_yaml_with_random_deletions(tmp_path, sample):
  rng = _cases(f'yaml-{sample}')
  schema_text = pathlib.Path(
    os.path.join(SAMPLES, sample, 'schema.yaml')
  ).read_text()
  features_text = pathlib.Path(
    os.path.join(SAMPLES, sample, 'features.yaml')
  ).read_text()
  outcomes = collections.Counter()
  for case in range(CASES * 2):
    damaged_schema = rng.random() < 0.5
    schema_path = tmp_path / f'schema{case}.yaml'
    features_path = tmp_path / f'features{case}.yaml'
    schema_path.write_text(
      fuzzing.delete(rng, schema_text) if damaged_schema else schema_text
    )
    features_path.write_text(
      features_text if damaged_schema else fuzzing.delete(rng, features_text)
    )
    damaged = schema_path if damaged_schema else features_path
    try:
      DataSet(str(schema_path), features=str(features_path))
    except DataError as e:
      # Named: the damaged file (with its line), or the feature that now
      # names a field the damaged schema lacks.
      message = str(e)
      assert '\n' not in message.strip(), message
      assert str(damaged) in message or (
        damaged_schema and str(features_path) in message
      ), (case, message)
      outcomes['error'] += 1
    else:
      outcomes['valid'] += 1
  assert outcomes['error'] > CASES // 2, outcomes


def test_features_naming_missing_fields(tmp_path):
  rng = _cases('missing-fields')
  schema = os.path.join(SAMPLES, 'census', 'schema.yaml')
  text = pathlib.Path(
    os.path.join(SAMPLES, 'census', 'features.yaml')
  ).read_text()
  names = sorted(set(re.findall(r'fields: (\w+)', text)))
  for case in range(CASES):
    gone = rng.choice(names)
    typo = gone[:-1] if rng.random() < 0.5 else gone + 'x'
    path = tmp_path / f'features{case}.yaml'
    path.write_text(text.replace(f'fields: {gone}', f'fields: {typo}', 1))
    with pytest.raises(DataError) as raised:
      DataSet(schema, features=str(path))
    message = str(raised.value)
    assert message.startswith(f'{path}:'), message
    assert repr(typo) in message or typo in message, message
    # A near miss is named, to fix the typo.
    assert gone in message, message
