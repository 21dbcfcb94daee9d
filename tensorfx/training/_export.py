"""Export: the SavedModel that serves raw instances."""

import os

import tensorflow as tf

from tensorfx._logging import logger


def export(prediction, schema, directory):
  """Saves `prediction` (a PredictionInterface) as a SavedModel.

  The model is written next to `directory` first and moved into place when
  complete, so a reader never sees half a model; the raw schema goes into
  `assets.extra/schema.yaml` for people and tools.

  Args:
    prediction: the `PredictionInterface` to save.
    schema: the raw data `Schema`.
    directory: the model directory (replaced if it exists).

  Returns:
    `directory`.
  """
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
