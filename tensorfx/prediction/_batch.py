"""Batch prediction over files, as Gematria's `--gematria_action=predict`.

Gematria reads its input records, predicts them in batches and writes the
same records back with the predictions added. `predict_files` does that for
TFRecord files of tf.Example, CSV lines and JSON lines: it streams the
input a batch at a time (memory does not grow with the input), keeps the
input order, and writes TFRecord (each input record as a tf.Example with an
added feature per output) or JSON lines (each input record as an object,
the outputs added as keys).
"""

import dataclasses
import io
import json
import re
import sys
import time
from typing import Any, Optional

from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _paths
from tensorfx.data._examples import compression_of
from tensorfx.prediction import _progress

INPUT_FORMATS = ('auto', 'tfrecord', 'csv', 'json')
OUTPUT_FORMATS = ('auto', 'tfrecord', 'json')
_TFRECORD = re.compile(r'\.(tfrecords?|tfr)(\.(gz|gzip|zz|zlib))?$',
                       re.IGNORECASE)
_JSON = re.compile(r'\.(jsonl?|ndjson)$', re.IGNORECASE)
_CSV = re.compile(r'\.csv$', re.IGNORECASE)
# Bad records logged one by one before only counting.
_LOGGED_BAD_RECORDS = 10


@dataclasses.dataclass
class _Record:
  """One input record: its kind, value, place (for messages) and size."""
  kind: str  # 'example' (bytes), 'csv' (str), 'json' (dict) or 'bad'.
  value: Any
  where: str
  size: int = 0
  problem: Optional[str] = None  # Why a 'bad' record is bad.


@dataclasses.dataclass(frozen=True)
class PredictionSummary:
  """What `predict_files` did.

  Attributes:
    records: input records read.
    predicted: records written with their predictions.
    skipped: bad records skipped (`skip_bad_records`).
    seconds: the time it took.
    output: where the predictions went ('-' for stdout).
  """
  records: int
  predicted: int
  skipped: int
  seconds: float
  output: str


