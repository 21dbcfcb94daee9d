"""Regression losses with Gematria's loss types and error normalizations.

Gematria computes its loss from the error of each prediction, normalized
first, then squared (`MEAN_SQUARED_ERROR`), taken absolute
(`MEAN_ABSOLUTE_ERROR`) or through the Huber function (`HUBER`, delta 1),
and averaged. Its normalizations divide the absolute error by the expected
value (`PERCENTAGE_ERROR`) or by the expected value where it is above one
(`EXPECTED_VALUE_GREATER_THAN_ONE`). `regression_loss` is that computation
for any builder; `--loss`, `--loss-normalization` and `--huber-delta`
(`builder.settings.loss`) choose it from the command line.
"""

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import loss as _loss_settings

# Bounds |target| from below in percentage errors: Gematria's throughputs
# are positive, but a zero target would make the error infinite.
PERCENTAGE_EPSILON = 1e-6


def regression_loss(
  predictions,
  targets,
  loss='mean_squared_error',
  normalization=None,
  huber_delta=None,
  weights=None,
):
  """The mean regression loss of a batch, as Gematria computes it.

  With error `e = prediction - target`, each example's loss is `e**2`
  (`mean_squared_error`), `|e|` (`mean_absolute_error`) or the Huber
  function of `|e|` (`huber`: `0.5 * e**2` up to `huber_delta`, linear
  above), after the error is normalized:

  | normalization | error used |
  | --- | --- |
  | `none` | `e` |
  | `percentage_error` | `e / max(abs(target), 1e-6)` |
  | `expected_value_greater_than_one` | `e / max(target, 1)` |

  The result is the mean over every element (weighted by `weights` when
  given). Names are taken in any case, as Gematria spells them
  (`MEAN_ABSOLUTE_ERROR`, `PERCENTAGE_ERROR`), and as `mse`, `mae`,
  `percentage`.

  Example:
    >>> float(regression_loss(tf.constant([3.0, 1.0]), tf.constant([2.0, 4.0]),
    ...                       'MEAN_ABSOLUTE_ERROR', 'PERCENTAGE_ERROR'))
    0.625

    In a builder, with the job's `--loss`, `--loss-normalization` and
    `--huber-delta`:

    >>> def build_training(self, global_steps, inputs, inferences):
    ...   loss = tensorfx.training.regression_loss(
    ...       inferences[:, 0], inputs['throughput'], self.settings.loss)
    ...   return loss, self.optimizer

  Args:
    predictions: float predictions, e.g. [B] (or [B, T] for T tasks).
    targets: the expected values, of the same shape (a trailing dimension
      of 1 on either side is squeezed).
    loss: the loss type; or the job's `LossSettings`
      (`builder.settings.loss`), which gives the normalization and the
      Huber delta too (a loss type it leaves unset is mean squared error).
    normalization: `none` (default), `percentage_error` or
      `expected_value_greater_than_one`; overrides the settings' one.
    huber_delta: where the Huber loss turns linear (default 1.0, as
      Gematria); overrides the settings' one.
    weights: optional per-example weights, of the targets' shape (0 leaves
      an example out, e.g. one whose target is unknown).

  Returns:
    The scalar mean loss (of the predictions' float dtype).

  Raises:
    ConfigurationError: an unknown loss type or normalization, a huber delta
      that is not positive, or shapes that do not match.
  """
  if isinstance(loss, _loss_settings.LossSettings):
    settings = loss
    loss = settings.type or 'mean_squared_error'
    normalization = (
      settings.normalization if normalization is None else normalization
    )
    huber_delta = settings.huber_delta if huber_delta is None else huber_delta
  loss = _loss_settings.check_loss_type(loss, 'loss')
  normalization = _loss_settings.check_normalization(
    'none' if normalization is None else normalization, 'normalization'
  )
  huber_delta = 1.0 if huber_delta is None else float(huber_delta)
  if not huber_delta > 0:
    raise ConfigurationError(
      'huber_delta must be a positive number. '
      f'Received: huber_delta={huber_delta}'
    )
  predictions = tf.convert_to_tensor(predictions)
  if not predictions.dtype.is_floating:
    predictions = tf.cast(predictions, tf.float32)
  targets = _matched(
    tf.cast(targets, predictions.dtype), predictions, 'targets'
  )
  errors = predictions - targets
  if normalization == 'percentage_error':
    errors /= tf.maximum(tf.abs(targets), PERCENTAGE_EPSILON)
  elif normalization == 'expected_value_greater_than_one':
    errors /= tf.maximum(targets, 1.0)
  absolute = tf.abs(errors)
  if loss == 'mean_squared_error':
    losses = tf.square(errors)
  elif loss == 'mean_absolute_error':
    losses = absolute
  else:
    quadratic = tf.minimum(absolute, huber_delta)
    losses = 0.5 * tf.square(quadratic) + huber_delta * (absolute - quadratic)
  if weights is None:
    return tf.reduce_mean(losses)
  weights = _matched(tf.cast(weights, losses.dtype), losses, 'weights')
  return tf.math.divide_no_nan(
    tf.reduce_sum(losses * weights), tf.reduce_sum(weights)
  )


def _matched(value, reference, name):
  """`value` in the shape of `reference`, squeezing a trailing 1."""
  rank, expected = value.shape.rank, reference.shape.rank
  if rank is not None and expected is not None and rank != expected:
    if rank == expected + 1 and value.shape[-1] == 1:
      value = tf.squeeze(value, -1)
    elif expected == rank + 1 and reference.shape[-1] == 1:
      value = tf.expand_dims(value, -1)
  if not value.shape.is_compatible_with(reference.shape):
    raise ConfigurationError(
      f"Expected {name} of the predictions' shape {reference.shape}. "
      f'Received: {name}.shape={value.shape}'
    )
  return value
