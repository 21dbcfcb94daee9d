"""Export: the SavedModel that serves raw instances.

In `model/` itself, or with `--export-versioned` in `model/<step>/`:
TensorFlow Serving's layout, a base directory of numbered versions of
which it serves the highest.
"""

import os

import tensorflow as tf

from tensorfx._logging import logger


# What a SavedModel has at its top (besides version directories).
_SAVED_MODEL = ('saved_model.pb', 'saved_model.pbtxt', 'fingerprint.pb',
                'variables', 'assets', 'assets.extra')


def export(prediction, schema, directory, version=None):
  """Saves `prediction` (a PredictionInterface) as a SavedModel.

  The model is written next to its place first and moved into place when
  complete, so a reader never sees half a model; the raw schema goes into
  `assets.extra/schema.yaml` for people and tools.

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
  """
  if version is not None:
    base = directory.rstrip('/')
    _remove_unversioned(base)
    directory = f'{base}/{int(version)}' if '://' in base else \
        os.path.join(base, str(int(version)))
  local = '://' not in directory
  # Locally, a model is written beside its place and renamed into it, so a
  # reader never sees half a model. Object stores (gs://) have no atomic
  # directory rename: there the model is replaced in place.
  target = directory.rstrip('/') + '.partial' if local else directory
  _remove(target)
  if not local:
    _remove(directory)
  tf.saved_model.save(prediction.module, target,
                      signatures=dict(prediction.signatures))
  extra = os.path.join(target, 'assets.extra')
  tf.io.gfile.makedirs(extra)
  with tf.io.gfile.GFile(os.path.join(extra, 'schema.yaml'), 'w') as f:
    f.write(schema.format())
  if local:
    _remove(directory)
    tf.io.gfile.rename(target, directory)
  logger.info('Exported the model to %s', directory)
  return directory


def _remove_unversioned(base):
  """Removes a model exported into `base` itself (not into a version)."""
  if not tf.io.gfile.isdir(base):
    return
  names = [n.rstrip('/') for n in tf.io.gfile.listdir(base)]
  if 'saved_model.pb' not in names:
    return
  logger.info('Removing the unversioned model in %s (--export-versioned '
              'writes numbered versions)', base)
  for name in names:
    if name in _SAVED_MODEL:
      path = os.path.join(base, name)
      if tf.io.gfile.isdir(path):
        _remove(path)
      else:
        tf.io.gfile.remove(path)


def _remove(directory):
  if not tf.io.gfile.exists(directory):
    return
  try:
    tf.io.gfile.rmtree(directory)
  except tf.errors.NotFoundError:
    # Filesystems without real directories (ram://): delete file by file.
    for root, _, files in tf.io.gfile.walk(directory):
      for name in files:
        tf.io.gfile.remove(os.path.join(root, name))
