"""Local hyperparameter tuning: a Vertex AI study file, run on this machine.

`tune` runs the study of a `--config` file (legacy AI Platform's
`hyperparameters` or Vertex AI's `studySpec`), each trial a `tensorfx
train` process in its own output directory, searched with Optuna.
"""

from tensorfx.tuning._study import TuningResult
from tensorfx.tuning._study import tune
from tensorfx.tuning._trialrun import TrialResult

__all__ = [
  'TrialResult',
  'TuningResult',
  'tune',
]
