"""The job arguments a params call translates to.

`train_from_params` runs the same trainer as a command-line job, so its
dictionaries become `ModelArguments` (what `job.yaml` and the MLflow
parameters record); the dictionaries themselves are recorded too, under
`tfutils` (the parameters `tfutils.model_params.func`,
`tfutils.model_params.hidden`, ...), functions named by module and name.
"""

import dataclasses
from typing import Any, Iterable, Self

from tensorfx.tfutils import _keys
from tensorfx.training.internal import ModelArguments


class ParamsArguments(ModelArguments):
  """The arguments of a `train_from_params` or `test_from_params` job.

  Example:
    >>> args = ParamsArguments.make(['--batch-size', '32'], targets,
    ...                             {'model_params': {'func': 'm.f'}})
    >>> args.to_dict()['tfutils']['model_params']['func']
    'm.f'
  """

  @classmethod
  def make(
    cls,
    flags: list[str],
    targets: Iterable[Any],
    description: dict[str, Any],
  ) -> Self:
    """Parses `flags`, then adds the validation targets and the record.

    Args:
      flags: trainer flags (strings).
      targets: the `ValidationTarget`s (they carry functions, which no
        flag can).
      description: the params dicts, described (see `_keys.describe`).
    """
    args = cls.parse(flags)
    args.eval_targets = {target.name: target for target in targets}
    args.params = description
    args.process()
    return args

  def to_dict(self) -> dict[str, Any]:
    result = super().to_dict()
    # The targets as their dictionaries said, without function addresses.
    result['eval_targets'] = {
      name: {
        k: _keys.describe(v) for k, v in _fields(target).items() if k != 'name'
      }
      for name, target in (getattr(self, 'eval_targets', None) or {}).items()
    }
    result['tfutils'] = getattr(self, 'params', {})
    return result


def _fields(target: Any) -> dict[str, Any]:
  """The fields of a `ValidationTarget` that differ from the defaults."""
  return {
    f.name: getattr(target, f.name)
    for f in dataclasses.fields(target)
    if getattr(target, f.name) != f.default
  }
