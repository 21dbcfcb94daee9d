"""Export: the SavedModel that serves raw instances."""

import os

import tensorflow as tf

from tensorfx import _atomic
from tensorfx import _faults
from tensorfx._errors import TrainingError
from tensorfx._logging import logger


def export(prediction, schema, directory):
  """Saves `prediction` (a PredictionInterface) as a SavedModel.

  Written with `_atomic.write_atomically`: a reader sees the previous model
  or the new one, never half of one (on gs://, a model whose export was
  interrupted is refused by every reader until exported again). The raw
  schema goes into `assets.extra/schema.yaml` for people and tools.

  Args:
    prediction: the `PredictionInterface` to save.
    schema: the raw data `Schema`.
    directory: the model directory (replaced if it exists).

  Returns:
    `directory`.

  Raises:
    TrainingError: the disk is full; the previous model is intact (locally).
  """

  # Tests kill the process at `export.model.saved` (the SavedModel written,
  # its schema not yet) or `export.best_model.written` (all written, not
  # yet in place).
  fault = f'export.{os.path.basename(directory.rstrip("/"))}'

  def write(target):
    tf.saved_model.save(prediction.module, target,
                        signatures=dict(prediction.signatures))
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
        'disk) and export again with `tensorfx export`; the checkpoints '
        'and the previous model are intact.') from None
  logger.info('Exported the model to %s', directory)
  return directory

