"""`load_params`: what a new experiment starts from.

As in tfutils, an experiment that has checkpoints of its own resumes the
latest of them (the engine does that). Only a fresh one loads: from
`from_ckpt` (a checkpoint path), or from the experiment `load_params`
locates (`exp_id`, and `host`/`port`/`dbname`/`collname`, each defaulting
to save_params'), its latest checkpoint or the one of `query={'step': N}`.
That is tensorfx's warm start (`--warm-start`): variables by name,
filtered by `to_restore` (a list of names, a regex matched at the start of
the name, or a function of the name), renamed by `load_param_dict`
(checkpoint name -> model name), with the global step when
`restore_global_step` (tfutils' default: True). Optimizer slots are not
loaded: a new experiment begins a new optimization.
"""

import dataclasses
import os
import re
from typing import Any, Callable, Mapping, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _keys
from tensorfx.tfutils import _query
from tensorfx.tfutils import _save
from tensorfx.tfutils import _store
from tensorfx.training import internal as _training

KEYS = _store.LOCATION_KEYS + (
  'cache_dir',
  'do_restore',
  'from_ckpt',
  'to_restore',
  'load_param_dict',
  'restore_global_step',
  'query',
)
# Permanent checkpoints (save_filters_freq), beside the rotating ones.
SAVED = 'saved'


@dataclasses.dataclass(frozen=True)
class LoadSettings:
  """The load_params of an experiment.

  Attributes:
    location: where to load from (the saving experiment when not given).
    do_restore: whether to restore at all.
    from_ckpt: a checkpoint path to load instead of an experiment's.
    step: the step of the loaded experiment's checkpoint (`query`); None
      for its latest.
    query: a query that is more than an exp_id and a step (searched in
      the store, see `_query`); None otherwise.
    select: `select(name) -> bool`: the variables loaded (`to_restore`).
    rename: checkpoint variable name -> model variable name.
    restore_global_step: whether the global step is loaded too.
    to_restore: `to_restore` as given, described (for the record).
  """

  location: _store.Location
  do_restore: bool = True
  from_ckpt: Optional[str] = None
  step: Optional[int] = None
  query: Optional[_query.Query] = None
  select: Optional[Callable[[str], bool]] = None
  rename: Mapping[str, str] = dataclasses.field(default_factory=dict)
  restore_global_step: bool = True
  to_restore: Any = None

  @classmethod
  def from_params(
    cls, params: _keys.Params, save: Optional[_keys.Params]
  ) -> Self:
    """Reads `load_params` (a `Params`); location keys default to `save`'s.

    The keys only `save_params` has a use for (`save_valid_freq`, ...; a
    script may load from its own save_params) are ignored, as tfutils'
    `DBInterface` ignored them.

    Raises:
      ConfigurationError: an unknown key or a bad value, naming it.
    """
    params.check_known(KEYS + _save.SAVE_ONLY)
    location = _store.Location.from_params(params, fallback=save)
    query = _query.Query.parse(
      params.child('query').value, params.where('query')
    )
    exp_ids = query.exp_ids(location.exp_id)
    if query.exp_id and exp_ids is not None and len(exp_ids) == 1:
      if params.get('exp_id') not in (None, exp_ids[0]):
        raise ConfigurationError(
          f"{params.where('query')}['exp_id'] and {params.where('exp_id')} "
          f'differ. Received: {exp_ids[0]!r} and {params.get("exp_id")!r}'
        )
      location = dataclasses.replace(location, exp_id=exp_ids[0])
    step = query.exact_step
    simple = (
      not query.fields
      and not query.saved_filters
      and (not query.step or step is not None)
      and (not query.exp_id or query.exp_id[0][0] == '$eq')
    )
    from_ckpt = params.get('from_ckpt')
    return cls(
      location=location,
      do_restore=params.boolean('do_restore', True),
      from_ckpt=str(from_ckpt) if from_ckpt else None,
      step=step,
      query=None if simple else query,
      select=_selection(params),
      rename=_rename(params),
      restore_global_step=params.boolean('restore_global_step', True),
      to_restore=_keys.describe(params.get('to_restore')),
    )

  def describe(self) -> dict[str, Any]:
    return _keys.describe(
      {
        'location': dataclasses.asdict(self.location),
        'do_restore': self.do_restore,
        'from_ckpt': self.from_ckpt,
        'step': self.step,
        'query': dataclasses.asdict(self.query) if self.query else None,
        'to_restore': self.to_restore,
        'load_param_dict': dict(self.rename),
        'restore_global_step': self.restore_global_step,
      }
    )


