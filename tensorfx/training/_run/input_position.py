"""The training input's position, carried by every checkpoint.

A run resumed from a checkpoint goes on reading its training data where
the run that wrote the checkpoint was: not from the start of a new pass.
The position is the number of batches the training steps have taken from
the input. Under `--seed` the input pipeline yields the same batches in
the same order in every process (the shuffle of each epoch is seeded,
the reads and maps keep their order), so the batches a resumed run reads
after skipping that many are the ones the interrupted run would have read
next: the epoch, the place in it and the shuffle state all follow from
the one count.

Skipping reads the skipped batches again (nothing is trained on them):
a resume costs a pass of the input pipeline over the data read so far,
and nothing per step or per checkpoint beyond one int64. tf.data's own
iterator checkpoints would resume at once, but hold the shuffle buffer in
every checkpoint (megabytes), cannot save a Python generator's state (the
Parquet reader's), and do not cover the iterators of a multi-worker dataset
(`benchmarks/exact_resume.py` has the figures).

Under parameter servers the count is also kept in a variable on the
servers (`read`), which each worker's input skips its share of when its
iterator is made: a resumed job, and a worker restarted while the job
trains, go on where the job's input is rather than at the start of the
data. Not exactly (closures take batches from whichever worker runs them,
and a lost closure's batches are read again), but no epoch is read twice.
"""

import tensorflow as tf

from tensorfx._logging import logger

# Its name in checkpoints, beside `model` and `global_step`.
NAME = 'input_position'


class InputPosition(tf.__internal__.tracking.Trackable):
  """The batches the training steps have read; saved in each checkpoint.

  The count is kept in Python and written when a checkpoint is (no
  operation per step); under parameter servers, in the variable `read` on
  the servers, which the workers' inputs read (one assignment per call of
  the loop). A checkpoint restored before training reads (resuming) sets
  where the input starts; one restored while training reads (the loss
  guard's, early stopping's best state) moves the model back, not the
  input, which goes on forward.

  Example:
    >>> position = InputPosition()
    >>> tf.train.Checkpoint(input_position=position).read(path)
    >>> dataset = position.resume(training)   # skips what was read

  Args:
    read: the int64 variable to keep the count in (None: in Python).
  """

  def __init__(self, read=None):
    self._batches = 0
    self._reading = False
    self._read = read

  @property
  def batches(self):
    """The batches read so far."""
    if self._read is not None:
      return int(self._read.numpy())
    return self._batches

  def advance(self, batches):
    """Counts `batches` more read by the training steps."""
    if self._read is not None:
      if batches:
        self._read.assign_add(int(batches))
    else:
      self._batches += int(batches)

  def resume(self, training):
    """The iterator over the training input from this position on.

    Args:
      training: the `TrainingInterface`; its `input_from` makes the
        dataset that skips the batches read (without it, they are read
        from the iterator here and dropped).

    Returns:
      The iterator the training loop reads.
    """
    self._reading = True
    skip = self.batches
    if not skip:
      return iter(training.dataset)
    logger.info(
      'Resuming the training input after the %d batches read before: %s',
      skip,
      'each worker skips its share as its input starts'
      if self._read is not None
      else 'reading them again, without training on them',
    )
    if self._read is not None:
      # Each worker's dataset skips its share itself (`_engine.ps_loop`).
      return iter(training.dataset)
    input_from = getattr(training, 'input_from', None)
    if input_from is not None:
      return iter(input_from(skip))
    iterator = iter(training.dataset)
    _drop(iterator, tf.constant(skip, tf.int64))
    return iterator

  def _serialize_to_tensors(self):
    # A parameter-server checkpoint saves inside a function: the variable's
    # value when it runs, not a constant of when it was traced.
    if self._read is not None:
      return {'batches': self._read.read_value()}
    return {'batches': tf.constant(self._batches, tf.int64)}

  def _restore_from_tensors(self, restored_tensors):
    if self._reading:
      return tf.no_op()
    if self._read is not None:
      return self._read.assign(restored_tensors['batches'])
    self._batches = int(restored_tensors['batches'])
    return tf.no_op()


@tf.function(autograph=False)
def _drop(iterator, count):
  """Reads `count` elements from `iterator` and drops them."""

  def body(i):
    with tf.control_dependencies(
      tf.nest.flatten(iterator.get_next(), expand_composites=True)
    ):
      return i + 1

  tf.while_loop(lambda i: i < count, body, (tf.constant(0, tf.int64),))
