"""Warm start: a fresh model's variables from another run's checkpoint.

Variables are matched by name (`hidden1/kernel`, the variable's name
without `:0`), not by object path, so a checkpoint of a different model, or
one written by another program, can seed the variables the two share:

- `--warm-start PATH`: a checkpoint prefix (`.../ckpt-200`), a directory of
  checkpoints (its latest), or a job output directory (its `checkpoints/`);
- `--restore-pattern REGEX`: only the model variables whose names match
  (`re.search`); the others keep their initial values;
- `--restore-rename CKPT=MODEL ...`: the checkpoint's variable `CKPT` gives
  the model's `MODEL`;
- `--restore-global-step`: restore the step too (default: start at 0).

Optimizer slots and evaluation metrics are never warm-started: a warm start
begins a new optimization. TensorFlow 2 checkpoints record each variable's
name in their object graph; a name-based checkpoint (TensorFlow 1) is read
by its keys, which are the names.

TensorFlow is imported by the functions that need it: the arguments check
`--restore-pattern` and `--restore-rename` with this module while parsing.
"""

import os
import re
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger

_OBJECT_GRAPH = '_CHECKPOINTABLE_OBJECT_GRAPH'


def resolve_checkpoint(path, what='--warm-start', move_damaged=False):
  """The readable checkpoint prefix that `path` (prefix, file, dir) means.

  A directory means its newest readable checkpoint: damaged newer ones are
  logged (and, with `move_damaged`, moved aside: the job's own
  checkpoints, not another run's). A prefix must be readable.

  Example:
    >>> resolve_checkpoint('/tmp/job')      # a job output directory
    '/tmp/job/checkpoints/ckpt-200'

  Raises:
    ConfigurationError: naming `what` and `path`, when there is none.
    TrainingError: the checkpoint named, or every one in the directory, is
      damaged.
  """
  import tensorflow as tf

  from tensorfx.training._checkpoints import damaged as _damaged

  path = str(path).rstrip('/')
  if path.endswith('.index'):
    path = path[: -len('.index')]
  match = re.match(r'^(.*)\.data-\d+-of-\d+$', path)
  if match:
    path = match.group(1)
  if tf.io.gfile.exists(path + '.index'):
    _damaged.check(path, what)
    return path
  if tf.io.gfile.isdir(path):
    for directory in (path, os.path.join(path, 'checkpoints')):
      latest = _damaged.newest_readable(directory, move_aside=move_damaged)
      if latest:
        return latest
  raise ConfigurationError(
    f'{what} must name a checkpoint: a prefix such as OUTPUT/checkpoints/'
    'ckpt-200, a directory of checkpoints, or a job output directory. '
    f'Found none at {what} {path}'
  )


def variable_name(variable):
  """A variable's name without the `:0` output suffix."""
  return re.sub(r':\d+$', '', variable.name)


def checkpoint_names(reader):
  """Variable name -> checkpoint keys, from a `tf.train.load_checkpoint`."""
  keys = reader.get_variable_to_shape_map()
  names: dict[str, Any] = {}
  if _OBJECT_GRAPH in keys:
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH))
    for node in graph.nodes:
      for attribute in node.attributes:
        if attribute.name == 'VARIABLE_VALUE' and attribute.full_name:
          names.setdefault(attribute.full_name, []).append(
            attribute.checkpoint_key
          )
  else:
    for key in keys:
      names.setdefault(key, []).append(key)
  return names


def compile_pattern(pattern):
  """Compiles `--restore-pattern` (None stays None).

  Raises:
    ConfigurationError: the pattern is not a regular expression.
  """
  if not pattern:
    return None
  try:
    return re.compile(pattern)
  except re.error as e:
    raise ConfigurationError(
      f'--restore-pattern must be a regular expression ({e}). Received: '
      f'--restore-pattern={pattern}'
    ) from None


