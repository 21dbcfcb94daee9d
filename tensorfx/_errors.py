"""Errors raised by tensorfx.

Every error tensorfx raises for bad input derives from `TensorFXError` and
says what was expected, where (file, line, key) and what it received.
"""


class TensorFXError(Exception):
  """Base class of the errors tensorfx raises for bad input or state."""


class ConfigurationError(TensorFXError, ValueError):
  """A configuration (TF_CONFIG, arguments, YAML) is invalid."""


class DataError(TensorFXError, ValueError):
  """Data (a schema, a feature set, a data file, a record) is invalid."""


class TrainingError(TensorFXError, RuntimeError):
  """Training cannot go on (a non-finite loss, a mismatched checkpoint)."""


class HighLossError(TrainingError):
  """The training loss rose above `--thres-loss` (a diverging run)."""
