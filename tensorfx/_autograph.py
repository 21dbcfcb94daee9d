"""Autograph converts users' code, not tensorfx's or tf.Transform's.

Autograph rewrites every Python function a traced function calls, unless
its module is on autograph's list of modules not to convert (TensorFlow's
own are). The data readers, the training engine and tf.Transform's loader
have no Python control flow over tensors: converting them only costs time,
about 40% of an iris job (19.1 -> 11.3 s in one process, measured). The
hooks those modules call are converted explicitly (`hook`), as a
`tf.function` would convert them, so Python `if`/`for`/`while` over tensors
keep working in users' hooks.

Example:
  >>> _autograph.skip_library()          # before tracing; idempotent
  >>> build_inference = _autograph.hook(builder.build_inference)
"""

import functools

import tensorflow as tf

# Modules whose functions call users' code only through `hook`.
_LIBRARY = (
  'tensorfx.data',
  'tensorfx.training._engine',
  'tensorflow_transform',
)


@functools.cache
def skip_library():
  """Adds the library's modules to autograph's modules not to convert.

  Process-wide and once. Autograph's list is internal to TensorFlow: if it
  is not where TensorFlow 2.21 keeps it, nothing changes (the modules are
  converted, as before: slower, not wrong).
  """
  try:
    from tensorflow.python.autograph.core import config
    from tensorflow.python.autograph.core import config_lib
  except ImportError:  # pragma: no cover  (another TensorFlow layout)
    return
  rules = getattr(config, 'CONVERSION_RULES', None)
  if rules is None:  # pragma: no cover
    return
  config.CONVERSION_RULES = tuple(
    config_lib.DoNotConvert(name) for name in _LIBRARY
  ) + tuple(rules)


def hook(fn):
  """`fn` (a user's hook), converted by autograph when called.

  As `tf.function` would convert it: Python control flow over tensors in
  it becomes graph control flow; a function marked `do_not_convert`, or
  one of a module autograph leaves alone, is called as it is.
  """
  autograph = tf.__internal__.autograph
  return autograph.tf_convert(fn, autograph.control_status_ctx())
