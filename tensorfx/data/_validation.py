"""Record validation inside input pipelines, with errors naming file and line.

A bad record is found by vectorized checks on a whole batch; the pipeline
then fails with an assertion whose message carries a marker. Code that runs
the pipeline wraps it in `data_errors()`, which turns that failure into a
`DataError` with just the readable message, instead of a TensorFlow trace.
The message travels base64-encoded: the assertion escapes the quotes and
backslashes of the strings it prints.

Fast readers do not carry each record's file and line through the pipeline
(zipping them in costs 4-5x the throughput). Their failures carry the reason
and the record only (`assert_valid_records`), or are TensorFlow's own errors
(a truncated TFRecord file, a tf.Example missing a feature). The sources
that built such pipelines are `watch`ed; `data_errors()` asks them to find
the record in their files (`diagnose`), so the error still names the file
and line. That search runs only once the pipeline has failed.
"""

import base64
import binascii
import contextlib
import re
import threading
from typing import Any

from tensorfx._errors import DataError

_BEGIN = '<<tensorfx.DataError>>'
_RECORD = '<<tensorfx.record>>'
_END = '<<end>>'
_B64 = '[A-Za-z0-9_-]*'
_MESSAGE = re.compile(re.escape(_BEGIN) + f'({_B64})' + re.escape(_END))
_UNLOCATED = re.compile(
  re.escape(_RECORD)
  + f'({_B64})'
  + re.escape(_BEGIN)
  + f'({_B64})'
  + re.escape(_END)
)
# Sources whose pipelines may fail with unlocated errors, oldest first.
_WATCHED: list[Any] = []
_WATCHED_LIMIT = 32
_LOCK = threading.Lock()


def assert_valid(reasons, files, lines):
  """Fails the pipeline at the first record with a non-empty reason.

  Args:
    reasons: [B] strings, empty for good records.
    files: [B] strings, the file each record came from.
    lines: [B] int64, the 1-based line (or record) number in its file.

  Returns:
    An op to depend on.
  """
  import tensorflow as tf

  bad = tf.strings.length(reasons) > 0
  first = _first(bad)
  message = tf.strings.join(
    [
      _BEGIN,
      tf.io.encode_base64(
        tf.strings.join(
          [
            _at(files, first, ''),
            ':',
            tf.strings.as_string(_at(lines, first, 0)),
            ': ',
            _at(reasons, first, ''),
          ]
        )
      ),
      _END,
    ]
  )
  return tf.debugging.Assert(
    tf.logical_not(tf.reduce_any(bad)), [message], summarize=1
  )


def assert_valid_records(reasons, records):
  """Like `assert_valid`, for records whose file and line are not known.

  The failure carries the reason and the record itself; `data_errors()`
  asks the watched sources where that record is.

  Args:
    reasons: [B] strings, empty for good records.
    records: [B] strings, the records (e.g. CSV lines).

  Returns:
    An op to depend on.
  """
  import tensorflow as tf

  bad = tf.strings.length(reasons) > 0
  first = _first(bad)
  message = tf.strings.join(
    [
      _RECORD,
      tf.io.encode_base64(_at(records, first, '')),
      _BEGIN,
      tf.io.encode_base64(_at(reasons, first, '')),
      _END,
    ]
  )
  return tf.debugging.Assert(
    tf.logical_not(tf.reduce_any(bad)), [message], summarize=1
  )


def assert_records(good, records, reason):
  """Fails the pipeline at the first record that is not `good`.

  A cheaper `assert_valid_records` for one fixed reason: on the happy path
  it builds no string per record, only the (empty) message.

  Args:
    good: [B] bool.
    records: [B] strings, the records (e.g. CSV lines).
    reason: what is wrong with a record that is not good (a Python str).

  Returns:
    An op to depend on.
  """
  import tensorflow as tf

  first = _first(tf.logical_not(good))
  # A slice, not a gather: past the end (no bad record, or B = 0) it is
  # empty, and so is the record quoted.
  record = tf.strings.reduce_join(records[first : first + 1])
  encoded = base64.urlsafe_b64encode(reason.encode('utf-8')).decode('ascii')
  message = tf.strings.join(
    [_RECORD, tf.io.encode_base64(record), _BEGIN, encoded.rstrip('='), _END]
  )
  return tf.debugging.Assert(tf.reduce_all(good), [message], summarize=1)


