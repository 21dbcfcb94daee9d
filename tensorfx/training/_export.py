"""Export: the SavedModel that serves raw instances."""

import os

import tensorflow as tf

from tensorfx import _yaml
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
  staging = directory.rstrip('/') + '.partial'
  if tf.io.gfile.exists(staging):
    tf.io.gfile.rmtree(staging)
  tf.saved_model.save(prediction.module, staging,
                      signatures=dict(prediction.signatures))
  extra = os.path.join(staging, 'assets.extra')
  tf.io.gfile.makedirs(extra)
  with tf.io.gfile.GFile(os.path.join(extra, 'schema.yaml'), 'w') as f:
    f.write(schema.format())
  if tf.io.gfile.exists(directory):
    tf.io.gfile.rmtree(directory)
  tf.io.gfile.rename(staging, directory)
  logger.info('Exported the model to %s', directory)
  return directory