def predict_files(model, inputs, output='-', input_format='auto',
                  output_format='auto', batch_size=256, prefix='',
                  skip_bad_records=False, compression='auto',
                  progress=True):
  """Predicts every record of `inputs`; writes them with the predictions.

  Records are read and predicted `batch_size` at a time and written in
  input order: TFRecord files of tf.Example (optionally GZIP or ZLIB), CSV
  lines in schema order (target columns optional) or JSON lines (objects of
  raw features). Each output record is the input record with one feature
  (TFRecord) or key (JSON lines) per output of the model, named
  `prefix + output name`; an output may not replace an input feature of a
  different value (give a prefix).

  Example:
    >>> model = Model.load('/tmp/job/model')
    >>> predict_files(model, 'blocks.tfrecord', 'predicted.tfrecord')
    PredictionSummary(records=1000, predicted=1000, skipped=0, ...)

  Args:
    model: a `tensorfx.prediction.Model` (exported, or of a checkpoint).
    inputs: a path, pattern, comma-separated list or a list of them, local
      or `gs://`; '-' reads stdin (lines).
    output: the output file ('-': stdout, JSON lines).
    input_format: 'tfrecord', 'csv', 'json', or 'auto': by each file's
      name (`.tfrecord[.gz]`, `.csv`, `.json[l]`); other names and stdin
      are lines, each JSON (an object) or CSV.
    output_format: 'tfrecord', 'json', or 'auto': TFRecord for a
      `.tfrecord[.gz]` output, else JSON lines.
    batch_size: records predicted per call.
    prefix: prepended to the name of each output added to a record.
    skip_bad_records: drop (and count, and log the first few of) records
      that do not parse or do not match the model's schema, instead of
      failing on the first.
    compression: of TFRecord inputs and output: None, 'GZIP', 'ZLIB' or
      'auto' (by the file's suffix: .gz is GZIP).
    progress: whether to show progress (a bar on a terminal, log lines
      elsewhere) on stderr.

  Returns:
    A `PredictionSummary`.

  Raises:
    DataError: a bad record (unless `skip_bad_records`), naming the file and
      record or line; an output that would replace an input feature.
  """
  if input_format not in INPUT_FORMATS:
    raise DataError(f'input_format must be one of {", ".join(INPUT_FORMATS)}.'
                    f' Received: input_format={input_format!r}')
  if output_format not in OUTPUT_FORMATS:
    raise DataError('output_format must be one of '
                    f'{", ".join(OUTPUT_FORMATS)}. Received: '
                    f'output_format={output_format!r}')
  if not isinstance(batch_size, int) or batch_size < 1:
    raise DataError('batch_size must be a positive integer. Received: '
                    f'batch_size={batch_size!r}')
  listed = _paths.as_list(inputs)
  if '-' in listed and len(listed) > 1:
    raise DataError('Read stdin (-) or files, not both. Received: '
                    f'inputs={listed}')
  paths = listed if listed == ['-'] else _paths.expand(listed, 'input')
  writing_tfrecord = output_format == 'tfrecord' or (
      output_format == 'auto' and output != '-' and _TFRECORD.search(output))
  start = time.monotonic()
  progress = _progress.RecordProgress(_total_bytes(paths, input_format,
                                                   compression),
                                      enabled=progress)
  writer = _Writer(output, writing_tfrecord, compression)
  converter = _Converter(model.schema, model.features, prefix)
  counts = {'records': 0, 'predicted': 0, 'skipped': 0}
  try:
    for batch in _batches(paths, input_format, compression, batch_size):
      counts['records'] += len(batch)
      for record, outputs in _predict(model, batch):
        if outputs is None:
          _bad(record, skip_bad_records, counts)
          continue
        if writing_tfrecord:
          writer.write(converter.example(record, outputs))
        else:
          writer.write(json.dumps(converter.row(record, outputs)) + '\n')
        counts['predicted'] += 1
      progress.update(len(batch), sum(r.size for r in batch))
  except BaseException:
    writer.abort()
    raise
  finally:
    progress.close()
  writer.close()
  summary = PredictionSummary(seconds=time.monotonic() - start,
                              output=output, **counts)
  logger.info('Predicted %d of %d records in %.1fs%s', summary.predicted,
              summary.records, summary.seconds,
              f' ({summary.skipped} bad records skipped)'
              if summary.skipped else '')
  return summary


def _bad(record, skip, counts):
  message = f'{record.where}: {record.problem}'
  if not skip:
    raise DataError(f'{message} (--skip-bad-records skips and counts such '
                    'records)')
  if counts['skipped'] < _LOGGED_BAD_RECORDS:
    logger.warning('Skipping a bad record: %s', message)
  counts['skipped'] += 1


def _format_of(path, input_format):
  if input_format != 'auto':
    return input_format
  if path == '-':
    return 'lines'
  if _TFRECORD.search(path):
    return 'tfrecord'
  if _JSON.search(path):
    return 'json'
  if _CSV.search(path):
    return 'csv'
  return 'lines'


