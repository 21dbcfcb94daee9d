"""Task settings: the names of a multi-task model's tasks, and their sources.

A regression model with several target features learns one task per
target (Gematria's multi-task heads): one output each, the losses summed,
the metrics reported per task. `--task-names` names the tasks (in the
order of the targets; by default the targets' names), and
`--task-sources` gives, for data sets that read their targets from
measurements labelled by a source (Gematria's inverse throughputs), one
regular expression per task: each task's target is the measurement whose
source matches it at its start (Gematria's
`--gematria_throughput_source_filter`, given once per task).

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import dataclasses
import re
from typing import Any, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

# A task name becomes part of metric, output and summary names.
_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')


@dataclasses.dataclass(frozen=True)
class TaskSettings(_section.Section):
  """The tasks of a multi-task model.

  Example:
    >>> TaskSettings(names=('hsw', 'skl')).named(['y_hsw', 'y_skl'])
    ('hsw', 'skl')

  Attributes:
    names: the tasks' names (`--task-names`); empty for the targets'
      names.
    sources: one regular expression per task (`--task-sources`); empty
      when the data set's targets are its own fields.
  """

  names: Tuple[str, ...] = _section.listed(
    '--task-names',
    group='tasks',
    metavar='NAME',
    help="the names of a multi-task model's tasks, one per target "
    "feature in order (default: the targets' names; Gematria's "
    '--gematria_task_names): outputs value_NAME, metrics METRIC_NAME',
  )
  sources: Tuple[str, ...] = _section.listed(
    '--task-sources',
    group='tasks',
    metavar='REGEX',
    help="one regular expression per task: each task's target is the "
    'measurement whose source matches it at its start, for data sets '
    "that read such measurements (Gematria's several "
    '--gematria_throughput_source_filter)',
  )

  def __post_init__(self) -> None:
    for name in self.names:
      if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(
          'A task name must start with a letter or digit and hold only '
          'letters, digits, "_", "." and "-". Received: --task-names '
          f'{" ".join(map(str, self.names))}'
        )
    if len(set(self.names)) != len(self.names):
      raise ConfigurationError(
        f'Task names must differ. Received: --task-names {" ".join(self.names)}'
      )
    for source in self.sources:
      try:
        re.compile(source)
      except re.error as e:
        raise ConfigurationError(
          f'--task-sources: {source!r} is not a regular expression ({e}).'
        ) from None
    if self.names and self.sources and len(self.names) != len(self.sources):
      raise ConfigurationError(
        '--task-names must name as many tasks as --task-sources has '
        f'sources. Received: {len(self.names)} names '
        f'({" ".join(self.names)}), {len(self.sources)} sources'
      )

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the names and sources, together: the settings check them."""
    super().check(args)
    cls.from_args(args)

  @property
  def count(self) -> int:
    """How many tasks the flags describe (0: as many as the targets)."""
    return len(self.names or self.sources)

  def named(self, targets: Any) -> Tuple[str, ...]:
    """The task names of a model whose target features are `targets`.

    Raises:
      ConfigurationError: `--task-names` does not name one task per target,
        or `--task-sources` does not give one source per target.
    """
    targets = tuple(targets)
    if self.sources and len(self.sources) != len(targets):
      raise ConfigurationError(
        f'--task-sources gives {len(self.sources)} tasks, but the feature '
        f'set has {len(targets)} target feature(s) ({", ".join(targets)}): '
        'the data set must read one target per task (e.g. a ProtoFormat '
        'field with where/match per source, as samples/gematria does). '
        f'Received: --task-sources {" ".join(self.sources)}'
      )
    if not self.names:
      return targets
    if len(self.names) != len(targets):
      raise ConfigurationError(
        '--task-names must name one task per target feature '
        f'({", ".join(targets)}). Received: --task-names '
        f'{" ".join(self.names)}'
      )
    return self.names
