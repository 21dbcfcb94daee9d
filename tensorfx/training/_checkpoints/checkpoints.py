"""Checkpoints: save periodically, resume from the latest, never half-written.

`tf.train.CheckpointManager` writes the data files first and the `checkpoint`
index last, so a kill at any moment leaves the previous checkpoint readable;
a checkpoint damaged later (a full disk, a partial copy) is moved aside on
resume and the newest readable one restored (`_damaged`).
It keeps the N most recent (`--keep-checkpoints`); the K best by a
validation metric (`--keep-best-checkpoints`, `--best-metric`) are written
apart, to `checkpoints/best/`, where the recent ones' rotation never deletes
them.

A run resumes the latest checkpoint of its output, or the one
`--resume-from` names (once: the state is saved into the output at once,
and a restarted job resumes from there), or starts afresh with
`--no-resume`, which moves what an earlier run left aside.
"""

import json
import os
import time

import tensorflow as tf

from tensorfx import _atomic
from tensorfx._errors import TrainingError
from tensorfx._logging import logger
from tensorfx.training._checkpoints import damaged as _damaged
from tensorfx.training._checkpoints import restore as _restore

BEST = 'best'
_BEST_STATE = 'best.json'
# Which --resume-from this output's checkpoints started from.
_RESUMED = 'resumed_from.json'


def resume(checkpoints, settings):
  """Restores what the run starts from, per its `RestoreSettings`.

  Args:
    checkpoints: the run's `Checkpoints`.
    settings: the `RestoreSettings` (`--resume-from`, `--no-resume`).

  Returns:
    The checkpoint restored, or None for a fresh model (then the run calls
    `build_init()`).

  Raises:
    ConfigurationError: `--resume-from` names no checkpoint.
    TrainingError: the checkpoint does not match the model, or cannot be
      read.
  """
  if not settings.resume:
    return None
  if settings.resume_from:
    path = checkpoints.resume_from(settings.resume_from)
    if path is not None:
      return path
  return checkpoints.restore_latest()


def move_aside(directories, clock=time.time):
  """Renames each non-empty directory to `DIRECTORY.old-TIMESTAMP`.

  What `--no-resume` does with an earlier run's checkpoints and summaries:
  the new run starts afresh, and nothing is deleted.

  Returns:
    `{directory: where it went}` for the directories moved.
  """
  stamp = time.strftime('%Y%m%d-%H%M%S', time.gmtime(clock()))
  moved = {}
  for directory in directories:
    directory = directory.rstrip('/')
    if not tf.io.gfile.isdir(directory) or not tf.io.gfile.listdir(directory):
      continue
    target, count = f'{directory}.old-{stamp}', 1
    while tf.io.gfile.exists(target):
      count += 1
      target = f'{directory}.old-{stamp}-{count}'
    _rename_tree(directory, target)
    moved[directory] = target
    logger.warning('--no-resume: moved %s aside to %s', directory, target)
  return moved


