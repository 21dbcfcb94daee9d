"""`save_params`: where an experiment is recorded, and how often.

tfutils' frequencies become the engine's cadence:

| save_params | tensorfx |
| --- | --- |
| `save_metrics_freq` (5) | `--log-interval-steps`: training loss, learning rate and `train_params['targets']` recorded |
| `save_valid_freq` (3000) | `--eval-interval-steps`: validation |
| `cache_filters_freq` (3000), `cache_max_num` (6) | a checkpoint every N steps, the last M kept (`--keep-checkpoints`) |
| `save_filters_freq` (30000) | a checkpoint every N steps, kept for good in `checkpoints/saved/` |
| `save_initial_filters` (True) | a checkpoint of step 0 kept there too |
| `do_save` (True) | False: nothing recorded in the store (checkpoints are still written: resuming needs them) |

Checkpoints are made by step only, as tfutils made them, never by time.
"""

import dataclasses
import math
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _store

# What only save_params says (tfutils' DBInterface read it there only).
SAVE_ONLY = (
  'do_save',
  'save_metrics_freq',
  'save_valid_freq',
  'save_filters_freq',
  'cache_filters_freq',
  'cache_max_num',
  'save_initial_filters',
  'save_to_gfs',
)
KEYS = _store.LOCATION_KEYS + ('cache_dir',) + SAVE_ONLY
# What --checkpoint-interval-secs is here: checkpoints come by step.
NEVER_BY_TIME = 10**9


@dataclasses.dataclass(frozen=True)
class SaveSettings:
  """The save_params of an experiment (tfutils' defaults).

  Attributes:
    location: the experiment's `Location`.
    do_save: whether the store records it.
    save_metrics_freq: steps between training records.
    save_valid_freq: steps between validations.
    save_filters_freq: steps between checkpoints kept for good.
    cache_filters_freq: steps between (rotating) checkpoints.
    cache_max_num: the rotating checkpoints kept.
    save_initial_filters: whether step 0 is kept for good too.
  """

  location: _store.Location
  do_save: bool = True
  save_metrics_freq: int = 5
  save_valid_freq: int = 3000
  save_filters_freq: int = 30000
  cache_filters_freq: int = 3000
  cache_max_num: int = 6
  save_initial_filters: bool = True

  @classmethod
  def from_params(
    cls, params: _keys.Params, load: Optional[_keys.Params] = None
  ) -> Self:
    """Reads `save_params` (a `Params`).

    Location keys it lacks are `load`'s (`load_params`), as in tfutils:
    `save_params={'exp_id': 'test1'}` records in the loaded experiment's
    database and collection.

    Raises:
      ConfigurationError: an unknown key, a missing location key, or a bad
        frequency, naming it.
    """
    params.check_known(KEYS)
    if params.get('save_to_gfs'):
      raise ConfigurationError(
        f'{params.where("save_to_gfs")}: values too large for the store '
        'are not split off here; return them from a validation target and '
        'read them from the results (train_from_params returns them, '
        'and OUTPUT/job.yaml holds them).'
      )
    return cls(
      location=_store.Location.from_params(params, load),
      do_save=params.boolean('do_save', True),
      save_metrics_freq=params.integer('save_metrics_freq', 5),
      save_valid_freq=params.integer('save_valid_freq', 3000),
      save_filters_freq=params.integer('save_filters_freq', 30000),
      cache_filters_freq=params.integer('cache_filters_freq', 3000),
      cache_max_num=params.integer('cache_max_num', 6),
      save_initial_filters=params.boolean('save_initial_filters', True),
    )

  def flags(self) -> list[str]:
    """The trainer flags of these settings."""
    flags = [
      '--log-interval-steps',
      str(self.save_metrics_freq),
      '--eval-interval-steps',
      str(self.save_valid_freq),
      '--checkpoint-interval-steps',
      str(math.gcd(self.cache_filters_freq, self.save_filters_freq)),
      '--checkpoint-interval-secs',
      str(NEVER_BY_TIME),
      '--keep-checkpoints',
      str(self.cache_max_num),
    ]
    if self.do_save:
      flags += [
        '--experiment',
        self.location.experiment,
        '--tracking-uri',
        self.location.uri,
      ]
    return flags

  def describe(self) -> dict[str, Any]:
    return _keys.describe(
      {k: v for k, v in dataclasses.asdict(self).items() if k != 'location'}
    )
