"""Checkpoints: save periodically, resume from the latest, never half-written.

`tf.train.CheckpointManager` writes the data files first and the `checkpoint`
index last, so a kill at any moment leaves the previous checkpoint readable;
a checkpoint damaged later (a full disk, a partial copy) is moved aside on
resume and the newest readable one restored (`_damaged`).
It keeps the N most recent (`--keep-checkpoints`); the K best by a
validation metric (`--keep-best-checkpoints`, `--best-metric`) are written
apart, to `checkpoints/best/`, where the recent ones' rotation never deletes
them.
"""

import json
import os

import tensorflow as tf

from tensorfx import _atomic
from tensorfx._errors import TrainingError
from tensorfx._logging import logger
from tensorfx.training import _damaged

BEST = 'best'
_BEST_STATE = 'best.json'


class Checkpoints:
  """Saves and restores the model, optimizer and global step.

  Example:
    >>> checkpoints = Checkpoints('/tmp/job/checkpoints', builder.global_step,
    ...                           max_to_keep=3, keep_best=2, best_mode='max',
    ...                           model=builder)
    >>> checkpoints.save()
    '/tmp/job/checkpoints/ckpt-100'
    >>> checkpoints.keep_best(0.93)
    '/tmp/job/checkpoints/best/ckpt-100'

  Args:
    directory: where checkpoints go (local or gs://).
    global_step: the global step variable.
    max_to_keep: how many recent checkpoints to keep.
    keep_best: how many best checkpoints to keep in `directory/best`
      (0: none).
    best_mode: 'min' or 'max': whether a lower or a higher metric is better.
    **objects: the trackable objects to save (the model builder, ...).
  """

  def __init__(self, directory, global_step, max_to_keep=5, keep_best=0,
               best_mode='min', **objects):
    if not isinstance(max_to_keep, int) or max_to_keep < 1:
      raise ValueError('max_to_keep must be a positive integer. Received: '
                       f'max_to_keep={max_to_keep!r}')
    if best_mode not in ('min', 'max'):
      raise ValueError("best_mode must be 'min' or 'max'. Received: "
                       f'best_mode={best_mode!r}')
    self.directory = directory
    self._global_step = global_step
    self._objects = dict(objects, global_step=global_step)
    self._checkpoint = tf.train.Checkpoint(**self._objects)
    self._max_to_keep = max_to_keep
    self._manager = self._new_manager()
    self.last_saved_step = None
    self.keep_best_count = int(keep_best or 0)
    self.best_mode = best_mode
    self.best_directory = os.path.join(directory, BEST)
    self._best = None  # [{'step', 'value', 'path'}], best first.

  def _new_manager(self):
    return tf.train.CheckpointManager(
        self._checkpoint, self.directory, max_to_keep=self._max_to_keep,
        step_counter=self._global_step, checkpoint_name='ckpt')

  @property
  def latest(self):
    """The path prefix of the latest checkpoint, or None."""
    return self._manager.latest_checkpoint

  @property
  def recent(self):
    """The path prefixes of the recent checkpoints kept, oldest first."""
    return list(self._manager.checkpoints)

  @property
  def best(self):
    """The best checkpoints kept: dicts of step, value, path; best first."""
    return [dict(entry) for entry in self._load_best()]

  def restore_latest(self):
    """Restores the newest readable checkpoint, if any.

    A damaged newer one is logged and moved aside (`_damaged`).

    Returns:
      The restored path, or None when there was no checkpoint.

    Raises:
      TrainingError: when no checkpoint is readable, or the checkpoint does
        not match the model.
    """
    path = _damaged.newest_readable(self.directory)
    if not path:
      return None
    if path != self.latest:
      # The state file was rewritten: the manager reads it again.
      self._manager = self._new_manager()
    self.restore(path)
    self.last_saved_step = int(self._global_step.numpy())
    logger.info('Resumed from %s at step %d', path, self.last_saved_step)
    return path

  def restore(self, path, partial=False):
    """Restores the checkpoint `path` (a prefix) into the objects.

    Args:
      path: the checkpoint prefix.
      partial: whether some of the checkpoint's values may go unused
        (evaluation and export): no warning about them.

    Raises:
      TrainingError: when the checkpoint does not match the model.
    """
    # read(), not restore(): restore() expects the save counter, which
    # copies written apart (best/, early_stopping/) do not hold.
    status = tf.train.Checkpoint(**self._objects).read(path)
    try:
      status.assert_existing_objects_matched()
    except AssertionError as e:
      raise TrainingError(
          f'The checkpoint {path} does not match this model (was it written '
          f'by a different model or arguments?): {e}') from None
    if partial:
      status.expect_partial()
    return path

  def save(self):
    """Saves a checkpoint at the current global step; returns its path."""
    step = int(self._global_step.numpy())
    if step == self.last_saved_step and self.latest:
      return self.latest
    previous = self.latest
    try:
      path = self._manager.save(checkpoint_number=step)
    except (tf.errors.OpError, OSError) as e:
      reason = _atomic.disk_full(e)
      if not reason:
        raise
      # What the failed write left (TensorFlow's ckpt-N_temp/).
      _atomic.remove_tree(os.path.join(self.directory, f'ckpt-{step}_temp'))
      raise TrainingError(
          f'Cannot write the checkpoint {self.directory}/ckpt-{step}: the '
          f'disk is full ({reason}). Free space (or write --output '
          'to a larger disk) and run the same command again: it resumes '
          + (f'from {previous}, which is intact.' if previous else
             'from the start (no checkpoint was written yet).')) from None
    self.last_saved_step = step
    logger.info('Saved checkpoint %s', path)
    return path

  def keep_best(self, value):
    """Writes the current state to `best/` if `value` ranks in the best K.

    Args:
      value: the metric's value at the current step.

    Returns:
      The path written, or None (not among the best, or keep_best is 0).
    """
    if not self.keep_best_count or value is None or value != value:  # NaN
      return None
    step = int(self._global_step.numpy())
    entries = [e for e in self._load_best() if e['step'] != step]
    reverse = self.best_mode == 'max'

    def rank(entries):
      return sorted(entries, key=lambda e: e['value'], reverse=reverse)

    if len(entries) >= self.keep_best_count:
      worst = rank(entries)[-1]['value']
      if not (value > worst if reverse else value < worst):
        return None
    path = os.path.join(self.best_directory, f'ckpt-{step}')
    tf.io.gfile.makedirs(self.best_directory)
    self._checkpoint.write(path)
    entries = rank(entries + [{'step': step, 'value': float(value),
                               'path': path}])
    self._best = entries[:self.keep_best_count]
    # The record first: a kill between leaves files no record names, never
    # a record naming deleted files.
    self._save_best()
    for dropped in entries[self.keep_best_count:]:
      _delete_checkpoint(dropped['path'])
    logger.info('Kept %s among the %d best (%s)', path, self.keep_best_count,
                f'{value:.6g}')
    return path

  def snapshot(self, directory, step):
    """Writes the current state to `directory/ckpt-STEP`, alone there.

    A copy that no rotation deletes, replaced by the next snapshot (what
    early stopping keeps of the best state); `tf.train.latest_checkpoint`
    of `directory` names it.

    Returns:
      The path written.
    """
    tf.io.gfile.makedirs(directory)
    old = tf.train.latest_checkpoint(directory)
    path = self._checkpoint.write(os.path.join(directory, f'ckpt-{step}'))
    _damaged.write_state(directory, path, [path])
    if old and old != path:
      _delete_checkpoint(old)
    return path

  def _load_best(self):
    if self._best is None:
      state = os.path.join(self.best_directory, _BEST_STATE)
      self._best = []
      if tf.io.gfile.exists(state):
        try:
          with tf.io.gfile.GFile(state) as f:
            self._best = list(json.load(f).get('best', []))
        except (ValueError, AttributeError, TypeError) as e:
          # Written by rename, so only something else can have damaged it.
          logger.warning('%s is unreadable (%s): keeping the best '
                         'checkpoints from now on', state, e)
    return self._best

  def _save_best(self):
    state = os.path.join(self.best_directory, _BEST_STATE)
    _atomic.write_text(state, json.dumps(
        {'mode': self.best_mode, 'best': self._best}, indent=1),
                       fault='best.json')
    # The index `tf.train.latest_checkpoint(best/)` reads (and so
    # --warm-start and --checkpoint best/) names the best one.
    if self._best:
      _damaged.write_state(self.best_directory, self._best[0]['path'],
                           [e['path'] for e in self._best])


def _delete_checkpoint(prefix):
  for path in tf.io.gfile.glob(prefix + '.*'):
    try:
      tf.io.gfile.remove(path)
    except tf.errors.NotFoundError:
      pass