def _rename_tree(source, target):
  try:
    tf.io.gfile.rename(source, target)
    return
  except (
    tf.errors.UnimplementedError,
    tf.errors.FailedPreconditionError,
    tf.errors.PermissionDeniedError,
  ):
    pass
  # Filesystems that rename files only: copy, then delete the copied.
  for root, _, files in tf.io.gfile.walk(source):
    relative = root[len(source) :].strip('/')
    destination = f'{target}/{relative}' if relative else target
    tf.io.gfile.makedirs(destination)
    for name in files:
      tf.io.gfile.copy(
        f'{root.rstrip("/")}/{name}', f'{destination}/{name}', overwrite=True
      )
  for root, _, files in tf.io.gfile.walk(source):
    for name in files:
      tf.io.gfile.remove(f'{root.rstrip("/")}/{name}')
  try:
    tf.io.gfile.rmtree(source)
  except tf.errors.OpError:
    pass


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
    restore_from: the directory a resume reads, when it is not
      `directory`: the chief's, for the other workers of a multi-worker
      cluster (each writes its own copies to a scratch directory, but all
      must resume the same state). Read only: damaged checkpoints there
      are the chief's to move aside.
    optional: the names of objects that checkpoints of earlier releases
      do not hold (the input position): restored from a checkpoint that
      holds them, left as they are by one that does not.
    **objects: the trackable objects to save (the model builder, ...).
  """

  def __init__(
    self,
    directory,
    global_step,
    max_to_keep=5,
    keep_best=0,
    best_mode='min',
    restore_from=None,
    optional=(),
    **objects,
  ):
    if not isinstance(max_to_keep, int) or max_to_keep < 1:
      raise ValueError(
        'max_to_keep must be a positive integer. Received: '
        f'max_to_keep={max_to_keep!r}'
      )
    if best_mode not in ('min', 'max'):
      raise ValueError(
        f"best_mode must be 'min' or 'max'. Received: best_mode={best_mode!r}"
      )
    self.directory = directory
    self._restore_directory = restore_from or directory
    self._global_step = global_step
    self._objects = dict(objects, global_step=global_step)
    self._optional = frozenset(optional)
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
      self._checkpoint,
      self.directory,
      max_to_keep=self._max_to_keep,
      step_counter=self._global_step,
      checkpoint_name='ckpt',
    )

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

    def attempt(path):
      # Restoring reads every tensor (and checks its checksum): a
      # checkpoint is tried by restoring it, at no extra cost when it is
      # whole. A later restore overwrites what a failed one assigned.
      try:
        self.restore(path)
      except _damaged.Unreadable as e:
        return e.reason
      return None

    own = self._restore_directory == self.directory
    path = _damaged.newest_readable(
      self._restore_directory, move_aside=own, check=attempt
    )
    if not path:
      return None
    if own and path != self.latest:
      # The state file was rewritten: the manager reads it again.
      self._manager = self._new_manager()
    self.last_saved_step = int(self._global_step.numpy())
    logger.info('Resumed from %s at step %d', path, self.last_saved_step)
    return path

  def resume_from(self, path):
    """Restores the checkpoint `path` names, optimizer state and step too.

    `--resume-from`: the state is saved at once into this output (as its
    checkpoint of that step, the latest), and `resumed_from.json` records
    it: a job restarted with the same command resumes its own latest
    checkpoint, not `path` again. Checkpoints of later steps already in
    the output stay until the rotation (`--keep-checkpoints`) removes
    them, oldest first.

    Args:
      path: a checkpoint prefix (`.../ckpt-200`), its `.index` file, or a
        directory of checkpoints (its latest).

    Returns:
      The prefix restored, or None when this output already resumed from
      `path` (then resume its latest).

    Raises:
      ConfigurationError: naming `path`, when it is not a checkpoint.
      TrainingError: the checkpoint does not match the model.
    """
    # Another worker follows the chief's record of it.
    marker = os.path.join(self._restore_directory, _RESUMED)
    latest = (
      self.latest
      if self._restore_directory == self.directory
      else tf.train.latest_checkpoint(self._restore_directory)
    )
    if latest and tf.io.gfile.exists(marker):
      with tf.io.gfile.GFile(marker) as f:
        done = json.load(f)
      if done.get('given') == str(path):
        logger.info(
          'This output already resumed from %s at step %s '
          '(%s): resuming its latest checkpoint',
          path,
          done.get('step'),
          marker,
        )
        return None
    prefix = _restore.resolve_checkpoint(path, what='--resume-from')
    self.restore(prefix)
    step = int(self._global_step.numpy())
    saved = self._manager.save(checkpoint_number=step)
    self.last_saved_step = step
    tf.io.gfile.makedirs(self.directory)
    with tf.io.gfile.GFile(marker + '.tmp', 'w') as f:
      json.dump(
        {
          'given': str(path),
          'checkpoint': prefix,
          'step': step,
          'saved': saved,
        },
        f,
        indent=1,
      )
    tf.io.gfile.rename(marker + '.tmp', marker, overwrite=True)
    logger.info(
      'Resumed from %s at step %d (--resume-from; saved as %s)',
      prefix,
      step,
      saved,
    )
    return prefix

  def restore(self, path, partial=False):
    """Restores the checkpoint `path` (a prefix) into the objects.

    Args:
      path: the checkpoint prefix.
      partial: whether some of the checkpoint's values may go unused
        (evaluation and export): no warning about them.

    Raises:
      TrainingError: when the checkpoint does not match the model;
        `_damaged.Unreadable` (a TrainingError) when its files cannot be
        read.
    """
    try:
      held = _held_objects(path)
      missing = sorted(self._optional - held)
      if missing:
        logger.warning(
          'The checkpoint %s holds no %s (it was written by an earlier '
          'release): %s starts afresh',
          path,
          ', '.join(missing),
          'it' if len(missing) == 1 else 'they',
        )
      # read(), not restore(): restore() expects the save counter, which
      # copies written apart (best/, early_stopping/) do not hold.
      checkpoint = tf.train.Checkpoint(
        **{k: v for k, v in self._objects.items() if k not in missing}
      )
      if 'save_counter' in held:
        # The manager's checkpoints do: read it into a counter of its own,
        # or TensorFlow warns, when the reader is deleted, of a value left
        # unrestored (which a resumed run would print every time).
        _ = checkpoint.save_counter
      status = checkpoint.read(path)
    except ValueError as e:  # A variable of another shape.
      raise TrainingError(
        f'The checkpoint {path} does not match this model (was it written '
        f'by a different model or arguments?): {e}'
      ) from None
    except _damaged.READ_ERRORS as e:
      raise _damaged.Unreadable(path, _damaged.describe(e)) from None
    try:
      status.assert_existing_objects_matched()
    except AssertionError as e:
      raise TrainingError(
        f'The checkpoint {path} does not match this model (was it written '
        f'by a different model or arguments?): {e}'
      ) from None
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
        + (
          f'from {previous}, which is intact.'
          if previous
          else 'from the start (no checkpoint was written yet).'
        )
      ) from None
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
    entries = rank(
      entries + [{'step': step, 'value': float(value), 'path': path}]
    )
    self._best = entries[: self.keep_best_count]
    # The record first: a kill between leaves files no record names, never
    # a record naming deleted files.
    self._save_best()
    for dropped in entries[self.keep_best_count :]:
      _delete_checkpoint(dropped['path'])
    logger.info(
      'Kept %s among the %d best (%s)',
      path,
      self.keep_best_count,
      f'{value:.6g}',
    )
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
          logger.warning(
            '%s is unreadable (%s): keeping the best checkpoints from now on',
            state,
            e,
          )
    return self._best

  def _save_best(self):
    state = os.path.join(self.best_directory, _BEST_STATE)
    _atomic.write_text(
      state,
      json.dumps({'mode': self.best_mode, 'best': self._best}, indent=1),
      fault='best.json',
    )
    # The index `tf.train.latest_checkpoint(best/)` reads (and so
    # --warm-start and --checkpoint best/) names the best one.
    if self._best:
      _damaged.write_state(
        self.best_directory,
        self._best[0]['path'],
        [e['path'] for e in self._best],
      )


def _delete_checkpoint(prefix):
  for path in tf.io.gfile.glob(prefix + '.*'):
    try:
      tf.io.gfile.remove(path)
    except tf.errors.NotFoundError:
      pass


def _held_objects(path):
  """The names of the objects the checkpoint `path` holds at its root.

  `save_counter` among them in the manager's checkpoints (not in copies
  written apart).
  """
  # The reader of the prefix itself: `tf.train.list_variables` takes a path
  # that `gfile.isdir` calls a directory for one, and some file systems
  # (ram://) call a prefix of files a directory.
  reader = tf.compat.v1.train.NewCheckpointReader(path)
  return {name.split('/')[0] for name in reader.get_variable_to_shape_map()}
