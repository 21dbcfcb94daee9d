"""The output of batch prediction: a TFRecord or JSON lines file, or stdout."""

import sys

from tensorfx._errors import DataError
from tensorfx.data._examples import compression_of


class Writer:
  """Writes the output records to a file (or stdout), in place at the end.

  A local file is written beside its place and renamed into it when
  complete, so a failed run leaves no half-written output behind.
  """

  def __init__(self, output, tfrecord, compression):
    import tensorflow as tf

    self._output = output
    self._local = output != '-' and '://' not in output
    self._target = output + '.partial' if self._local else output
    if tfrecord:
      if output == '-':
        raise DataError(
          'TFRecord output needs a file: give --output PATH.tfrecord[.gz].'
        )
      options = tf.io.TFRecordOptions(
        compression_type=compression_of(output, compression)
      )
      self._file = tf.io.TFRecordWriter(self._target, options)
    elif output == '-':
      self._file = sys.stdout
    else:
      self._file = tf.io.gfile.GFile(self._target, 'w')

  def write(self, record):
    self._file.write(record)

  def close(self):
    import tensorflow as tf

    if self._file is sys.stdout:
      sys.stdout.flush()
      return
    self._file.close()
    if self._local:
      tf.io.gfile.rename(self._target, self._output, overwrite=True)

  def abort(self):
    import tensorflow as tf

    if self._file is sys.stdout:
      sys.stdout.flush()
      return
    self._file.close()
    if self._local and tf.io.gfile.exists(self._target):
      tf.io.gfile.remove(self._target)