def parse_rename(items):
  """`['old=new', ...]` (or a dict) as a dict from checkpoint to model name.

  Raises:
    ConfigurationError: an item without `=`, or a name given twice.
  """
  if not items:
    return {}
  if isinstance(items, dict):
    return {str(k): str(v) for k, v in items.items()}
  result, targets = {}, {}
  for item in items:
    old, sep, new = str(item).partition('=')
    if not sep or not old or not new:
      raise ConfigurationError(
        '--restore-rename items are CHECKPOINT_NAME=MODEL_NAME. '
        f'Received: {item!r}'
      )
    if old in result or new in targets:
      raise ConfigurationError(
        f'--restore-rename names {old if old in result else new!r} twice. '
        f'Received: {item!r}'
      )
    result[old] = new
    targets[new] = old
  return result


def warm_start(variables, path, pattern=None, rename=None, global_step=None):
  """Assigns `variables` the values of the same-named checkpoint variables.

  Example:
    >>> warm_start(builder.trainable_variables, '/tmp/pretrained',
    ...            pattern='^hidden', rename={'dense/kernel': 'hidden1/kernel'})
    {'restored': ['hidden1/kernel', ...], 'kept': ['output/kernel', ...]}

  Args:
    variables: the model variables that may be warm-started.
    path: a checkpoint prefix, directory or job output (see
      `resolve_checkpoint`).
    pattern: a regex: only variables whose (model) names match are restored.
    rename: a dict (or `OLD=NEW` items) from checkpoint name to model name.
    global_step: the global step variable, to restore it too; None leaves
      it.

  Returns:
    A dict: `checkpoint` (the prefix read), `restored` and `kept` (model
    variable names restored, and those left at their values).

  Raises:
    ConfigurationError: no checkpoint at `path`, a bad pattern, a rename
      whose checkpoint name is not in the checkpoint, a shape mismatch, or
      nothing to restore.
  """
  import tensorflow as tf

  prefix = resolve_checkpoint(path)
  rename = parse_rename(rename)
  regex = compile_pattern(pattern)
  reader = tf.train.load_checkpoint(prefix)
  names = checkpoint_names(reader)
  missing = [old for old in rename if old not in names]
  if missing:
    raise ConfigurationError(
      f'--restore-rename: {", ".join(missing)} not in the checkpoint '
      f'{prefix} (it has {", ".join(sorted(names)[:20])}'
      f'{", ..." if len(names) > 20 else ""}).'
    )
  source = {new: old for old, new in rename.items()}
  selected = [
    v for v in variables if regex is None or regex.search(variable_name(v))
  ]
  if global_step is not None:
    selected.append(global_step)
  restored, kept = [], []
  for variable in selected:
    name = variable_name(variable)
    key_name = source.get(name, name)
    keys = names.get(key_name)
    if not keys:
      kept.append(name)
      continue
    if len(keys) > 1:
      raise ConfigurationError(
        f'The checkpoint {prefix} has {len(keys)} variables named '
        f'{key_name!r} ({", ".join(keys)}); restore it under a unique name '
        'or leave it out with --restore-pattern.'
      )
    value = reader.get_tensor(keys[0])
    if tuple(value.shape) != tuple(variable.shape.as_list()):
      raise ConfigurationError(
        f'The checkpoint variable {key_name!r} has shape '
        f"{list(value.shape)}, the model's {name!r} "
        f'{variable.shape.as_list()}: they cannot be the same variable. '
        'Rename it (--restore-rename) or leave it out (--restore-pattern).'
      )
    variable.assign(tf.cast(value, variable.dtype))
    restored.append(name)
  if not restored:
    raise ConfigurationError(
      f'--warm-start {path}: no variable of the model '
      f'({", ".join(variable_name(v) for v in selected) or "none selected"})'
      f' is in the checkpoint {prefix} (it has '
      f'{", ".join(sorted(names)[:20])}); use --restore-rename or '
      '--restore-pattern.'
    )
  logger.info(
    'Warm-started %d variables from %s%s',
    len(restored),
    prefix,
    f'; kept the initial values of {", ".join(kept)}' if kept else '',
  )
  return {'checkpoint': prefix, 'restored': restored, 'kept': kept}
