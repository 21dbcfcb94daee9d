"""TensorBoard's HParams view of a study: one session per trial.

The study's directory gets the experiment (each parameter's domain and the
metric); each trial's directory a session (its parameters and state) and
the metric as the scalar `tune/METRIC`, so `tensorboard --logdir OUTPUT`
shows the trials side by side in the HParams tab.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from tensorfx.cloud import StudySpec

if TYPE_CHECKING:
  from tensorfx.tuning._trialrun import TrialResult

METRIC_PREFIX = 'tune/'


class HParamsWriter:
  """Writes the experiment once, then a session per finished trial."""

  def __init__(self, study: StudySpec, output: str) -> None:
    self._study = study
    self._output = output
    self._started = False

  def _domain(self, hp: Any, parameter: Any) -> Any:
    if parameter.type == 'DOUBLE':
      return hp.RealInterval(
        float(parameter.min_value), float(parameter.max_value)
      )
    if parameter.type == 'INTEGER':
      return hp.IntInterval(int(parameter.min_value), int(parameter.max_value))
    if parameter.type == 'DISCRETE':
      return hp.Discrete([float(v) for v in parameter.values])
    return hp.Discrete(list(parameter.values))

  def _start(self, tf: Any, hp: Any) -> None:
    with tf.summary.create_file_writer(self._output).as_default():
      hp.hparams_config(
        hparams=[
          hp.HParam(p.name, self._domain(hp, p)) for p in self._study.parameters
        ],
        metrics=[
          hp.Metric(
            METRIC_PREFIX + self._study.metric, display_name=self._study.metric
          )
        ],
      )
    self._started = True

  def write(self, trial: TrialResult) -> None:
    """Writes one trial's session (parameters, state, metric)."""
    from tensorboard.plugins.hparams import api as hp
    import tensorflow as tf

    if not self._started:
      self._start(tf, hp)
    values = {
      name: (
        float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool)
        else str(v)
      )
      for name, v in trial.parameters.items()
    }
    # DISCRETE and DOUBLE domains hold floats, INTEGER ones ints.
    for p in self._study.parameters:
      if p.type == 'INTEGER' and p.name in values:
        values[p.name] = int(values[p.name])
    directory = os.path.join(self._output, str(trial.trial))
    writer = tf.summary.create_file_writer(directory)
    with writer.as_default():
      hp.hparams(values, trial_id=str(trial.trial))
      if trial.value is not None:
        tf.summary.scalar(
          METRIC_PREFIX + self._study.metric, trial.value, step=0
        )
    writer.close()
