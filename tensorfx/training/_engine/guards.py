"""Training guards: a non-finite or runaway loss, a step that does not count.

The training loop stops inside its `tf.function` at the first step whose
loss is not finite or above `--thres-loss` (a comparison on the device, no
host synchronisation; under parameter servers, on each worker), and
returns that step's loss. The outer loop then hands it to the loss-guard
callback (`LossGuard.check_loss`) and checks each call's step count
(`check_steps`): one read per call of several steps, which the loop makes
anyway to read the global step.
"""

import math

from tensorfx._errors import HighLossError
from tensorfx._errors import TrainingError

OK = 'ok'
RESTORE = 'restore'


class LossGuard:
  """Decides what a training call's loss and step count mean.

  Example:
    >>> guard = LossGuard(thres_loss=100.0, nan_restores=1)
    >>> guard.check(loss=0.5, step=10, previous_step=0, ran=10)
    'ok'
    >>> guard.check(loss=float('nan'), step=12, previous_step=10, ran=2)
    'restore'

  Args:
    thres_loss: the largest loss allowed (`--thres-loss`); None for no
      limit.
    nan_restores: how many times a non-finite loss may restore the last
      checkpoint and train on (`--nan-restore`) before the job stops.
  """

  def __init__(self, thres_loss=None, nan_restores=0):
    if thres_loss is not None and not thres_loss > 0:
      raise ValueError(
        'thres_loss must be a positive number or None. '
        f'Received: thres_loss={thres_loss!r}'
      )
    if nan_restores is None or nan_restores < 0:
      raise ValueError(
        'nan_restores must be zero or more. Received: '
        f'nan_restores={nan_restores!r}'
      )
    self.thres_loss = thres_loss
    self.nan_restores = int(nan_restores)
    self.restores = []  # The steps at which a restore was made.

  @property
  def limit(self):
    """The loss above which the loop stops (inf without `--thres-loss`)."""
    return math.inf if self.thres_loss is None else float(self.thres_loss)

  def check(self, loss, step, previous_step, ran, checkpoint=None):
    """Checks the result of one training call.

    Args:
      loss: the loss of the call's last step (where the loop stopped).
      step: the global step after the call.
      previous_step: the global step before the call.
      ran: how many training steps the call ran.
      checkpoint: the last checkpoint, for messages.

    Returns:
      `OK`, or `RESTORE` when the loss is not finite and a restore is left:
      the caller restores the last checkpoint and trains on.

    Raises:
      TrainingError: the steps did not advance the global step, or the loss
        is not finite (and no restore is left).
      HighLossError: the loss is above `thres_loss`.
    """
    if not ran:
      return OK
    check_steps(previous_step, step, ran)
    return self.check_loss(loss, step, checkpoint)

  def check_loss(self, loss, step, checkpoint=None):
    """Checks the loss the loop stopped on (or its last one).

    Returns:
      `OK`, or `RESTORE` (see `check`).

    Raises:
      TrainingError: the loss is not finite and no restore is left.
      HighLossError: the loss is above `thres_loss`.
    """
    loss = float(loss)
    last = f' The last checkpoint is {checkpoint}.' if checkpoint else ''
    if not math.isfinite(loss):
      if len(self.restores) < self.nan_restores:
        self.restores.append(step)
        return RESTORE
      tried = (
        f' after {len(self.restores)} restores (--nan-restore '
        f'{self.nan_restores})'
        if self.nan_restores
        else ''
      )
      raise TrainingError(
        f'The training loss is {loss} at step {step}{tried}; stopping '
        'rather than training on. Lower the learning rate or check the '
        f'data; --nan-restore N restores the last checkpoint and trains '
        f'on, up to N times.{last}'
      )
    if loss > self.limit:
      raise HighLossError(
        f'The training loss is {loss:.6g} at step {step}, above '
        f'--thres-loss {self.thres_loss:g}; stopping a diverging run. '
        f'Lower the learning rate or raise --thres-loss.{last}'
      )
    return OK


def check_steps(previous_step, step, ran):
  """Raises unless `ran` steps advanced the global step by at least `ran`.

  (Parameter-server steps run at least once, maybe twice: more is fine.)

  Raises:
    TrainingError: a step did not advance the global step, which would
      repeat steps without end.
  """
  if ran and step - previous_step < ran:
    raise TrainingError(
      f'{ran} training steps advanced the global step from '
      f'{previous_step} to {step}: each step must advance it by one '
      '(a training step that overrides the loop must call '
      'global_step.assign_add(1)). Stopping rather than repeating '
      'steps without end.'
    )


def bad_loss(loss, limit=math.inf):
  """Whether the loop stopped on `loss`: not finite, or above `limit`."""
  return loss is not None and (not math.isfinite(loss) or loss > limit)
