"""`load_params['query']`: tfutils' MongoDB queries, on the MLflow store.

tfutils found the checkpoint to load with a MongoDB query over its
records (`{'exp_id': 'run1', 'saved_filters': True}`, `{'step': {'$gte':
1000}}`, `{'params.model_params.hidden': 16}`) and took the latest match.
The same queries select here among the checkpoints of the experiments
the MLflow store recorded:

| query key | matched against |
| --- | --- |
| `exp_id` | the run's exp_id (tag `tfutils.exp_id`) |
| `step` | the checkpoint's global step |
| `saved_filters` | True: only the checkpoints kept for good (`checkpoints/saved/`) |
| `params.DICT.KEY` (or `DICT.KEY`, e.g. `model_params.hidden`) | the recorded parameter `tfutils.DICT.KEY` |
| `tags.NAME` | the run's tag NAME |

A value is matched for equality, or is a dict of operators: `$eq`,
`$gt`, `$gte`, `$lt`, `$lte`, `$in`. Equalities (and `$in` on the
exp_id) go into the store's search; ranges compare numbers. Other keys and
operators (`$or`, `$regex`, `$ne`, ...) are refused by name.
"""

from collections.abc import Sequence
import dataclasses
import os
import re
from typing import Any

from tensorfx._errors import ConfigurationError

OPERATORS = ('$eq', '$gt', '$gte', '$lt', '$lte', '$in')
_PARAMS_DICTS = (
  'save_params',
  'model_params',
  'train_params',
  'loss_params',
  'learning_rate_params',
  'optimizer_params',
  'validation_params',
  'load_params',
)
_CHECKPOINT = re.compile(r'^ckpt-(\d+)\.index$')

