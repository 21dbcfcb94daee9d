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
import json
import re
import time

from tensorfx import _logging
from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _paths
from tensorfx.data import _skipping
from tensorfx.prediction import _converter
from tensorfx.prediction import _progress
from tensorfx.prediction import _protorecords
from tensorfx.prediction import _reader
from tensorfx.prediction import _writer

INPUT_FORMATS = ('auto', 'tfrecord', 'csv', 'json', 'parquet')
OUTPUT_FORMATS = ('auto', 'tfrecord', 'json')


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


def predict_files(
  model,
  inputs,
  output='-',
  input_format='auto',
  output_format='auto',
  batch_size=256,
  prefix='',
  skip_bad_records=False,
  compression='auto',
  progress=True,
  protos=None,
  source_name='model',
):
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
    input_format: 'tfrecord', 'csv', 'json', 'parquet' (each row a dict
      instance, null values missing), or 'auto': by each file's
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
    protos: for TFRecord inputs of protocol buffer messages, the
      `tensorfx.data.ProtoDataSource` that reads them: each record is
      decoded as training decodes it; a TFRecord output holds the input
      messages with the outputs written in by the format's `annotate`
      (Gematria: a new inverse throughput), JSON lines the decoded fields.
    source_name: the name `annotate` writes the outputs under.

  Returns:
    A `PredictionSummary`.

  Raises:
    DataError: a bad record (unless `skip_bad_records`), naming the file and
      record or line; an output that would replace an input feature.
  """
  if input_format not in INPUT_FORMATS:
    raise DataError(
      f'input_format must be one of {", ".join(INPUT_FORMATS)}.'
      f' Received: input_format={input_format!r}'
    )
  if output_format not in OUTPUT_FORMATS:
    raise DataError(
      'output_format must be one of '
      f'{", ".join(OUTPUT_FORMATS)}. Received: '
      f'output_format={output_format!r}'
    )
  if not isinstance(batch_size, int) or batch_size < 1:
    raise DataError(
      'batch_size must be a positive integer. Received: '
      f'batch_size={batch_size!r}'
    )
  listed = _paths.as_list(inputs)
  if '-' in listed and len(listed) > 1:
    raise DataError(
      f'Read stdin (-) or files, not both. Received: inputs={listed}'
    )
  paths = listed if listed == ['-'] else _paths.expand(listed, 'input')
  writing_tfrecord = output_format == 'tfrecord' or (
    output_format == 'auto'
    and output != '-'
    and _reader.TFRECORD.search(output)
  )
  start = time.monotonic()
  progress = _progress.RecordProgress(
    _reader.total_bytes(paths, input_format, compression), enabled=progress
  )
  writer = _writer.Writer(output, writing_tfrecord, compression)
  converter = _converter.Converter(model.schema, model.features, prefix)
  counts = {'records': 0, 'predicted': 0, 'skipped': 0}
  try:
    for batch in _reader.batches(paths, input_format, compression, batch_size):
      counts['records'] += len(batch)
      if protos is not None:
        batch = _protorecords.decoded(protos, batch)
      for record, outputs in predict_batch(model, batch):
        if outputs is None:
          _bad(record, skip_bad_records, counts)
          continue
        if protos is not None and writing_tfrecord:
          writer.write(
            _protorecords.annotated(protos, record, outputs, source_name)
          )
        elif writing_tfrecord:
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
  summary = PredictionSummary(
    seconds=time.monotonic() - start, output=output, **counts
  )
  logger.info(
    'Predicted %d of %d records in %.1fs%s',
    summary.predicted,
    summary.records,
    summary.seconds,
    f' ({_logging.counted(summary.skipped, "bad record")} skipped)'
    if summary.skipped
    else '',
  )
  return summary


def _bad(record, skip, counts):
  message = f'{record.where}: {record.problem}'
  if not skip:
    raise DataError(
      f'{message} (--skip-bad-records skips and counts such records)'
    )
  if counts['skipped'] < _skipping.LOGGED_BAD_RECORDS:
    logger.warning('Skipping a bad record: %s', message)
  counts['skipped'] += 1


def predict_batch(model, batch):
  """Yields `(record, outputs)`; outputs None for a bad record.

  Records of one kind in a row go to the model in one call; when a call
  fails, its records are predicted one by one to find the bad ones.
  """
  import tensorflow as tf

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
      except (
        DataError,
        tf.errors.InvalidArgumentError,
        UnicodeDecodeError,
      ) as e:
        record.problem = _problem(e, record.kind)
        yield record, None


def _problem(error, kind):
  """What is wrong with one record, from the error predicting it raised."""
  if isinstance(error, UnicodeDecodeError) or (
    kind == 'example' and 'Could not parse example input' in str(error)
  ):
    return 'not a serialized tf.Example'
  text = str(getattr(error, 'message', '') or error).splitlines()[0]
  # The model names the one instance it was given: the record says where.
  text = re.sub(r'^instance[ :]1:\s*', '', text)
  text = re.sub(r'\s*\[Op:[^\]]*\]$', '', text)
  return text
