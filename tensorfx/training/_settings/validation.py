"""Validation settings: the targets, how often they run, early stopping."""

import argparse
from collections.abc import Sequence
import dataclasses
from typing import Any, Optional, Self, Tuple, Union, cast

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section
from tensorfx.training._settings import targets as _targets


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


def _check_targets(name: str, specs: Any) -> None:
  for target, spec in (specs or {}).items():
    if not isinstance(spec, _targets.ValidationTarget):
      _targets.from_spec(target, spec, where=f'--eval-target {target}')


def _targets_of(specs: Any) -> Tuple[_targets.ValidationTarget, ...]:
  """`--eval-target`'s specifications, by name, as targets in order."""
  return tuple(
    spec
    if isinstance(spec, _targets.ValidationTarget)
    else _targets.from_spec(name, spec)
    for name, spec in (specs or {}).items()
  )


def _slices_value(value: Any) -> tuple[Any, ...]:
  """`--eval-slices` as a tuple (a run configuration may give one string)."""
  if not value:
    return ()
  return (value,) if isinstance(value, str) else tuple(value)


def _check_slices(name: str, value: Any) -> None:
  if value:
    parse_slices(value)


# The flags in --help's (and --print-config's) order, which is older than
# the fields' (repr's).
_ORDER = (
  '--eval-batch-size',
  '--percentile-ranks',
  '--eval-batches',
  '--eval-online-agg',
  '--eval-agg',
  '--eval-target',
  '--eval-slices',
  '--eval-slice-min-examples',
  '--eval-interval-steps',
  '--validate-first',
  '--early-stopping-patience',
  '--early-stopping-min-delta',
)


@dataclasses.dataclass(frozen=True)
class ValidationSettings(_section.Section):
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

  targets: Tuple[_targets.ValidationTarget, ...] = _section.unset(
    '--eval-target',
    group='validation',
    dest='eval_targets',
    action=TargetAction,
    nargs='+',
    metavar='NAME KEY=VALUE',
    value={},
    convert=_targets_of,
    check=_check_targets,
    help='another validation target: NAME, then '
    "data=PATHS (default: the dataset's source "
    'NAME), batches=N, batch_size=N, online_agg=, '
    'agg=; repeatable',
  )
  batch_size: Union[int, str, None] = _section.setting(
    '--eval-batch-size',
    group='job',
    type=_section.batch_size,
    metavar='N',
    check=_section.positive_or_all,
    help='evaluation instances per step, or all (as many as '
    'the training data has) (default: --batch-size)',
  )
  batches: Optional[int] = _section.setting(
    '--eval-batches',
    group='validation',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='batches of --data-eval per validation (default: all of it)',
  )
  online_agg: object = _section.setting(
    '--eval-online-agg',
    group='validation',
    type=str.lower,
    choices=_targets.ONLINE_AGGREGATIONS,
    default='mean',
    help="how --data-eval's batch results combine: "
    'mean streams the metrics over all batches; sum, '
    'min, max combine per-batch results; append '
    'keeps them for --eval-agg (default: '
    '%(default)s)',
  )
  agg: object = _section.setting(
    '--eval-agg',
    group='validation',
    type=str.lower,
    choices=_targets.FINAL_AGGREGATIONS,
    help="how --eval-online-agg append's per-batch "
    'results reduce to one (default: mean)',
  )
  interval_steps: Optional[int] = _section.setting(
    '--eval-interval-steps',
    group='validation',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='steps between validations (default: after each checkpoint)',
  )
  validate_first: bool = _section.setting(
    '--validate-first',
    group='validation',
    action=argparse.BooleanOptionalAction,
    default=False,
    convert=bool,
    help='validate before the first training step (default: off)',
  )
  early_stopping_patience: Optional[int] = _section.setting(
    '--early-stopping-patience',
    group='validation',
    type=int,
    metavar='N',
    check=_section.positive(),
    help='stop training when --best-metric has not '
    'improved for N validations in a row; the best '
    'checkpoint is kept and its model exported '
    '(default: never stop early)',
  )
  early_stopping_min_delta: float = _section.setting(
    '--early-stopping-min-delta',
    group='validation',
    type=float,
    default=0.0,
    metavar='D',
    convert=float,
    check=_section.optional(_section.not_negative),
    help='the least change of --best-metric that '
    'counts as an improvement (default: %(default)s)',
  )
  slices: Tuple[str, ...] = _section.unset(
    '--eval-slices',
    group='validation',
    action='append',
    metavar='FIELD[,FIELD...]',
    convert=_slices_value,
    check=_check_slices,
    help='also evaluate per value of these raw fields '
    "(a discrete field's values, a numeric field's "
    'buckets); FIELD1*FIELD2 crosses two; repeatable '
    '(default: no slices)',
  )
  slice_min_examples: int = _section.setting(
    '--eval-slice-min-examples',
    group='validation',
    type=int,
    default=10,
    metavar='N',
    convert=int,
    check=_section.optional(_section.positive()),
    help='flag slices with fewer examples (default: %(default)s)',
  )

  # Read by the models that report error percentiles (args.percentile_ranks).
  EXTRA_FLAGS = (
    _section.Flag(
      ('--percentile-ranks',),
      'validation',
      dict(
        type=int,
        metavar='RANK',
        **_section.list_options(
          '--percentile-ranks',
          help='percentile ranks of the absolute and relative errors '
          "that regression models which collect them report (Gematria's "
          '--gematria_collected_percentile_ranks; tensorfx.training.'
          'error_percentiles)',
        ),
      ),
    ),
  )

  @classmethod
  def ordered_flags(cls) -> list[_section.Flag]:
    # Added to the parser, and checked, in --help's order.
    return sorted(
      super().ordered_flags(), key=lambda flag: _ORDER.index(flag.names[0])
    )

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks each flag, and --eval-online-agg with --eval-agg."""
    super().check(args)
    if hasattr(args, 'eval_online_agg'):
      try:
        _targets.ValidationTarget(
          _targets.DEFAULT,
          online_agg=_section.read(args, 'eval_online_agg', cls.online_agg),
          agg=_section.read(args, 'eval_agg'),
        )
      except ConfigurationError as e:
        raise ConfigurationError(
          f'{e} (flags --eval-online-agg, --eval-agg)'
        ) from None

  @classmethod
  def from_args(cls, args: Any) -> Self:
    """The settings; --eval-batch-size defaults to --batch-size."""
    settings = super().from_args(args)
    if settings.batch_size is None:
      return dataclasses.replace(
        settings, batch_size=_section.read(args, 'batch_size')
      )
    return settings

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


def parse_slices(specs: Sequence[str]) -> list[tuple[str, ...]]:
  """Parses `--eval-slices` values into tuples of field names.

  Example:
    >>> parse_slices(['species,petal_length*species'])
    [('species',), ('petal_length', 'species')]

  Raises:
    ConfigurationError: an empty field name.
  """
  parsed = []
  for spec in specs or ():
    for item in str(spec).split(','):
      fields = tuple(f.strip() for f in item.split('*'))
      if not all(fields):
        raise ConfigurationError(
          '--eval-slices expects FIELD[,FIELD...] with FIELD1*FIELD2 for '
          f'a cross (e.g. species,color*size). Received: {spec!r}'
        )
      if fields not in parsed:
        parsed.append(fields)
  return parsed