def checkpoint_of(
  output: str, step: Optional[int] = None, what: str = "load_params['exp_id']"
) -> str:
  """The checkpoint of an experiment's output: its latest, or of `step`.

  Looks among the rotating checkpoints (`checkpoints/`) and those kept for
  good (`checkpoints/saved/`).

  Raises:
    ConfigurationError: there is none (naming where it looked).
  """
  import tensorflow as tf

  directory = os.path.join(output, 'checkpoints')
  if step is None:
    try:
      return _training.checkpoints.resolve_checkpoint(directory, what=what)
    except ConfigurationError:
      raise ConfigurationError(
        f'{what}: the experiment has no checkpoint to load (looked in '
        f'{directory}). Train it first, or give from_ckpt.'
      ) from None
  for prefix in (
    os.path.join(directory, f'ckpt-{step}'),
    os.path.join(directory, SAVED, f'ckpt-{step}'),
  ):
    if tf.io.gfile.exists(prefix + '.index'):
      return prefix
  raise ConfigurationError(
    f'{what}: the experiment has no checkpoint of step {step} (looked in '
    f'{directory} and {os.path.join(directory, SAVED)}).'
  )


def find_checkpoint(
  load: LoadSettings, store: Optional[_store.Store], output: str
) -> str:
  """The checkpoint `load` names: by query, else `checkpoint_of(output)`.

  Args:
    load: the `LoadSettings`.
    store: the `Store` of `load.location`, or None (then only the
      location's own output is searched).
    output: the output directory of `load.location`'s experiment.

  Raises:
    ConfigurationError: no checkpoint matches.
  """
  query = load.query
  if query is None:
    return checkpoint_of(output, load.step)
  outputs = []
  if store is not None:
    runs = store.search(
      load.location.experiment, query.filters(load.location.exp_id)
    )
    outputs = [
      r.data.tags['tensorfx.output']
      for r in runs
      if r.data.tags.get('tensorfx.output')
      and query.matches_run(r.data.params, r.data.tags)
    ]
  if not outputs and not query.fields and store is None:
    outputs = [output]
  return _query.latest_match(query, outputs, "load_params['query']")


def _selection(params: _keys.Params) -> Optional[Callable[[str], bool]]:
  """`to_restore` as a predicate of variable names (None: all)."""
  value = params.get('to_restore')
  where = params.where('to_restore')
  if value is None:
    return None
  if isinstance(value, str):
    try:
      value = re.compile(value)
    except re.error as e:
      raise ConfigurationError(
        f'{where} must be a regular expression ({e}). Received: '
        f'{where}={params.get("to_restore")!r}'
      ) from None
  if isinstance(value, re.Pattern):
    # tfutils matched at the start of the name.
    return lambda name: value.match(name) is not None
  if isinstance(value, (list, tuple, set)):
    if not all(isinstance(n, str) for n in value):
      raise ConfigurationError(
        f'{where} must list variable names. Received: {where}={value!r}'
      )
    names = set(value)
    return lambda name: name in names
  if callable(value):
    return lambda name: bool(value(name))
  raise ConfigurationError(
    f'{where} must be a list of variable names, a regular expression or a '
    f'function of a name. Received: {where}={value!r}'
  )


def _rename(params: _keys.Params) -> dict[str, str]:
  value = params.get('load_param_dict')
  if value is None:
    return {}
  if not isinstance(value, dict):
    raise ConfigurationError(
      f'{params.where("load_param_dict")} must map checkpoint variable '
      'names to model variable names. Received: '
      f'{params.where("load_param_dict")}={value!r}'
    )
  return {str(k): str(v) for k, v in value.items()}
