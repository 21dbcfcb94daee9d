"""Record validation inside input pipelines, with errors naming file and line.

A bad record is found by vectorized checks on a whole batch; the pipeline
then fails with an assertion whose message carries a marker. Code that runs
the pipeline wraps it in `data_errors()`, which turns that failure into a
`DataError` with just the readable message, instead of a TensorFlow trace.
The message travels base64-encoded: the assertion escapes the quotes and
backslashes of the strings it prints.
"""

import base64
import binascii
import contextlib
import re

from tensorfx._errors import DataError

_BEGIN = '<<tensorfx.DataError>>'
_END = '<<end>>'
_MESSAGE = re.compile(re.escape(_BEGIN) + '([A-Za-z0-9_-]*)' + re.escape(_END))


def assert_valid(reasons, files, lines):
  """Fails the pipeline at the first record with a non-empty reason.

  Args:
    reasons: [B] strings, empty for good records.
    files: [B] strings, the file each record came from.
    lines: [B] int64, the 1-based line (or record) number in its file.

  Returns:
    An op to depend on.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  bad = tf.strings.length(reasons) > 0
  first = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int32)
  message = tf.strings.join([
      _BEGIN, tf.io.encode_base64(tf.strings.join([
          tf.gather(files, first), ':',
          tf.strings.as_string(tf.gather(lines, first)), ': ',
          tf.gather(reasons, first)])), _END])
  return tf.debugging.Assert(tf.logical_not(tf.reduce_any(bad)), [message],
                             summarize=1)


def message_of(error):
  """The data error message carried by a TensorFlow error, or None."""
  match = _MESSAGE.search(str(getattr(error, 'message', '') or error))
  if not match:
    return None
  encoded = match.group(1)
  try:
    text = base64.urlsafe_b64decode(encoded + '=' * (-len(encoded) % 4))
  except (binascii.Error, ValueError):
    return None
  return text.decode('utf-8', errors='replace')


@contextlib.contextmanager
def data_errors():
  """Turns a validation failure raised by TensorFlow into a `DataError`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    yield
  except tf.errors.OpError as e:
    message = message_of(e)
    if message is None:
      raise
    raise DataError(message) from None
