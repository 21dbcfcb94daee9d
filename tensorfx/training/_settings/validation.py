"""Validation settings: the targets, how often they run, early stopping."""

import argparse
import dataclasses
from typing import Any, Optional, Self, Tuple, Union, cast

from tensorfx._errors import ConfigurationError
from tensorfx.training._arguments import listflags as _listflags
from tensorfx.training._evaluation import slices as _slices
from tensorfx.training._evaluation import targets as _targets
from tensorfx.training._settings import _section


class TargetAction(argparse.Action):
  """`--eval-target NAME KEY=VALUE ...`: adds a named validation target.

  The targets are a dict from name to specification; a run configuration
  gives them as mappings under `validation` (see `from_config`), and the
  command line adds to them or replaces one by name.
  """

  # The run configuration section whose mapping-valued keys are targets.
  config_section = 'validation'

  def __call__(
    self,
    parser: argparse.ArgumentParser,
    namespace: argparse.Namespace,
    values: Any,
    option_string: str | None = None,
  ) -> None:
    name, spec = _targets.parse_flag(values)
    target = _targets.from_spec(name, spec, where=f'--eval-target {name}')
    targets = dict(getattr(namespace, self.dest, None) or {})
    targets[name] = _targets.to_spec(target)
    setattr(namespace, self.dest, targets)

  @staticmethod
  def from_config(name: str, spec: Any, where: str) -> Any:
    """Checks one target of a run configuration; returns its typed spec."""
    return _targets.to_spec(_targets.from_spec(name, spec, where=where))


def add_arguments(parser: argparse.ArgumentParser) -> None:
  job = _section.group(parser, 'job')
  job.add_argument(
    '--eval-batch-size',
    type=_section.batch_size,
    metavar='N',
    help='evaluation instances per step, or all (as many as '
    'the training data has) (default: --batch-size)',
  )
  validation = _section.group(parser, 'validation')
  _listflags.add_list_argument(
    validation,
    '--percentile-ranks',
    type=int,
    metavar='RANK',
    help='percentile ranks of the absolute and relative errors that '
    "regression models which collect them report (Gematria's "
    '--gematria_collected_percentile_ranks; tensorfx.training.'
    'error_percentiles)',
  )
  validation.add_argument(
    '--eval-batches',
    type=int,
    metavar='N',
    help='batches of --data-eval per validation (default: all of it)',
  )
  validation.add_argument(
    '--eval-online-agg',
    type=str.lower,
    choices=_targets.ONLINE_AGGREGATIONS,
    default='mean',
    help="how --data-eval's batch results combine: "
    'mean streams the metrics over all batches; sum, '
    'min, max combine per-batch results; append '
    'keeps them for --eval-agg (default: '
    '%(default)s)',
  )
  validation.add_argument(
    '--eval-agg',
    type=str.lower,
    choices=_targets.FINAL_AGGREGATIONS,
    help="how --eval-online-agg append's per-batch "
    'results reduce to one (default: mean)',
  )
  validation.add_argument(
    '--eval-target',
    dest='eval_targets',
    action=TargetAction,
    nargs='+',
    metavar='NAME KEY=VALUE',
    help='another validation target: NAME, then '
    "data=PATHS (default: the dataset's source "
    'NAME), batches=N, batch_size=N, online_agg=, '
    'agg=; repeatable',
  )
  validation.add_argument(
    '--eval-slices',
    action='append',
    metavar='FIELD[,FIELD...]',
    help='also evaluate per value of these raw fields '
    "(a discrete field's values, a numeric field's "
    'buckets); FIELD1*FIELD2 crosses two; repeatable '
    '(default: no slices)',
  )
  validation.add_argument(
    '--eval-slice-min-examples',
    type=int,
    default=10,
    metavar='N',
    help='flag slices with fewer examples (default: %(default)s)',
  )
  validation.add_argument(
    '--eval-interval-steps',
    type=int,
    metavar='N',
    help='steps between validations (default: after each checkpoint)',
  )
  validation.add_argument(
    '--validate-first',
    action=argparse.BooleanOptionalAction,
    default=False,
    help='validate before the first training step (default: off)',
  )
  validation.add_argument(
    '--early-stopping-patience',
    type=int,
    metavar='N',
    help='stop training when --best-metric has not '
    'improved for N validations in a row; the best '
    'checkpoint is kept and its model exported '
    '(default: never stop early)',
  )
  validation.add_argument(
    '--early-stopping-min-delta',
    type=float,
    default=0.0,
    metavar='D',
    help='the least change of --best-metric that '
    'counts as an improvement (default: %(default)s)',
  )


