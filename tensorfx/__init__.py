"""tensorfx: build, train and serve TensorFlow models from one ModelBuilder.

Subpackages are imported on first use, so `import tensorfx` (and the
command line's `--help`) does not import TensorFlow.
"""

import os
import typing

from tensorfx import _lazy
from tensorfx import _logging
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx._errors import HighLossError
from tensorfx._errors import TensorFXError
from tensorfx._errors import TrainingError
from tensorfx._version import __version__

# tensorfx trains Keras 2 (tf_keras). tf.Transform sets this variable when
# it is imported, unless it is set; set here first, by the same rule, so
# that TensorFlow's own import loads Keras 2's optimizers instead of Keras
# 3's (1 to 1.8 s of every process's start); `tf.keras` is Keras 2 too.
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# TensorFlow's C++ start-up chatter is held back (see tensorfx._logging).
_logging.install_import_hook()

# Type checkers and IDEs see the subpackages here; at run time they are
# imported on first use by __getattr__ below.
if typing.TYPE_CHECKING:
  from tensorfx import cloud
  from tensorfx import data
  from tensorfx import embeddings
  from tensorfx import models
  from tensorfx import prediction
  from tensorfx import tools
  from tensorfx import training

_EXPORTS = {
  name: f'tensorfx.{name}'
  for name in (
    'cloud',
    'data',
    'embeddings',
    'models',
    'prediction',
    'tools',
    'training',
  )
}

__all__ = [
  'ConfigurationError',
  'DataError',
  'HighLossError',
  'TensorFXError',
  'TrainingError',
  '__version__',
  'cloud',
  'data',
  'embeddings',
  'models',
  'prediction',
  'tools',
  'training',
]


# Hidden from type checkers, so a misspelt name is an error there.
if not typing.TYPE_CHECKING:
  __getattr__, __dir__ = _lazy.exports(globals(), _EXPORTS)
