"""tfutils' parameter-driven interface on tensorfx's engine.

`train_from_params` and `test_from_params` take tfutils' dictionaries
(`save_params`, `model_params`, `train_params`, `loss_params`,
`learning_rate_params`, `optimizer_params`, `validation_params`,
`load_params`), make a `ModelBuilder` of the functions they give
(`_builder`), translate the rest into the job's arguments (`_save`,
`_train`, `_validation`, `_load`) and run `ModelTrainer`: one engine for
every job. The experiment database is MLflow (`_store`).
"""

from tensorfx.tfutils._api import test_from_params
from tensorfx.tfutils._api import train_from_params

__all__ = [
  'test_from_params',
  'train_from_params',
]
