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
"""

import tensorflow as tf

from tensorfx._logging import logger

# Its name in checkpoints, beside `model` and `global_step`.
NAME = 'input_position'


class InputPosition(tf.__internal__.tracking.Trackable):
  """The batches the training steps have read; saved in each checkpoint.

  The count is kept in Python and written when a checkpoint is (no
  operation per step). A checkpoint restored before training reads
  (resuming) sets where the input starts; one restored while training
  reads (the loss guard's, early stopping's best state) moves the model
  back, not the input, which goes on forward.

  Example:
    >>> position = InputPosition()
    >>> tf.train.Checkpoint(input_position=position).read(path)
    >>> dataset = position.resume(training)   # skips what was read
  """

  def __init__(self):
    self.batches = 0
    self._reading = False

  def advance(self, batches):
    """Counts `batches` more read by the training steps."""
    self.batches += int(batches)

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
      'Resuming the training input after the %d batches read before: '
      'reading them again, without training on them',
      skip,
    )
    input_from = getattr(training, 'input_from', None)
    if input_from is not None:
      return iter(input_from(skip))
    iterator = iter(training.dataset)
    _drop(iterator, tf.constant(skip, tf.int64))
    return iterator

  def _serialize_to_tensors(self):
    return {'batches': tf.constant(self.batches, tf.int64)}

  def _restore_from_tensors(self, restored_tensors):
    if not self._reading:
      self.batches = int(restored_tensors['batches'])
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