# (operator, operand) pairs a value must satisfy.
Conditions = tuple[tuple[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class Query:
  """A parsed tfutils query.

  Example:
    >>> query = Query.parse({'exp_id': 'run1', 'step': {'$gte': 100}},
    ...                     "load_params['query']")
    >>> query.matches_step(200, saved=False)
    True

  Attributes:
    exp_id: conditions on the exp_id (empty: the load location's).
    step: conditions on the checkpoint's step.
    saved_filters: True to look only among checkpoints kept for good.
    fields: `(kind, name, conditions)`: kind 'params' (name without the
      `tfutils.` prefix) or 'tags'.
  """

  exp_id: Conditions = ()
  step: Conditions = ()
  saved_filters: bool = False
  fields: tuple[tuple[str, str, Conditions], ...] = ()

  @classmethod
  def parse(cls, query: dict[str, Any], where: str) -> 'Query':
    """Reads a MongoDB-style query dict.

    Raises:
      ConfigurationError: a key or an operator that has no equivalent
        here, naming it and what is supported.
    """
    exp_id: Conditions = ()
    step: Conditions = ()
    saved = False
    fields = []
    for key, value in query.items():
      at = f'{where}[{key!r}]'
      if not isinstance(key, str) or key.startswith('$'):
        raise ConfigurationError(
          f'{at}: top-level operators ($or, $and, ...) have no '
          "equivalent in the store's search; give each field its "
          f'conditions. Supported fields: {_SUPPORTED}.'
        )
      if key == 'exp_id':
        exp_id = _conditions(value, at)
      elif key == 'step':
        step = _conditions(value, at)
        for _, operand in step:
          for number in operand if isinstance(operand, list) else [operand]:
            if isinstance(number, bool) or not isinstance(number, int):
              raise ConfigurationError(
                f'{at}: steps are integers. Received: {value!r}'
              )
      elif key == 'saved_filters':
        if not isinstance(value, bool):
          raise ConfigurationError(
            f'{at} must be True or False. Received: {value!r}'
          )
        saved = value
      elif key.startswith('tags.'):
        fields.append(('tags', key[len('tags.') :], _conditions(value, at)))
      elif key.startswith('params.') or key.split('.')[0] in _PARAMS_DICTS:
        name = key.removeprefix('params.')
        fields.append(('params', name, _conditions(value, at)))
      else:
        raise ConfigurationError(
          f'{at}: the store records no such field. Supported fields: '
          f'{_SUPPORTED}.'
        )
    return cls(
      exp_id=exp_id, step=step, saved_filters=saved, fields=tuple(fields)
    )

  @property
  def exact_step(self) -> int | None:
    """The step asked for with an equality alone, else None."""
    if len(self.step) == 1 and self.step[0][0] == '$eq':
      return self.step[0][1]
    return None

  def filters(self, exp_id: str) -> list[str]:
    """The store search's conditions: exp_id and equalities of fields."""
    conditions = ["tags.`tensorfx.action` = 'train'"]
    exp_ids = self.exp_ids(exp_id)
    if exp_ids is not None:
      quoted = ', '.join(_quote(e) for e in exp_ids)
      conditions.append(
        f'tags.`tfutils.exp_id` IN ({quoted})'
        if len(exp_ids) > 1
        else f'tags.`tfutils.exp_id` = {_quote(exp_ids[0])}'
      )
    for kind, name, conds in self.fields:
      for op, operand in conds:
        if op == '$eq':
          key = f'tfutils.{name}' if kind == 'params' else name
          conditions.append(f'{kind}.`{key}` = {_quote(_text(operand))}')
    return conditions

  def exp_ids(self, default: str) -> list[str] | None:
    """The exp_ids searched (None: any the exp_id conditions allow)."""
    if not self.exp_id:
      return [default]
    for op, operand in self.exp_id:
      if op == '$eq':
        return [operand]
      if op == '$in':
        return list(operand)
    return None

  def matches_run(self, params: dict[str, str], tags: dict[str, str]) -> bool:
    """Whether a recorded run satisfies every field's conditions."""
    if not _satisfies(tags.get('tfutils.exp_id'), self.exp_id):
      return False
    for kind, name, conds in self.fields:
      recorded = (
        params.get(f'tfutils.{name}') if kind == 'params' else tags.get(name)
      )
      if not _satisfies(recorded, conds):
        return False
    return True

  def matches_step(self, step: int, saved: bool) -> bool:
    """Whether a checkpoint of `step` (`saved`: kept for good) matches."""
    if self.saved_filters and not saved:
      return False
    return _satisfies(step, self.step)


def checkpoints(output: str) -> list[tuple[int, bool, str]]:
  """`(step, saved, prefix)` of every checkpoint in an experiment's output."""
  import tensorflow as tf

  found = {}
  directory = os.path.join(output, 'checkpoints')
  for saved, folder in (
    (False, directory),
    (True, os.path.join(directory, 'saved')),
  ):
    if not tf.io.gfile.isdir(folder):
      continue
    for name in tf.io.gfile.listdir(folder):
      match = _CHECKPOINT.match(name)
      if match:
        step = int(match.group(1))
        # A step kept for good is also among the recent ones: saved wins.
        if saved or step not in found:
          found[step] = (step, saved, os.path.join(folder, f'ckpt-{step}'))
  return sorted(found.values())


def latest_match(query: Query, outputs: Sequence[str], where: str) -> str:
  """The latest checkpoint matching `query` among experiments' outputs.

  Args:
    query: the `Query`.
    outputs: the output directories of the runs that matched, newest
      first.
    where: the query's path, for the error.

  Raises:
    ConfigurationError: no checkpoint matches.
  """
  for output in outputs:
    matching = [
      c for c in checkpoints(output) if query.matches_step(c[0], c[1])
    ]
    if matching:
      return matching[-1][2]
  looked = ', '.join(outputs) or 'no recorded experiment matched'
  raise ConfigurationError(
    f'{where}: no checkpoint matches the query (looked in {looked}).'
  )


_SUPPORTED = (
  'exp_id, step, saved_filters, params.DICT.KEY (recorded '
  "parameters, e.g. 'params.model_params.hidden'), tags.NAME; "
  'each equal to a value or given $eq, $gt, $gte, $lt, $lte, '
  '$in'
)


def _conditions(value: Any, where: str) -> Conditions:
  if not isinstance(value, dict):
    return (('$eq', value),)
  conditions = []
  for op, operand in value.items():
    if op not in OPERATORS:
      raise ConfigurationError(
        f"{where}[{op!r}]: the operator has no equivalent in the store's "
        f'search; use one of {", ".join(OPERATORS)}.'
      )
    if op == '$in' and not isinstance(operand, (list, tuple)):
      raise ConfigurationError(
        f'{where}[{op!r}] must be a list. Received: {operand!r}'
      )
    conditions.append((op, list(operand) if op == '$in' else operand))
  return tuple(conditions)


def _satisfies(recorded: Any, conditions: Conditions) -> bool:
  for op, operand in conditions:
    if recorded is None:
      return False
    if op == '$eq' and not _equal(recorded, operand):
      return False
    if op == '$in' and not any(_equal(recorded, o) for o in operand):
      return False
    if op in ('$gt', '$gte', '$lt', '$lte'):
      left, right = _number(recorded), _number(operand)
      if left is None or right is None:
        return False
      if not {
        '$gt': left > right,
        '$gte': left >= right,
        '$lt': left < right,
        '$lte': left <= right,
      }[op]:
        return False
  return True


def _equal(recorded: Any, operand: Any) -> bool:
  if isinstance(recorded, str) and not isinstance(operand, str):
    return recorded == _text(operand) or (
      _number(recorded) is not None and _number(recorded) == _number(operand)
    )
  return bool(recorded == operand)


def _number(value: Any) -> float | None:
  if isinstance(value, bool):
    return None
  try:
    return float(value)
  except (TypeError, ValueError):
    return None


def _text(value: Any) -> str:
  """A value as the store records parameters."""
  if isinstance(value, bool):
    return str(value)
  return str(value)


def _quote(value: Any) -> str:
  text = str(value)
  if "'" in text:
    raise ConfigurationError(
      f'A query value cannot hold a single quote. Received: {text!r}'
    )
  return f"'{text}'"
