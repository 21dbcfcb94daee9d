"""Export: the SavedModel that serves raw instances.

In `model/` itself, or with `--export-versioned` in `model/<step>/`:
TensorFlow Serving's layout, a base directory of numbered versions of
which it serves the highest. Either is written whole or not at all
(`_atomic.write_atomically`).
"""

import os

import tensorflow as tf

from tensorfx import _atomic
from tensorfx import _faults
from tensorfx._errors import TrainingError
from tensorfx._logging import logger

# What a SavedModel has at its top (besides version directories).
_SAVED_MODEL = (
  'saved_model.pb',
  'saved_model.pbtxt',
  'fingerprint.pb',
  'variables',
  'assets',
  'assets.extra',
)


def export(prediction, schema, directory, version=None):
  """Saves `prediction` (a PredictionInterface) as a SavedModel.

  Written with `_atomic.write_atomically`: a reader sees the previous model
  or the new one, never half of one (on gs://, a model whose export was
  interrupted is refused by every reader until exported again). The raw
  schema goes into `assets.extra/schema.yaml` for people and tools.

  Example:
    >>> export(prediction, schema, '/tmp/job/model', version=300)
    '/tmp/job/model/300'

  Args:
    prediction: the `PredictionInterface` to save.
    schema: the raw data `Schema`.
    directory: the model directory (replaced if it exists), or with
      `version` the base directory of the versions.
    version: a version number (the global step): the model goes to
      `directory/<version>/` (replaced if it exists; other versions are
      kept, and a model exported unversioned into `directory` is
      removed); None for `directory` itself.

  Returns:
    The directory of the model written.

  Raises:
    TrainingError: the disk is full; the previous model is intact (locally).
  """
  # Tests kill the process at `export.model.saved` (the SavedModel written,
  # its schema not yet) or `export.best_model.written` (all written, not
  # yet in place).
  fault = f'export.{os.path.basename(directory.rstrip("/"))}'
  if version is not None:
    base = directory.rstrip('/')
    _remove_unversioned(base)
    directory = (
      f'{base}/{int(version)}'
      if '://' in base
      else os.path.join(base, str(int(version)))
    )

  def write(target):
    tf.saved_model.save(
      prediction.module, target, signatures=dict(prediction.signatures)
    )
    _faults.point(f'{fault}.saved')
    extra = os.path.join(target, 'assets.extra')
    tf.io.gfile.makedirs(extra)
    with tf.io.gfile.GFile(os.path.join(extra, 'schema.yaml'), 'w') as f:
      f.write(schema.format())

  try:
    _atomic.write_atomically(directory, write, fault=f'{fault}.written')
  except (tf.errors.OpError, OSError) as e:
    reason = _atomic.disk_full(e)
    if not reason:
      raise
    raise TrainingError(
      f'Cannot export the model to {directory}: the disk is full '
      f'({reason}). Free space (or write --output to a larger '
      'disk) and run the same command again (it exports the last '
      'checkpoint) or `tensorfx export`; the checkpoints and the previous '
      'model are intact.'
    ) from None
  logger.info('Exported the model to %s', directory)
  return directory


def _remove_unversioned(base):
  """Removes a model exported into `base` itself (not into a version)."""
  if not tf.io.gfile.isdir(base):
    return
  names = [n.rstrip('/') for n in tf.io.gfile.listdir(base)]
  if 'saved_model.pb' not in names:
    return
  logger.info(
    'Removing the unversioned model in %s (--export-versioned '
    'writes numbered versions)',
    base,
  )
  for name in names:
    if name in _SAVED_MODEL:
      path = os.path.join(base, name)
      if tf.io.gfile.isdir(path):
        _atomic.remove_tree(path)
      else:
        tf.io.gfile.remove(path)
