"""Hyperparameters: one row per run in TensorBoard's HParams tab."""

import time

from tensorboard.plugins.hparams import api as hp
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import summary as hp_summary
import tensorflow as tf

from tensorfx.training._callbacks import base
from tensorfx.training._evaluation import targets as _targets

# The training scalars every run writes (see TensorBoardCallback).
TRAIN_METRICS = (
  'loss',
  'learning_rate',
  'gradient_norm',
  'steps_per_sec',
  'examples_per_sec',
)

_STATUS = {
  'completed': api_pb2.STATUS_SUCCESS,
  'stopped': api_pb2.STATUS_SUCCESS,
  'interrupted': api_pb2.STATUS_UNKNOWN,
  'failed': api_pb2.STATUS_FAILURE,
}


def hparams_of(arguments):
  """The run's hyperparameters as the HParams plugin takes them.

  Example:
    >>> hparams_of({'batch_size': 32, 'hidden_layers': [20, 10],
    ...             'epochs': None, 'optimizer': 'adam'})
    {'batch_size': 32, 'hidden_layers': '20,10', 'optimizer': 'adam'}

  Args:
    arguments: the resolved arguments (name -> value).

  Returns:
    The arguments whose values are numbers, strings or booleans; lists
    of those joined with commas (`--hidden-layers`); unset ones (None)
    and others left out.
  """
  hparams = {}
  for name, value in sorted(arguments.items()):
    if isinstance(value, (bool, int, float, str)):
      hparams[name] = value
    elif (
      isinstance(value, (list, tuple))
      and value
      and all(isinstance(v, (bool, int, float, str)) for v in value)
    ):
      hparams[name] = ','.join(str(v) for v in value)
  return hparams


class HParamsCallback(base.Callback):
  """Writes the run's hyperparameters and final metrics for TensorBoard.

  In `summaries/` itself (the run TensorBoard's HParams tab shows as one
  row; open TensorBoard on a directory of several jobs' outputs to compare
  them): the session's hyperparameters when training begins, then, when
  it ends, its status and the experiment's description: every
  hyperparameter, and as metrics the training scalars (`train/loss`,
  `train/gradient_norm`, ...) and each validation target's results
  (`eval/accuracy`, ...), whose last values the tab shows. Written by the
  chief of a training run only.

  Args:
    arguments: the resolved arguments (see `hparams_of`).
  """

  def __init__(self, arguments):
    super().__init__()
    self.hparams = hparams_of(arguments or {})
    self._metrics = {}
    self._started = False

  @property
  def _enabled(self):
    return self.context.chief and self.context.role == 'train'

  def on_train_begin(self, logs):
    if not self._enabled:
      return
    with self.context.summaries.as_default(''):
      hp.hparams(self.hparams, start_time_secs=int(time.time()))
    self.context.summaries.flush()
    self._started = True

  def on_evaluate_end(self, step, results):
    for name, values in results.items():
      group = _targets.summaries_dir(name)
      for key, value in values.items():
        if isinstance(value, (int, float)):
          self._metrics[(group, key)] = None

  def on_train_end(self, logs):
    if not self._started:
      return
    metrics = [hp.Metric(tag, group='train') for tag in TRAIN_METRICS]
    metrics += [hp.Metric(tag, group=group) for group, tag in self._metrics]
    end = hp_summary.session_end_pb(
      _STATUS.get(logs.get('status'), api_pb2.STATUS_UNKNOWN),
      end_time_secs=int(time.time()),
    )
    with self.context.summaries.as_default(''):
      hp.hparams_config(
        hparams=[hp.HParam(name) for name in self.hparams],
        metrics=metrics,
        time_created_secs=int(time.time()),
      )
      tf.summary.experimental.write_raw_pb(end.SerializeToString(), step=0)
