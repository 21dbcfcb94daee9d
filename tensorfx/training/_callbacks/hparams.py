"""Hyperparameters: one row per run in TensorBoard's HParams tab."""

import hashlib
import json
import time
from typing import Any, Mapping, Optional

from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import plugin_data_pb2
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from tensorfx.training._callbacks import base
from tensorfx.training._settings import targets as _targets

# The training scalars every run writes (see TensorBoardCallback).
TRAIN_METRICS = (
  'loss',
  'learning_rate',
  'gradient_norm',
  'steps_per_sec',
  'examples_per_sec',
)

_STATUS: dict[Optional[str], Any] = {
  'completed': api_pb2.STATUS_SUCCESS,
  'stopped': api_pb2.STATUS_SUCCESS,
  'interrupted': api_pb2.STATUS_UNKNOWN,
  'failed': api_pb2.STATUS_FAILURE,
}


def hparams_of(
  arguments: Mapping[str, Any],
) -> dict[str, bool | int | float | str]:
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
  hparams: dict[str, bool | int | float | str] = {}
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

  def __init__(self, arguments: Optional[Mapping[str, Any]]) -> None:
    super().__init__()
    self.hparams = hparams_of(arguments or {})
    self._metrics: dict[tuple[str, str], None] = {}
    self._started = False

  @property
  def _enabled(self) -> bool:
    return self.context.chief and self.context.role == 'train'

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    if not self._enabled:
      return
    with self.context.summaries.as_default(''):
      tf.summary.experimental.write_raw_pb(
        _session_start(self.hparams, int(time.time())), step=0
      )
    self.context.summaries.flush()
    self._started = True

  def on_evaluate_end(self, step: int, results: Any) -> None:
    for name, values in results.items():
      group = _targets.summaries_dir(name)
      for key, value in values.items():
        if isinstance(value, (int, float)):
          self._metrics[(group, key)] = None

  def on_train_end(self, logs: dict[str, Any]) -> None:
    if not self._started:
      return
    # TensorBoard's helpers import its filesystem stubs (boto3, fsspec:
    # ~0.15 s); at the end of a run that no longer delays anything.
    from tensorboard.plugins.hparams import api as hp
    from tensorboard.plugins.hparams import summary as hp_summary

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


def _session_start(
  hparams: Mapping[str, bool | int | float | str], start_time_secs: int
) -> bytes:
  """The HParams plugin's session-start record, serialized.

  Made from the plugin's protos, as its `hparams()` makes it (same tag,
  metadata and group name), without importing its Python helpers, which
  would delay the first step by their imports.
  """
  info = plugin_data_pb2.SessionStartInfo(
    # The plugin's group name for a session without a trial id.
    group_name=hashlib.sha256(
      json.dumps(hparams, sort_keys=True, separators=(',', ':')).encode()
    ).hexdigest(),
    start_time_secs=start_time_secs,
  )
  for name in sorted(hparams):
    value = hparams[name]
    if isinstance(value, bool):
      info.hparams[name].bool_value = value
    elif isinstance(value, (int, float)):
      info.hparams[name].number_value = value
    else:
      info.hparams[name].string_value = str(value)
  summary = summary_pb2.Summary()
  summary.value.add(
    tag='_hparams_/session_start_info',
    metadata=summary_pb2.SummaryMetadata(
      plugin_data=summary_pb2.SummaryMetadata.PluginData(
        plugin_name='hparams',
        content=plugin_data_pb2.HParamsPluginData(
          version=0, session_start_info=info
        ).SerializeToString(),
      )
    ),
    # The plugin's empty tensor: a float vector of length 0.
    tensor=tf.make_tensor_proto([], dtype=tf.float32, shape=(0,)),
  )
  return summary.SerializeToString()