def _total_bytes(paths, input_format, compression):
  """The bytes of the input, when progress can be measured in them."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  total = 0
  for path in paths:
    if path == '-':
      return None
    if _format_of(path, input_format) == 'tfrecord' and compression_of(
        path, compression):
      return None  # Compressed: records do not add up to the file size.
    try:
      total += tf.io.gfile.stat(path).length
    except tf.errors.OpError:
      return None
  return total


def _batches(paths, input_format, compression, batch_size):
  """Lists of `_Record`s, `batch_size` at most, in input order."""
  for path in paths:
    kind = _format_of(path, input_format)
    if kind == 'tfrecord':
      yield from _tfrecord_batches(path, compression_of(path, compression),
                                   batch_size)
    else:
      yield from _text_batches(path, kind, batch_size)


def _tfrecord_batches(path, compression, batch_size):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  batches = iter(tf.data.TFRecordDataset(path, compression).batch(
      batch_size).prefetch(1))
  number = 0
  while True:
    try:
      records = next(batches)
    except StopIteration:
      return
    except tf.errors.DataLossError as e:
      raise DataError(f'{path}: after record {number}: truncated or corrupt '
                      f'TFRecord file ({e.message.splitlines()[0]})') from None
    batch = []
    for value in records.numpy():
      number += 1
      # On disk: length (8 bytes), its CRC (4), the data, its CRC (4).
      batch.append(_Record('example', value, f'{path}: record {number}',
                           len(value) + 16))
    yield batch


def _text_batches(path, kind, batch_size):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  name = '<stdin>' if path == '-' else path
  stream = sys.stdin.buffer if path == '-' else tf.io.gfile.GFile(path, 'rb')
  try:
    batch = []
    for number, line in enumerate(stream, start=1):
      record = _text_record(line, kind, f'{name}:{number}')
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


def _text_record(line, kind, where):
  """The `_Record` of one line, or None for a blank one."""
  size = len(line)
  try:
    text = line.decode('utf-8').rstrip('\r\n')
  except UnicodeDecodeError as e:
    return _Record('bad', line, where, size, f'not UTF-8 text ({e.reason})')
  if not text.strip():
    return None
  if kind == 'json' or (kind == 'lines' and text.lstrip().startswith('{')):
    try:
      value = json.loads(text)
    except json.JSONDecodeError as e:
      return _Record('bad', text, where, size, f'invalid JSON: {e}')
    if not isinstance(value, dict):
      return _Record('bad', text, where, size, 'expected a JSON object of '
                     f'features. Received: {type(value).__name__}')
    return _Record('json', value, where, size)
  return _Record('csv', text, where, size)


def _predict(model, batch):
  """Yields `(record, outputs)`; outputs None for a bad record.

  Records of one kind in a row go to the model in one call; when a call
  fails, its records are predicted one by one to find the bad ones.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  start = 0
  while start < len(batch):
    kind = batch[start].kind
    end = start
    while end < len(batch) and batch[end].kind == kind:
      end += 1
    run = batch[start:end]
    start = end
    if kind == 'bad':
      yield from ((record, None) for record in run)
      continue
    try:
      outputs = model.predict([r.value for r in run])
    except (DataError, tf.errors.InvalidArgumentError, UnicodeDecodeError):
      outputs = None
    if outputs is not None:
      yield from zip(run, outputs)
      continue
    for record in run:
      try:
        yield record, model.predict([record.value])[0]
      except (DataError, tf.errors.InvalidArgumentError,
              UnicodeDecodeError) as e:
        record.problem = _problem(e, record.kind)
        yield record, None


def _problem(error, kind):
  """What is wrong with one record, from the error predicting it raised."""
  if isinstance(error, UnicodeDecodeError) or (
      kind == 'example' and 'Could not parse example input' in str(error)):
    return 'not a serialized tf.Example'
  text = str(getattr(error, 'message', '') or error).splitlines()[0]
  # The model names the one instance it was given: the record says where.
  text = re.sub(r'^instance[ :]1:\s*', '', text)
  text = re.sub(r'\s*\[Op:[^\]]*\]$', '', text)
  return text


