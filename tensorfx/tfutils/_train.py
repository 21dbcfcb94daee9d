"""`train_params`: the training data, extra targets, steps and guards.

| train_params | tensorfx |
| --- | --- |
| `data_params` (`func`, `batch_size`, kwargs) | the `train` source; `--batch-size` |
| `targets` (`func`, kwargs) | computed in each training step, recorded every `save_metrics_freq` steps as `train/NAME` |
| `num_steps` (None) | `--max-steps` (None: until interrupted) |
| `thres_loss` (100) | `--thres-loss`: `HighLossError` above it (tfutils' `HiLossError`) |
| `validate_first` (True) | `--validate-first` when training starts at step 0 (as tfutils: not when resumed, nor loaded with its step) |
| `num_minibatches` (1) | `--accumulation-steps` |
| `train_loop` (`func(sess, train_targets, **kwargs)`) | called for every step (`--steps-per-loop 1`) with `train_targets` a list of one dict (one model), as tfutils; its `sess.run(train_targets)` runs the engine's step (see `_train_loop`) |
"""

import dataclasses
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _functions
from tensorfx.tfutils import _keys

KEYS = (
  'data_params',
  'targets',
  'num_steps',
  'thres_loss',
  'validate_first',
  'num_minibatches',
  'queue_params',
  'train_loop',
)


@dataclasses.dataclass(frozen=True)
class TrainSettings:
  """The train_params of an experiment (tfutils' defaults).

  Attributes:
    data: the data function (`train_params['data_params']`).
    batch_size: the batch size given to it.
    targets: the extra training targets' function, or None.
    num_steps: the step training ends at; None runs until interrupted.
    thres_loss: the largest loss before `HighLossError`; None for none.
    validate_first: whether to validate before the first step.
    num_minibatches: the minibatches whose gradients one update applies.
    train_loop: the custom inner loop (`func` and its keys), or None.
  """

  data: _functions.Function
  batch_size: int
  targets: Optional[_functions.Function] = None
  num_steps: Optional[int] = None
  thres_loss: Optional[float] = 100.0
  validate_first: bool = True
  num_minibatches: int = 1
  train_loop: Optional[_functions.Function] = None

  @classmethod
  def from_params(cls, params: _keys.Params) -> Self:
    """Reads `train_params` (a `Params`).

    Raises:
      ConfigurationError: an unknown key, a missing one or a bad value,
        naming it (`train_params['data_params']['func']`).
    """
    params.check_known(KEYS)
    data = params.child(
      'data_params',
      required=True,
      what="the training data: {'func': ..., 'batch_size': ...}",
    )
    function = _functions.Function.from_params(
      data,
      'the function that makes the training data (called with '
      'batch_size= and the other keys of data_params)',
      exclude=('batch_size',),
    )
    batch_size = data.required(
      'batch_size', 'the batch size given to the data function'
    )
    batch_size = data.integer('batch_size', batch_size)
    targets = None
    if params.get('targets') is not None:
      targets = _functions.Function.from_params(
        params.child('targets'),
        'the function of the extra training targets (inputs, outputs) -> dict',
      )
    thres_loss = params.value.get('thres_loss', 100.0)
    if thres_loss is not None and (
      isinstance(thres_loss, bool)
      or not isinstance(thres_loss, (int, float))
      or thres_loss <= 0
    ):
      raise ConfigurationError(
        f'{params.where("thres_loss")} must be a positive number, or None '
        f'for no limit. Received: {params.where("thres_loss")}='
        f'{thres_loss!r}'
      )
    if params.get('queue_params'):
      raise ConfigurationError(
        f'{params.where("queue_params")}: there are no input queues in '
        'TensorFlow 2; the data function returns a tf.data.Dataset.'
      )
    train_loop = None
    loop = params.value.get('train_loop')
    if callable(loop):
      train_loop = _functions.Function(loop, {}, params.where('train_loop'))
    elif loop is not None:
      train_loop = _functions.Function.from_params(
        params.child('train_loop'),
        'the custom training loop, called '
        'for every step as func(sess, train_targets, **kwargs)',
      )
    return cls(
      data=function,
      batch_size=batch_size,
      targets=targets,
      train_loop=train_loop,
      num_steps=params.integer('num_steps', None, allow_none=True),
      thres_loss=None if thres_loss is None else float(thres_loss),
      validate_first=params.boolean('validate_first', True),
      num_minibatches=params.integer('num_minibatches', 1),
    )

  def flags(self, first_step: Optional[int] = 0) -> list[str]:
    """The trainer flags of these settings.

    Args:
      first_step: the global step training starts at (resumed or loaded;
        None: not known to be 0): tfutils validated first at step 0 only.
    """
    first = self.validate_first and first_step == 0
    flags = [
      '--batch-size',
      str(self.batch_size),
      '--max-steps',
      str(self.num_steps or 0),
      '--accumulation-steps',
      str(self.num_minibatches),
      '--validate-first' if first else '--no-validate-first',
    ]
    if self.thres_loss is not None:
      flags += ['--thres-loss', repr(self.thres_loss)]
    if self.train_loop is not None:
      flags += ['--steps-per-loop', '1']
    return flags

  def describe(self) -> dict[str, Any]:
    return _keys.describe(
      {
        'data_params': {**self.data.describe(), 'batch_size': self.batch_size},
        'targets': self.targets.describe() if self.targets else None,
        'num_steps': self.num_steps,
        'thres_loss': self.thres_loss,
        'validate_first': self.validate_first,
        'num_minibatches': self.num_minibatches,
        'train_loop': (self.train_loop.describe() if self.train_loop else None),
      }
    )
