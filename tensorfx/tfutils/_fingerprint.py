"""A model's fingerprint: is this the model an experiment was trained with?

tfutils resumed an `exp_id` from its latest checkpoint and failed when the
model had changed. A checkpoint only shows that variables differ; the
fingerprint also catches a model function called with other arguments
(another activation, another dropout) whose variables look the same: the
model function's name, its keyword arguments and its variables' names,
shapes and types, recorded with the run.
"""

import hashlib
import json
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from tensorfx._errors import ConfigurationError
from tensorfx.training import internal as _training

if TYPE_CHECKING:
  from tensorfx.tfutils import _functions


def fingerprint(
  model: '_functions.Model', variables: Iterable[Any]
) -> dict[str, Any]:
  """The fingerprint of `model` (`_functions.Model`) with `variables`.

  Example:
    >>> fingerprint(model, builder.model_variables.created)['variables'][0]
    ['fc1/kernel', [4, 8], 'float32']

  Returns:
    A dict: `func`, `kwargs`, `variables` and `digest` (a hash of them).
  """
  described = model.function.describe()
  record: dict[str, Any] = {
    'func': described.pop('func'),
    'kwargs': described,
    'variables': [
      [_training.checkpoints.variable_name(v), v.shape.as_list(), v.dtype.name]
      for v in variables
    ],
  }
  text = json.dumps(record, sort_keys=True)
  record['digest'] = hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]
  return record


def check_function(
  recorded: Optional[dict[str, Any]],
  model: '_functions.Model',
  exp_id: str,
  where: str,
) -> None:
  """Like `check`, for the model function and arguments only.

  What can be compared before the model is built: a call with other
  arguments fails before anything of the experiment is touched.
  """
  if not recorded:
    return
  described = model.function.describe()
  current = {'func': described.pop('func'), 'kwargs': described}
  if current == {
    'func': recorded.get('func'),
    'kwargs': recorded.get('kwargs'),
  }:
    return
  check(
    {k: recorded.get(k) for k in ('func', 'kwargs', 'digest')},
    dict(current, variables=[], digest=None),
    exp_id,
    where,
  )


def check(
  recorded: Optional[dict[str, Any]],
  current: dict[str, Any],
  exp_id: str,
  where: str,
) -> None:
  """Raises unless `current` is the model `recorded` for the experiment.

  Args:
    recorded: the fingerprint the experiment recorded (None: nothing to
      compare with).
    current: this model's fingerprint.
    exp_id: the experiment id.
    where: where the record is, for the message.

  Raises:
    ConfigurationError: naming what differs.
  """
  if not recorded or recorded.get('digest') == current['digest']:
    return
  differences = []
  if recorded.get('func') != current['func']:
    differences.append(
      f'the model function is {current["func"]}, was {recorded.get("func")}'
    )
  old, new = recorded.get('kwargs') or {}, current['kwargs']
  for key in sorted(set(old) | set(new)):
    if old.get(key) != new.get(key):
      differences.append(
        f'model_params[{key!r}] is {new.get(key)!r}, was {old.get(key)!r}'
      )
  old_variables = {v[0]: v[1:] for v in recorded.get('variables') or ()}
  new_variables = {v[0]: v[1:] for v in current['variables']}
  for name in sorted(set(old_variables) | set(new_variables)):
    if old_variables.get(name) != new_variables.get(name):
      differences.append(
        f'variable {name!r} is {_shape(new_variables.get(name))}, was '
        f'{_shape(old_variables.get(name))}'
      )
  raise ConfigurationError(
    f'exp_id {exp_id!r} was trained with another model ({where}): '
    f'{"; ".join(differences) or "its fingerprint differs"}. Give this '
    'model a new exp_id (to start it, or to load the old one with '
    "load_params={'exp_id': ...}), or call with the model the experiment "
    'was trained with to resume it.'
  )


def _shape(entry: Optional[Sequence[Any]]) -> str:
  if entry is None:
    return 'absent'
  return f'{entry[1]} {entry[0]}'
