"""The `tensorfx` logger, configured without touching other libraries'."""

import logging
import sys

logger = logging.getLogger('tensorfx')

LEVELS = {'debug': logging.DEBUG, 'info': logging.INFO,
          'warning': logging.WARNING, 'error': logging.ERROR}


def configure(level='info', library_level='warning'):
  """Shows tensorfx's messages at `level` and other libraries' at theirs.

  Args:
    level: tensorfx's level name (debug, info, warning, error).
    library_level: the level for TensorFlow, Beam and tf.Transform.
  """
  logger.setLevel(LEVELS.get(level, logging.INFO))
  if not logger.handlers:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(message)s', datefmt='%H:%M:%S'))
    logger.addHandler(handler)
    logger.propagate = False
  other = LEVELS.get(library_level, logging.WARNING)
  for name in ('tensorflow', 'absl', 'apache_beam', 'tensorflow_transform',
               'root'):
    logging.getLogger(None if name == 'root' else name).setLevel(other)