class _Writer:
  """Writes the output records to a file (or stdout), in place at the end.

  A local file is written beside its place and renamed into it when
  complete, so a failed run leaves no half-written output behind.
  """

  def __init__(self, output, tfrecord, compression):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._output = output
    self._local = output != '-' and '://' not in output
    self._target = output + '.partial' if self._local else output
    if tfrecord:
      if output == '-':
        raise DataError('TFRecord output needs a file: give --output '
                        'PATH.tfrecord[.gz].')
      options = tf.io.TFRecordOptions(
          compression_type=compression_of(output, compression))
      self._file = tf.io.TFRecordWriter(self._target, options)
    elif output == '-':
      self._file = sys.stdout
    else:
      self._file = tf.io.gfile.GFile(self._target, 'w')

  def write(self, record):
    self._file.write(record)

  def close(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if self._file is sys.stdout:
      sys.stdout.flush()
      return
    self._file.close()
    if self._local:
      tf.io.gfile.rename(self._target, self._output, overwrite=True)

  def abort(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if self._file is sys.stdout:
      sys.stdout.flush()
      return
    self._file.close()
    if self._local and tf.io.gfile.exists(self._target):
      tf.io.gfile.remove(self._target)


class _Converter:
  """Turns an input record plus its outputs into the output record."""

  def __init__(self, schema, serving, prefix):
    self._schema = schema
    self._serving = list(serving)
    self._prefix = prefix or ''

  def row(self, record, outputs):
    """The JSON object: the record's features, then the outputs."""
    row = self._features(record)
    for name, value in outputs.items():
      key = self._prefix + name
      if key in row and _plain(row[key]) != _plain(value):
        self._clash(record, key)
      row[key] = value
    return row

  def example(self, record, outputs):
    """The serialized tf.Example: the record's features, then the outputs."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if record.kind == 'example':
      example = tf.train.Example.FromString(record.value)
    else:
      example = tf.train.Example()
      for name, value in self._features(record).items():
        feature = _feature(value, self._field_type(name))
        if feature is not None:
          example.features.feature[name].CopyFrom(feature)
    features = example.features.feature
    for name, value in outputs.items():
      key = self._prefix + name
      feature = _feature(value)
      if key in features and features[key] != feature:
        self._clash(record, key)
      features[key].CopyFrom(feature)
    return example.SerializeToString()

  def _clash(self, record, key):
    raise DataError(
        f'{record.where}: the output {key!r} would replace the input '
        f'feature {key!r}, which has another value; give a prefix for the '
        'outputs (--prefix, e.g. predicted_).')

  def _field_type(self, name):
    if self._schema is not None and name in self._schema:
      return self._schema[name].type.value
    return None

  def _features(self, record):
    """The record's features as a dict of plain values."""
    if record.kind == 'json':
      return dict(record.value)
    if record.kind == 'csv':
      return self._csv_row(record.value)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    example = tf.train.Example.FromString(record.value)
    row = {}
    for name, feature in example.features.feature.items():
      kind = feature.WhichOneof('kind')
      values = list(getattr(feature, kind).value) if kind else []
      if kind == 'bytes_list':
        values = [v.decode('utf-8', 'replace') for v in values]
      listed = (self._schema is not None and name in self._schema and
                self._schema[name].multivalent)
      row[name] = values[0] if len(values) == 1 and not listed else values
    return row

  def _csv_row(self, line):
    """A CSV line's cells by field name (typed by the schema)."""
    import csv  # pylint: disable=g-import-not-at-top
    values = next(csv.reader(io.StringIO(line)))
    if self._schema is None:
      return dict(zip(self._serving, values))
    fields = list(self._schema)
    if len(values) != len(fields):
      # The target columns left out, as when serving.
      fields = [self._schema[name] for name in self._serving]
    return {field.name: _typed(value, field)
            for field, value in zip(fields, values)}


def _typed(text, field):
  """A CSV cell as the field's Python value (None when empty)."""
  if text == '':
    return None
  kind = field.type.value
  if field.multivalent:
    parts = text.split()
    return [_number(p, kind) for p in parts]
  return _number(text, kind)


def _number(text, kind):
  try:
    if kind == 'integer':
      return int(text)
    if kind == 'real':
      return float(text)
  except ValueError:
    pass
  return text


def _flat(value):
  if isinstance(value, (list, tuple)):
    for item in value:
      yield from _flat(item)
  else:
    yield value


def _plain(value):
  """A value compared across JSON and model outputs (floats as float32)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  values = list(_flat(value))
  return [float(np.float32(v)) if isinstance(v, float) else v for v in values]


def _feature(value, field_type=None):
  """A tf.train.Feature holding `value` (a scalar or a nested list)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  values = [v for v in _flat(value) if v is not None]
  if value is None or (not values and field_type is None):
    return None if value is None else tf.train.Feature()
  if field_type is None:
    first = values[0]
    if isinstance(first, (bool, int)):
      field_type = 'integer'
    elif isinstance(first, float):
      field_type = 'real'
    else:
      field_type = 'discrete'
  if field_type == 'integer':
    return tf.train.Feature(int64_list=tf.train.Int64List(
        value=[int(v) for v in values]))
  if field_type == 'real':
    return tf.train.Feature(float_list=tf.train.FloatList(
        value=[float(v) for v in values]))
  return tf.train.Feature(bytes_list=tf.train.BytesList(
      value=[v if isinstance(v, bytes) else str(v).encode('utf-8')
             for v in values]))

