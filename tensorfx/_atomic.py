"""Writes that a kill at any moment leaves whole: the old version or the new.

Files (`job.yaml`, the evaluator's records, metadata.json) are written to a
temporary name and renamed into place: a local rename is atomic, and an
object store (gs://) creates an object whole when its upload ends.

Directories (the exported `model/` and `best_model/`) cannot be swapped
like that everywhere:

- on a local disk the new version is written beside its place
  (`model.partial/`) and exchanged with the old one in one `renameat2`
  call (Linux), or with two renames elsewhere;
- on an object store (gs://), which has no directory rename, the marker
  file `.tensorfx-incomplete` is written into the directory first, the old
  files are deleted, the new ones written, and the marker deleted last.
  Readers (`prediction.Model.load`, the evaluator) refuse a directory that
  holds the marker (`incomplete`).

A kill during a write thus leaves the previous version, or (gs:// only) a
directory every reader refuses with a message that says to export again.

Example:
  >>> write_atomically('gs://b/job/model',
  ...                  lambda d: tf.saved_model.save(module, d))
  'gs://b/job/model'
"""

import ctypes
import errno
import os
import posixpath
import socket
import uuid

from tensorfx import _faults

MARKER = '.tensorfx-incomplete'
PARTIAL = '.partial'
_OLD = '.old'
# What an operating system or TensorFlow says when a disk is full.
_DISK_FULL = (
  'no space left on device',
  'disk quota exceeded',
  'file too large',
  'enospc',
  'edquot',
  'not enough space',
)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def is_local(path):
  """Whether `path` is on a local disk (no `scheme://`)."""
  return '://' not in str(path)


def incomplete(directory):
  """Whether `directory` is being written, or its writer was killed.

  Example:
    >>> incomplete('gs://b/job/model')
    False
  """
  import tensorflow as tf

  return tf.io.gfile.exists(_join(str(directory).rstrip('/'), MARKER))


def write_atomically(directory, write_fn, fault=None):
  """Writes a directory so that readers see the old or the new version.

  Example:
    >>> write_atomically('/tmp/job/model',
    ...                  lambda d: tf.saved_model.save(module, d))
    '/tmp/job/model'

  Args:
    directory: the directory to (re)place, local or on an object store.
    write_fn: `write_fn(path)` writes the new version's files under `path`
      (a fresh directory beside `directory` locally, `directory` itself on
      an object store, already emptied).
    fault: the name of the `_faults` point reached when the new version is
      written but not yet in place (tests kill the process there).

  Returns:
    `directory`.
  """
  import tensorflow as tf

  directory = str(directory).rstrip('/')
  if is_local(directory):
    partial = directory + PARTIAL
    _recover(directory)
    remove_tree(partial)
    try:
      write_fn(partial)
    except BaseException:
      _quietly(remove_tree, partial)
      raise
    _faults.point(fault)
    _swap(partial, directory)
    return directory
  marker = _join(directory, MARKER)
  tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(marker, 'w') as f:
    f.write(
      f'Being written by {socket.gethostname()} (pid {os.getpid()}); '
      'if that process is gone, its write was interrupted.\n'
    )
  for root, _, files in list(tf.io.gfile.walk(directory)):
    for name in files:
      path = _join(root, name)
      if path != marker:
        try:
          tf.io.gfile.remove(path)
        except tf.errors.NotFoundError:
          pass  # Listed twice (ram:// lists directories as files too).
  write_fn(directory)
  _faults.point(fault)
  tf.io.gfile.remove(marker)
  return directory


def write_text(path, text, fault=None):
  r"""Writes a text file through a temporary file renamed into place.

  Example:
    >>> write_text('/tmp/job/job.yaml', 'status: running\n')

  Args:
    path: the file (local or an object store); its directory must exist.
    text: the new contents.
    fault: the name of the `_faults` point reached halfway through writing
      the temporary file.

  Raises:
    tf.errors.OpError or OSError: the write failed; the old file is intact
      and no temporary file is left.
  """
  import tensorflow as tf

  path = str(path)
  temporary = f'{path}.tmp-{uuid.uuid4().hex[:12]}'
  try:
    with tf.io.gfile.GFile(temporary, 'w') as f:
      half = len(text) // 2
      f.write(text[:half])
      if fault:
        f.flush()
        _faults.point(fault)
      f.write(text[half:])
    tf.io.gfile.rename(temporary, path, overwrite=True)
  except BaseException:
    _quietly(tf.io.gfile.remove, temporary)
    raise


def disk_full(error):
  """What the system said if a write's error means a full disk, else None.

  A full disk or quota, e.g. 'No space left on device'; None for other
  errors.
  """
  if isinstance(error, OSError) and error.errno in (
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EFBIG,
  ):
    return os.strerror(error.errno)
  text = str(getattr(error, 'message', None) or error)
  for words in _DISK_FULL:
    at = text.lower().find(words)
    if at >= 0:
      return text[at : at + len(words)]
  return None


def remove_tree(directory):
  """Deletes a directory tree if it exists.

  Also where there are no real directories, as on ram://.
  """
  import tensorflow as tf

  if not tf.io.gfile.exists(directory):
    return
  try:
    tf.io.gfile.rmtree(directory)
  except tf.errors.NotFoundError:
    for root, _, files in tf.io.gfile.walk(directory):
      for name in files:
        _quietly(tf.io.gfile.remove, _join(root, name))


def _swap(partial, directory):
  """Moves `partial` into `directory`'s place; the old version goes."""
  if not os.path.exists(directory):
    os.rename(partial, directory)
    return
  if _exchange(partial, directory):
    remove_tree(partial)  # Now the old version.
    return
  # Two renames: between them there is no `directory`, and the next
  # write (`_recover`) puts the old one back if a kill falls there.
  old = directory + _OLD
  remove_tree(old)
  os.rename(directory, old)
  os.rename(partial, directory)
  remove_tree(old)


def _exchange(a, b):
  """Exchanges two paths atomically (Linux renameat2); False if unable."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = libc.renameat2
  except (OSError, AttributeError):
    return False
  result = renameat2(
    _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
  )
  return result == 0


def _recover(directory):
  old = directory + _OLD
  if not os.path.exists(directory) and os.path.exists(old):
    os.rename(old, directory)
  elif os.path.exists(old):
    remove_tree(old)


def _join(directory, name):
  if is_local(directory):
    return os.path.join(directory, name)
  return posixpath.join(directory, name)


def _quietly(function, *args):
  try:
    function(*args)
  except Exception:
    pass  # Clean-up after a failure: the failure is what to report.
