"""Bad tf.Example records: what is wrong with one, and which one failed a read.

`diagnose` answers `ExamplesDataSource.diagnose`: it scans a source's files
for the record that fails the way a `read()` pipeline failed (a truncated or
corrupt file, a record that is not a tf.Example or does not match the
schema) and names the file, the record and the feature. `records_problem`
says what is wrong with a batch of records, for the readers that skip bad
ones.
"""

import os
import re

from tensorfx._errors import DataError
from tensorfx.data import _missing
from tensorfx.data import _validation

_SCAN_BATCH = 1024
# DataLossErrors that reading a TFRecord file raises (others, e.g. from a
# checkpoint, are not this source's business).
RECORD_LOSS = re.compile(
  r'(truncated|corrupted) record at (\d+)|inflate|'
  r'deflate|zlib|gzip|Read less bytes',
  re.IGNORECASE,
)
_TF_NOISE = re.compile(
  r'\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\].*$|'
  r'\s*\[\[\{\{node [^}]*\}\}\]\]',
  re.DOTALL,
)
_NOT_AN_EXAMPLE = 'Could not parse example input'
_MISSING_FEATURE = re.compile(r"missing required feature '(\w+)'")


def clean(error):
  """TensorFlow's message of an error, without graph and op decorations."""
  text = str(getattr(error, 'message', '') or error)
  return _TF_NOISE.sub('', text).strip()


def diagnose(source, error):
  """The message naming the record behind a failed `read()` of `source`.

  What `ExamplesDataSource.diagnose` returns: None when the error is not
  about the source's files.
  """
  import tensorflow as tf

  if isinstance(error, tf.errors.DataLossError):
    match = RECORD_LOSS.search(clean(error))
    if not match:
      return None
    offset = int(match.group(2)) if match.group(2) else None
    parse = False
  elif isinstance(error, tf.errors.InvalidArgumentError):
    if _validation.example_error(
      error
    ) is None and _NOT_AN_EXAMPLE not in clean(error):
      return None
    offset, parse = None, True
  elif isinstance(error, UnicodeDecodeError) and _from_tensorflow(error):
    # TensorFlow could not report a binary record that failed to parse.
    offset, parse = None, True
  else:
    return None
  for path, compression in zip(source.files(), source.compressions()):
    if (
      offset is not None
      and not compression
      and tf.io.gfile.stat(path).length <= offset
    ):
      continue  # That record offset is past the end of this file.
    found = scan(path, compression, source.schema, parse)
    if found and _same_failure(error, found[1]):
      return found[0]
  return None


def records_problem(records, spec):
  """What is wrong with a batch of records (from Python), or None."""
  import tensorflow as tf

  try:
    tf.io.parse_example(records, spec)
    return None
  except tf.errors.InvalidArgumentError as e:
    return _validation.example_error(e) or 'not a serialized tf.Example'
  except UnicodeDecodeError:
    return 'not a serialized tf.Example'


# Where a record is, in ParseExample's messages: differs between the
# pipeline (unnamed, index in its batch) and the scan (named, other batches).
_RECORD_NAME = re.compile(r'Name: [^,]*, |Index: \d+\.')


def _from_tensorflow(error):
  """Whether an exception was raised while TensorFlow reported an error."""
  traceback = error.__traceback__
  while traceback is not None and traceback.tb_next is not None:
    traceback = traceback.tb_next
  return (
    traceback is not None
    and f'{os.sep}tensorflow{os.sep}' in traceback.tb_frame.f_code.co_filename
  )


def _same_failure(error, found):
  """Whether `error` is the failure that scanning found (`found`)."""
  if isinstance(error, UnicodeDecodeError):
    # The record's bytes are in the message TensorFlow could not decode.
    return isinstance(found, bytes) and found[:64] in bytes(error.object)
  if not isinstance(found, str):
    return False
  return _RECORD_NAME.sub('', found) in _RECORD_NAME.sub('', clean(error))


def scan(path, compression, schema, parse):
  """The first bad record of one file, or None.

  Returns:
    `(message, failure)`: the message of the `DataError`, and what failed:
    TensorFlow's message, or the record when it is not a tf.Example.
  """
  from tensorfx.data import _transforms

  spec = _transforms.parsing_spec(schema)
  count = 0
  try:
    for records in record_batches(path, compression, _SCAN_BATCH):
      if parse:
        found = _parse_problem(path, records, count, spec)
        if found:
          return with_hint(found[0], schema), found[1]
      count += int(records.shape[0])
  except DataLoss as e:
    return str(e), e.failure
  return None


class DataLoss(DataError):
  """A TFRecord file is truncated or corrupt; names the record.

  Attributes:
    failure: TensorFlow's message.
  """

  def __init__(self, message, failure):
    super().__init__(message)
    self.failure = failure


def record_batches(path, compression, batch_size, prefetch=0):
  """The records of a TFRecord file, in `[batch_size]` string tensors.

  The one loop over a file's records of the analysis, the scans and batch
  prediction: a damaged file is an error naming the record.

  Example:
    >>> for records in record_batches('data/train.tfrecord.gz', 'GZIP', 64):
    ...   pass

  Raises:
    DataLoss: the file is truncated or corrupt (a `DataError` naming the
      file and the record reading stopped at).
  """
  import tensorflow as tf

  dataset = tf.data.TFRecordDataset(path, compression).batch(batch_size)
  batches = iter(dataset.prefetch(prefetch) if prefetch else dataset)
  count = 0
  while True:
    try:
      records = next(batches)
    except StopIteration:
      return
    except tf.errors.DataLossError as e:
      raise DataLoss(*data_loss(path, compression, count, e)) from None
    count += int(records.shape[0])
    yield records


def data_loss(path, compression, count, error):
  """Names the record a DataLossError stopped at (after `count` good ones).

  Returns:
    `(message, TensorFlow's message)`.
  """
  import tensorflow as tf

  number = count + 1
  try:
    for _ in tf.data.TFRecordDataset(path, compression).skip(count):
      number += 1
  except tf.errors.DataLossError as e:
    error = e
  text = clean(error)
  return (
    f'{path}: record {number}: truncated or corrupt TFRecord file ({text})',
    text,
  )


def _parse_problem(path, records, count, spec):
  """The first record of a batch that does not parse, as `scan` returns."""
  import tensorflow as tf

  names = tf.strings.as_string(
    tf.range(count + 1, count + 1 + tf.shape(records, tf.int64)[0])
  )
  try:
    tf.io.parse_example(records, spec, example_names=names)
    return None
  except tf.errors.InvalidArgumentError as e:
    message = _validation.example_error(
      e, name=lambda name: f'{path}: record {name}'
    )
    if message:
      return message, clean(e)
  except UnicodeDecodeError:
    pass
  # Not a tf.Example at all: find which record, one at a time.
  for index, record in enumerate(records.numpy(), start=count + 1):
    try:
      tf.io.parse_example([record], spec)
    except tf.errors.InvalidArgumentError as e:
      return (f'{path}: record {index}: not a serialized tf.Example', clean(e))
    except UnicodeDecodeError:
      return f'{path}: record {index}: not a serialized tf.Example', record
  return None


def with_hint(message, schema):
  """A record's message, with how to fix a missing required feature."""
  match = _MISSING_FEATURE.search(message)
  if match and match.group(1) in schema:
    return f'{message}; {_missing.hint(schema[match.group(1)])}'
  return message
