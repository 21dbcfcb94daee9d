"""Checkpoints: save periodically, resume from the latest, never half-written.

`tf.train.CheckpointManager` writes the data files first and the `checkpoint`
index last, so a kill at any moment leaves the previous checkpoint readable.
"""


import tensorflow as tf

from tensorfx._errors import TrainingError
from tensorfx._logging import logger


class Checkpoints:
  """Saves and restores the model, optimizer and global step.

  Args:
    directory: where checkpoints go (local or gs://).
    global_step: the global step variable.
    max_to_keep: how many recent checkpoints to keep.
    **objects: the trackable objects to save (the model builder, ...).
  """

  def __init__(self, directory, global_step, max_to_keep=5, **objects):
    self.directory = directory
    self._global_step = global_step
    self._checkpoint = tf.train.Checkpoint(global_step=global_step, **objects)
    self._manager = tf.train.CheckpointManager(
        self._checkpoint, directory, max_to_keep=max_to_keep,
        step_counter=global_step, checkpoint_name='ckpt')
    self.last_saved_step = None

  @property
  def latest(self):
    """The path prefix of the latest checkpoint, or None."""
    return self._manager.latest_checkpoint

  def restore_latest(self):
    """Restores the latest checkpoint, if any.

    Returns:
      The restored path, or None when there was no checkpoint.

    Raises:
      TrainingError: when the checkpoint does not match the model.
    """
    path = self.latest
    if not path:
      return None
    status = self._checkpoint.restore(path)
    try:
      status.assert_existing_objects_matched()
    except AssertionError as e:
      raise TrainingError(
          f'The checkpoint {path} does not match this model (was it written '
          f'by a different model or arguments?): {e}') from None
    self.last_saved_step = int(self._global_step.numpy())
    logger.info('Resumed from %s at step %d', path, self.last_saved_step)
    return path

  def save(self):
    """Saves a checkpoint at the current global step; returns its path."""
    step = int(self._global_step.numpy())
    if step == self.last_saved_step and self.latest:
      return self.latest
    path = self._manager.save(checkpoint_number=step)
    self.last_saved_step = step
    logger.info('Saved checkpoint %s', path)
    return path
