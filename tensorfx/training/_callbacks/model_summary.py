"""Model summary: the variables, their parameter counts and placement."""

import collections
import re
from typing import Any, Mapping, Sequence

import tensorflow as tf

from tensorfx import _logging
from tensorfx._logging import logger
from tensorfx.training import _builderbase
from tensorfx.training._callbacks import base


def summarize(builder: Any, engine: Any) -> list['Group']:
  """The model's variable groups, for `ModelSummaryCallback`.

  A group is a layer: the variables that share a name but for its last
  part (`hidden1/kernel` and `hidden1/bias` are `hidden1`); the shards of
  a partitioned variable (`.../part_0`, `.../part_1`) are one variable.

  Example:
    >>> [(g.name, g.parameters) for g in summarize(builder, engine)]
    [('hidden1', 40), ('output', 27)]

  Returns:
    A list of `Group`s in the order their first variable was created.
  """
  groups: collections.OrderedDict[str, Any] = collections.OrderedDict()
  variables = engine.warm_start_variables(
    builder, _builderbase.made_optimizers(builder)
  )
  for variable in variables:
    name = re.sub(r':\d+$', '', variable.name)
    shard = re.match(r'^(.*)/part_\d+$', name)
    if shard:
      name = shard.group(1)
    layer, _, short = name.rpartition('/')
    group = groups.setdefault(layer or name, Group(layer or name))
    group.add(short, variable, shard=bool(shard))
  return list(groups.values())


class Group:
  """A layer's variables: parameter counts, shapes and devices."""

  def __init__(self, name: str) -> None:
    self.name = name
    self.parameters = 0
    self.trainable = 0
    self.shapes: collections.OrderedDict[str, list[Any]] = (
      collections.OrderedDict()
    )
    self.devices: list[str] = []

  def add(self, short: str, variable: Any, shard: bool = False) -> None:
    """Adds a variable (`shard`: one more part of a partitioned one)."""
    count = int(variable.shape.num_elements() or 0)
    self.parameters += count
    if variable.trainable:
      self.trainable += count
    shape = variable.shape.as_list()
    if short in self.shapes and shard and shape:
      # Another shard: rows add up.
      previous = self.shapes[short]
      shape = [previous[0] + shape[0]] + shape[1:]
    elif short in self.shapes:
      # Another variable of the same name (unnamed ones are `Variable`).
      short = _unique(short, self.shapes)
    self.shapes[short] = shape
    for device in _devices(variable):
      if device not in self.devices:
        self.devices.append(device)


def _unique(name: str, taken: Mapping[str, Any]) -> str:
  index = 1
  while f'{name}_{index}' in taken:
    index += 1
  return f'{name}_{index}'


def _devices(variable: Any) -> list[str]:
  """The short names of the devices holding `variable` (each replica's)."""
  values = getattr(variable, 'values', None)
  variables = values if isinstance(values, (list, tuple)) else (variable,)
  return [_short_device(v.device) for v in variables]


def _short_device(device: str) -> str:
  """'/job:ps/replica:0/task:1/device:CPU:0' -> 'ps:1/CPU:0'."""
  if not device:
    return 'default'
  spec = tf.DeviceSpec.from_string(device)
  where = (
    f'{spec.device_type}:{spec.device_index or 0}' if spec.device_type else ''
  )
  if spec.job and spec.job != 'localhost':
    return f'{spec.job}:{spec.task or 0}' + (f'/{where}' if where else '')
  return where or device


def _shape(shape: Sequence[Any]) -> str:
  return 'x'.join(str(d) for d in shape) or 'scalar'


class ModelSummaryCallback(base.Callback):
  """Logs the model's variables once, before the first training step.

  One line per variable group (a layer): its parameter count, its
  variables' shapes and the devices they are placed on (each replica's
  device under mirrored strategies; the parameter server of each shard
  under parameter servers); then the total, trainable and not, and the
  optimizers' state. Written to TensorBoard's Text tab too
  (`summaries/train`, `model_summary`). The chief of a training run only.
  """

  def on_train_begin(self, logs: dict[str, Any]) -> None:
    context = self.context
    if not context.chief or context.role != 'train':
      return
    lines = self.lines(context.builder, context.engine)
    for line in lines:
      logger.info('%s', line)
    if context.summaries is not None:
      context.summaries.text(
        'train',
        logs['step'],
        'model_summary',
        '\n'.join(['```'] + lines + ['```']),
      )

  @staticmethod
  def lines(builder: Any, engine: Any) -> list[str]:
    """The summary's lines (without logging them)."""
    groups = summarize(builder, engine)
    strategy = type(builder.strategy).__name__
    if strategy.startswith('_Default'):
      strategy = 'the default strategy'
    rows = [
      (
        g.name,
        f'{g.parameters:,}',
        ', '.join(f'{k} {_shape(s)}' for k, s in g.shapes.items()),
        ', '.join(sorted(g.devices)),
      )
      for g in groups
    ]
    header = ('group', 'parameters', 'variables', 'placement')
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]

    def row(cells: Sequence[str]) -> str:
      return (
        f'  {cells[0]:<{widths[0]}}  {cells[1]:>{widths[1]}}  '
        f'{cells[2]:<{widths[2]}}  {cells[3]}'
      ).rstrip()

    total = sum(g.parameters for g in groups)
    trainable = sum(g.trainable for g in groups)
    lines = [
      f'Model {type(builder).__name__} under {strategy}: '
      f'{_logging.counted(len(groups), "variable group")}',
      row(header),
    ]
    lines += [row(r) for r in rows]
    lines.append(
      f'  total {total:,} parameters ({trainable:,} trainable, '
      f'{total - trainable:,} not)'
    )
    state = _optimizer_state(builder, engine)
    if state:
      lines.append(f'  optimizer state {state:,} values (not parameters)')
    return lines


def _optimizer_state(builder: Any, engine: Any) -> int:
  """The values the optimizers keep (slots, iterations)."""
  optimizers = [
    engine.training_optimizer,
    *_builderbase.made_optimizers(builder),
  ]
  total, seen = 0, set()
  for optimizer in optimizers:
    if optimizer is None or id(optimizer) in seen:
      continue
    seen.add(id(optimizer))
    variables = getattr(optimizer, 'variables', ())
    for variable in variables() if callable(variables) else variables:
      total += int(variable.shape.num_elements() or 0)
  return total