def _first(bad):
  """The index of the first true value of [B] `bad` (0 if none, or B = 0)."""
  import tensorflow as tf

  # argmax fails on an empty batch: give it one false value to find.
  padded = tf.concat([tf.cast(bad, tf.int32), [0]], axis=0)
  return tf.argmax(padded, output_type=tf.int32)


def _at(values, index, default):
  """values[index], or `default` past the end (an empty batch)."""
  import tensorflow as tf

  padded = tf.concat([values, tf.constant([default], values.dtype)], axis=0)
  return tf.gather(padded, index)


def _decode(encoded):
  try:
    text = base64.urlsafe_b64decode(encoded + '=' * (-len(encoded) % 4))
  except (binascii.Error, ValueError):
    return None
  return text.decode('utf-8', errors='replace')


def _text(error):
  return str(getattr(error, 'message', '') or error)


def message_of(error):
  """The located data error message carried by a TensorFlow error, or None."""
  text = _text(error)
  if _UNLOCATED.search(text):
    return None
  match = _MESSAGE.search(text)
  return _decode(match.group(1)) if match else None


def unlocated_of(error):
  """`(record, reason)` carried by an `assert_valid_records` failure, or None."""
  match = _UNLOCATED.search(_text(error))
  if not match:
    return None
  record, reason = _decode(match.group(1)), _decode(match.group(2))
  if record is None or reason is None:
    return None
  return record, reason


def watch(source):
  """Registers a source whose pipeline failures `data_errors()` can locate.

  Args:
    source: an object with `diagnose(error)`, returning the message of a
      `DataError` that names the file and record, or None when the error is
      not about its data. The most recent sources are kept (strongly: a
      pipeline may outlive the source object that built it).
  """
  with _LOCK:
    _WATCHED[:] = [s for s in _WATCHED if s is not source]
    _WATCHED.append(source)
    del _WATCHED[:-_WATCHED_LIMIT]


def _watched():
  with _LOCK:
    return list(reversed(_WATCHED))


def diagnose(error):
  """The message of the data error behind `error`, or None if it is not one.

  Tries, in order: a located validation message; the watched sources (most
  recent first); an unlocated validation message as is; a tf.Example parse
  error as is.
  """
  message = message_of(error)
  if message is not None:
    return message
  for source in _watched():
    message = source.diagnose(error)
    if message:
      return message
  unlocated = unlocated_of(error)
  if unlocated is not None:
    record, reason = unlocated
    return f'{reason} (record: {record[:80]!r})'
  return example_error(error)


# What ParseExample says about a bad tf.Example, and the record's name.
_MISSING = re.compile(
  r'Name: (?P<name>.*?), Feature: (?P<feature>[^ ]+) '
  r'\(data type: (?P<type>\w+)\) is required but could '
  r'not be found'
)
_MISMATCH = re.compile(
  r'Name: (?P<name>.*?), Key: (?P<feature>[^,]+), '
  r'Index: \d+\.\s+(?P<problem>.*?)(?: \[Op:|\n|$)'
)


def example_error(error, name=None):
  """A readable message for a tf.Example that failed to parse, or None.

  Args:
    error: the TensorFlow error.
    name: a function from the record name in the message to a description
      of where the record is; by default the name is dropped.
  """
  text = _text(error)
  match = _MISSING.search(text)
  if match:
    problem = f'missing required feature {match.group("feature")!r}'
  else:
    match = _MISMATCH.search(text)
    if not match:
      return None
    problem = f'feature {match.group("feature")!r}: {match.group("problem")}'
  where = name(match.group('name')) if name else None
  if where:
    return f'{where}: {problem}'
  return (
    f'a tf.Example is {problem}'
    if problem.startswith('missing')
    else f'a tf.Example has a bad {problem}'
  )


@contextlib.contextmanager
def data_errors():
  """Turns a data failure raised by TensorFlow into a `DataError`.

  Validation failures, truncated or corrupt TFRecord files and tf.Examples
  that do not match the schema become a `DataError` naming the file and
  record; other errors pass through unchanged.
  """
  import tensorflow as tf

  try:
    yield
  except tf.errors.OpError as e:
    message = diagnose(e)
    if message is None:
      raise
    raise DataError(message) from None
  except UnicodeDecodeError as e:
    # TensorFlow cannot turn an error quoting a binary record into text:
    # only the sources can say whether one of theirs is at fault.
    for source in _watched():
      message = source.diagnose(e)
      if message:
        raise DataError(message) from None
    raise
