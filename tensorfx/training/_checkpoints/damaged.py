"""Damaged checkpoints: find the newest readable one, move the others aside.

A full disk, a killed copy or a partial upload can leave a checkpoint whose
data or index file is truncated, or a `checkpoint` state file that names
files which are gone (or that is itself unreadable, which TensorFlow takes
as "no checkpoint" and would start training afresh). Resuming, evaluating
and exporting therefore try the candidates newest first (those the state
file names, then any other `*.index` in the directory), reading every
tensor, whose checksum TensorFlow verifies (resuming tries a checkpoint by
restoring it, which reads it anyway; `evaluate`, `export` and a warm start
read it once before); a damaged one is logged, renamed `NAME.damaged` (kept for inspection, never
deleted) and the next one is tried. When none is readable the job stops
with one line naming the directory and what to do.
"""

import os
import re

from google.protobuf.message import DecodeError
import tensorflow as tf

from tensorfx import _atomic
from tensorfx._errors import TrainingError
from tensorfx._logging import logger

SUFFIX = '.damaged'
_STEP = re.compile(r'-(\d+)$')


# What reading a damaged checkpoint raises: OpError (DataLossError for a
# checksum or a truncated index, NotFoundError for a file gone), IndexError
# (a truncated data file), DecodeError (a garbled object graph).
READ_ERRORS = (tf.errors.OpError, IndexError, DecodeError)


class Unreadable(TrainingError):
  """A checkpoint whose files cannot be read (damaged, or gone).

  Attributes:
    path: the checkpoint prefix.
    reason: what is wrong, e.g. 'truncated data (Read less bytes than
      requested)'.
  """

  def __init__(self, path, reason):
    super().__init__(f'Cannot read the checkpoint {path}: {reason}')
    self.path = path
    self.reason = reason


def describe(error):
  """What a read error says about a checkpoint, in one line."""
  if isinstance(error, IndexError):
    return f'truncated data ({error})'
  lines = str(getattr(error, 'message', None) or error).strip().splitlines()
  text = lines[0] if lines else 'unreadable'
  return (
    text
    if isinstance(error, tf.errors.OpError)
    else f'{type(error).__name__}: {text}'
  )


def problem(prefix):
  """Why the checkpoint `prefix` cannot be read; None when it can.

  Reads every tensor (one at a time), so a truncated or bit-flipped data
  file, a truncated index and missing files are all found. (Resuming tries
  a checkpoint by restoring it instead, which reads it anyway.)

  Example:
    >>> problem('/tmp/job/checkpoints/ckpt-1000')
    'truncated data (Read less bytes than requested)'
  """
  if not tf.io.gfile.exists(prefix + '.index'):
    return f'no index file {os.path.basename(prefix)}.index'
  try:
    # Not tf.train.load_checkpoint: it takes a prefix that looks like a
    # directory (on ram://, any) for a directory.
    reader = tf.compat.v1.train.NewCheckpointReader(prefix)
    for key in reader.get_variable_to_dtype_map():
      reader.get_tensor(key)
  except READ_ERRORS as e:
    return describe(e)
  return None


def went_away(prefix):
  """Whether a checkpoint's index is gone.

  Deleted by its writer's rotation (or moved aside), as opposed to damaged
  in place.
  """
  return not tf.io.gfile.exists(prefix + '.index')


def candidates(directory):
  """The checkpoint prefixes of `directory`, newest first.

  The state file's latest, then the others it lists (newest first), then
  any other checkpoint whose index is in the directory (by step, newest
  first): an unreadable state file loses no checkpoint.
  """
  found = []
  state = read_state(directory)
  if state is not None and state.model_checkpoint_path:
    found.append(state.model_checkpoint_path)
    found.extend(reversed(state.all_model_checkpoint_paths))
  listed = tf.io.gfile.glob(os.path.join(directory, '*.index'))
  others = [p[: -len('.index')] for p in listed]
  others.sort(key=_step, reverse=True)
  result = []
  for prefix in found + others:
    prefix = _absolute(directory, prefix)
    if prefix not in result:
      result.append(prefix)
  return result


def read_state(directory):
  """The `checkpoint` state file's proto, or None (absent or unreadable)."""
  try:
    return tf.train.get_checkpoint_state(directory)
  except (ValueError, tf.errors.OpError):
    return None