def check(args: Any) -> None:
  _section.check_batch_size(args, 'eval_batch_size', optional=True)
  _section.check_positive(args, 'eval_batches', optional=True)
  _section.check_positive(args, 'eval_interval_steps', optional=True)
  _section.check_positive(args, 'eval_slice_min_examples', optional=True)
  if _section.read(args, 'eval_slices'):
    _slices.parse(_section.read(args, 'eval_slices'))
  _section.check_positive(args, 'early_stopping_patience', optional=True)
  _section.check_not_negative(args, 'early_stopping_min_delta')
  if hasattr(args, 'eval_online_agg'):
    try:
      _targets.ValidationTarget(
        _targets.DEFAULT,
        online_agg=args.eval_online_agg or 'mean',
        agg=getattr(args, 'eval_agg', None),
      )
    except ConfigurationError as e:
      raise ConfigurationError(
        f'{e} (flags --eval-online-agg, --eval-agg)'
      ) from None
  for name, spec in (_section.read(args, 'eval_targets') or {}).items():
    if not isinstance(spec, _targets.ValidationTarget):
      _targets.from_spec(name, spec, where=f'--eval-target {name}')


@dataclasses.dataclass(frozen=True)
class ValidationSettings:
  """What is validated, how often, and when validation stops training.

  Attributes:
    targets: the `ValidationTarget`s besides the default one
      (`--eval-target`, run.yaml's `validation` mappings), in order.
    batch_size: evaluation instances per batch (`--eval-batch-size`);
      `'all'` until the graphs are built (then the training data's size).
    batches: batches of the default target per validation
      (`--eval-batches`); None for all of it.
    online_agg: how the default target's batch results combine
      (`--eval-online-agg`).
    agg: how `append`'s per-batch results reduce (`--eval-agg`).
    interval_steps: steps between validations (`--eval-interval-steps`);
      None validates after each checkpoint.
    validate_first: validate before the first step (`--validate-first`).
    early_stopping_patience: validations without improvement of the best
      metric before training stops (`--early-stopping-patience`); None
      never stops early.
    early_stopping_min_delta: the least improvement that counts
      (`--early-stopping-min-delta`).
    slices: the `--eval-slices` values (`FIELD[,FIELD...]`, crosses
      `A*B`); empty for no sliced evaluation.
    slice_min_examples: slices with fewer examples are flagged
      (`--eval-slice-min-examples`).
  """

  targets: Tuple[_targets.ValidationTarget, ...] = ()
  batch_size: Union[int, str, None] = None
  batches: Optional[int] = None
  online_agg: object = 'mean'
  agg: object = None
  interval_steps: Optional[int] = None
  validate_first: bool = False
  early_stopping_patience: Optional[int] = None
  early_stopping_min_delta: float = 0.0
  slices: Tuple[str, ...] = ()
  slice_min_examples: int = 10

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    targets = tuple(
      spec
      if isinstance(spec, _targets.ValidationTarget)
      else _targets.from_spec(name, spec)
      for name, spec in (read(args, 'eval_targets') or {}).items()
    )
    return cls(
      targets=targets,
      batch_size=read(args, 'eval_batch_size', read(args, 'batch_size')),
      batches=read(args, 'eval_batches'),
      online_agg=read(args, 'eval_online_agg', 'mean'),
      agg=read(args, 'eval_agg'),
      interval_steps=read(args, 'eval_interval_steps'),
      validate_first=bool(read(args, 'validate_first', False)),
      early_stopping_patience=read(args, 'early_stopping_patience'),
      early_stopping_min_delta=float(
        read(args, 'early_stopping_min_delta', 0.0)
      ),
      slices=_slices_value(read(args, 'eval_slices')),
      slice_min_examples=int(read(args, 'eval_slice_min_examples', 10)),
    )

  def all_targets(self, has_eval: bool) -> list[Any]:
    """Every target, the default (the dataset's `eval` source) first.

    Args:
      has_eval: whether the dataset has an `eval` source; without one
        there is no default target.
    """
    default: tuple[Any, ...] = ()
    if has_eval:
      # 'all' is resolved when the graphs are built; None reads it then.
      batch_size: Any = (
        None if self.batch_size == _section.ALL else self.batch_size
      )
      default = (
        _targets.ValidationTarget(
          _targets.DEFAULT,
          batches=self.batches,
          batch_size=batch_size,
          online_agg=cast(Any, self.online_agg or 'mean'),
          agg=cast(Any, self.agg),
        ),
      )
    return list(default + self.targets)


def _slices_value(value: Any) -> tuple[Any, ...]:
  """`--eval-slices` as a tuple (a run configuration may give one string)."""
  if not value:
    return ()
  return (value,) if isinstance(value, str) else tuple(value)