def newest_readable(directory, move_aside=True, check=problem):
  """The newest readable checkpoint of `directory`; damaged newer ones go.

  Each damaged checkpoint newer than the one chosen is logged as a warning
  naming it and, with `move_aside`, renamed `NAME.*.damaged`; the state
  file is rewritten to name the one chosen as the latest. Nothing moves
  when no checkpoint is readable.

  Example:
    >>> newest_readable('/tmp/job/checkpoints')
    '/tmp/job/checkpoints/ckpt-800'

  Args:
    directory: a directory of checkpoints (local or gs://).
    move_aside: whether to rename damaged checkpoints (the job's own
      directory) or leave them (another run's, for a warm start).
    check: `check(prefix)` -> why it cannot be read, or None (`problem`;
      resuming restores it instead).

  Returns:
    The checkpoint prefix, or None when the directory holds none.

  Raises:
    TrainingError: there are checkpoints, none of them readable.
  """
  found = candidates(directory)
  damaged = []
  chosen = None
  for prefix in found:
    reason = (
      problem(prefix)
      if not tf.io.gfile.exists(prefix + '.index')
      else check(prefix)
    )
    if reason is None:
      chosen = prefix
      break
    damaged.append((prefix, reason))
  if chosen is None:
    if not found:
      return None
    raise TrainingError(
      f'No readable checkpoint in {directory}: '
      + '; '.join(f'{os.path.basename(p)}: {r}' for p, r in damaged)
      + '. Restore the directory from a copy, or move it away to train '
      'from the start (or from another run with --warm-start).'
    )
  state = read_state(directory)
  state_ok = (
    state is not None
    and state.model_checkpoint_path
    and (_absolute(directory, state.model_checkpoint_path) == chosen)
  )
  for prefix, reason in damaged:
    moved = move_checkpoint_aside(prefix) if move_aside else []
    logger.warning(
      'The checkpoint %s is damaged (%s)%s; using %s',
      prefix,
      reason,
      f': moved aside to {", ".join(os.path.basename(m) for m in moved)}'
      if moved
      else '',
      os.path.basename(chosen),
    )
  if move_aside and not state_ok:
    if state is None and tf.io.gfile.exists(
      os.path.join(directory, 'checkpoint')
    ):
      logger.warning(
        'The checkpoint state file %s is unreadable: rebuilt '
        'from the checkpoints in the directory',
        os.path.join(directory, 'checkpoint'),
      )
    broken = {p for p, _ in damaged}
    kept = sorted(
      (p for p in found if p not in broken and _step(p) <= _step(chosen)),
      key=_step,
    )
    write_state(directory, chosen, kept)
  return chosen


def check(prefix, what='--checkpoint'):
  """Raises naming `prefix` when that checkpoint is damaged.

  Raises:
    TrainingError: naming the checkpoint, its damage and what to do.
  """
  reason = problem(prefix)
  if reason is not None:
    raise TrainingError(
      f'Cannot read the checkpoint {prefix} ({what}): it is damaged '
      f'({reason}). Give an older checkpoint, or its directory to use the '
      'newest readable one.'
    )


def move_checkpoint_aside(prefix):
  """Renames the files of checkpoint `prefix` to `*.damaged`; their paths."""
  moved = []
  for path in sorted(tf.io.gfile.glob(prefix + '.*')):
    if not (
      path.endswith('.index') or '.data-' in os.path.basename(path)
    ) or SUFFIX in os.path.basename(path):
      continue
    target = path + SUFFIX
    number = 1
    while tf.io.gfile.exists(target):
      number += 1
      target = f'{path}{SUFFIX}-{number}'
    try:
      tf.io.gfile.rename(path, target)
      moved.append(target)
    except tf.errors.OpError as e:
      logger.warning('Could not move %s aside: %s', path, e.message)
  return moved


def write_state(directory, latest, paths):
  """Writes `directory`'s state file: `latest` and `paths` (oldest first).

  With each checkpoint's time (its index file's), so that a
  `tf.train.CheckpointManager` reading it rotates them as its own.
  """
  times = []
  for path in paths:
    try:
      times.append(
        tf.io.gfile.stat(_absolute(directory, path) + '.index').mtime_nsec / 1e9
      )
    except tf.errors.OpError:
      times.append(0.0)
  text = (
    f'model_checkpoint_path: "{_relative(directory, latest)}"\n'
    + ''.join(
      f'all_model_checkpoint_paths: "{_relative(directory, p)}"\n'
      for p in paths
    )
    + ''.join(f'all_model_checkpoint_timestamps: {t!r}\n' for t in times)
    + 'last_preserved_timestamp: 0.0\n'
  )
  _atomic.write_text(
    os.path.join(directory, 'checkpoint'), text, fault='checkpoint.state'
  )


def _step(prefix):
  match = _STEP.search(prefix)
  return int(match.group(1)) if match else -1


def _absolute(directory, prefix):
  return (
    prefix
    if os.path.isabs(prefix) or '://' in prefix
    else os.path.join(directory, prefix)
  )


def _relative(directory, prefix):
  if os.path.dirname(prefix) == directory.rstrip('/'):
    return os.path.basename(prefix)
  return prefix
