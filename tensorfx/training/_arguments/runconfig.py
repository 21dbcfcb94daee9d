"""Run configuration files: every trainer flag from YAML (`--config run.yaml`).

A run configuration gives flags as YAML keys; flags given on the command
line override it. Keys are flag names without the leading dashes, with
dashes or underscores (`batch-size` and `batch_size` are `--batch-size`);
list flags take YAML lists; `--shuffle`/`--no-shuffle` style flags take
`true`/`false`. Values are converted and checked exactly as on the command
line.

Flags can also be grouped in sections, the parameter groups of a
`train_from_params` run: `data`, `model`, `loss`, `learning_rate`,
`optimizer`, `validation`, `save`, `load`, and the parser's own groups
(`job`, `logging`). Inside section `S`, key `K` names the first flag that
exists among:

1. `--S` itself when `K` is `name` or `value`
   (`optimizer: {name: adam}` is `--optimizer adam`,
   `learning_rate: {value: 0.01}` is `--learning-rate 0.01`);
2. `--S-K` (`loss: {normalization: percentage}` is
   `--loss-normalization percentage`, `data: {train: [a.csv]}` is
   `--data-train a.csv`);
3. `--P-K` for the section's other prefixes: `eval-` in `validation`,
   `checkpoint-` in `save`, `restore-` in `load`
   (`validation: {batch_size: 32}` is `--eval-batch-size 32`);
4. `--K` (`optimizer: {clip_norm: 1.0}` is `--clip-norm 1.0`,
   `model: {hidden_layers: [20, 10]}` is `--hidden-layers 20 10`).

In `validation`, a key whose value is a mapping and that names no flag is
a named validation target (`--eval-target NAME KEY=VALUE ...`):
`validation: {holdout: {data: [h.csv], batches: 5, online_agg: append,
agg: median}}`. A mapping given to a list flag of `KEY=VALUE` items is
those items (`load: {rename: {dense/kernel: hidden1/kernel}}`).

A section whose name is also a flag may be a plain value instead:
`optimizer: sgd`. A flag given twice (at the top and in a section, or in
two sections) is an error, and so is a key that names no flag: both name
the file, the line and the key.

Example (run.yaml):

    data:
      train: [data/train.csv]
      schema: schema.yaml
    model:
      hidden_layers: [20, 10]
    optimizer:
      name: sgd
      momentum: 0.9
      clip_norm: 1.0
    learning_rate:
      value: 0.1
      schedule: cosine
      warmup_steps: 100
    max_steps: 5000

This module must not import TensorFlow (see `_args`).
"""

import argparse
import difflib
import os
import re
from typing import Any

from tensorfx import _argparsing
from tensorfx import _yaml
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError

SECTIONS = (
  'data',
  'model',
  'loss',
  'learning_rate',
  'optimizer',
  'validation',
  'save',
  'load',
  'job',
  'logging',
)

# Besides the section's own name, the flag prefixes its keys may stand for.
_PREFIXES = {
  'validation': ('eval',),
  'save': ('checkpoint',),
  'load': ('restore',),
  'logging': ('log',),
}

# A section's keys that stand for the section's own flag.
_SELF_KEYS = ('name', 'value')


def find_config(argv):
  """The `--config` path in a command line, or None.

  Example:
    >>> find_config(['--config', 'run.yaml', '--batch-size', '8'])
    'run.yaml'

  Raises:
    ConfigurationError: --config is given twice or without a value.
  """
  found = []
  i = 0
  while i < len(argv):
    token = argv[i]
    i += 1
    if token == '--':
      break
    if token == '--config':
      if i >= len(argv) or argv[i].startswith('--'):
        raise ConfigurationError(
          '--config expects the path of a run configuration (YAML). '
          'Received no value.'
        )
      found.append(argv[i])
      i += 1
    elif token.startswith('--config='):
      found.append(token.partition('=')[2])
  if len(found) > 1:
    raise ConfigurationError(
      '--config can be given once. Received: '
      + ' '.join(f'--config={f}' for f in found)
    )
  return found[0] if found else None


def read_config(path):
  """Reads a run configuration file (local or gs://) as a LineDict."""
  try:
    if '://' in str(path):
      text = _yaml.read_text(path)  # Imports TensorFlow, for gs:// paths.
    else:
      with open(path, encoding='utf-8') as f:
        text = f.read()
  except OSError as e:
    raise ConfigurationError(
      f'{path}: cannot read the run configuration (--config): '
      f'{e.strerror or e}.'
    ) from None
  except DataError as e:
    raise ConfigurationError(str(e)) from None
  try:
    doc = _yaml.load_yaml(text, path)
  except DataError as e:
    raise ConfigurationError(str(e)) from None
  if doc is None:
    return _yaml.LineDict(line=1)
  if not isinstance(doc, dict):
    raise ConfigurationError(
      f'{path}:1: a run configuration must be a mapping of flag names to '
      f'values. Received: {type(doc).__name__}'
    )
  return doc


def resolve(parser, doc, path, origins=None):
  """Turns a run configuration into parser defaults.

  Example:
    >>> doc = _yaml.load_yaml('optimizer: {name: sgd, clip_norm: 1}', 'r.yaml')
    >>> resolve(ModelArguments.build_parser(), doc, 'r.yaml')
    {'optimizer': 'sgd', 'clip_norm': 1.0}

  Args:
    parser: the trainer's `argparse.ArgumentParser`.
    doc: the parsed YAML (a `LineDict`).
    path: the file, for messages.
    origins: a dict to fill with argument dest -> (key, line) of the file,
      for `locate`.

  Returns:
    A dict from argument dest to its converted value.

  Raises:
    ConfigurationError: naming `path:line`, an unknown key, a flag given
      twice, or a value its flag rejects.
  """
  flags = _flags(parser)
  values: dict[str, Any] = {}
  # dest -> (key, line), to name both of a duplicate.
  origins = {} if origins is None else origins
  located: Any = doc  # A parsed mapping: it knows its lines.
  for key, value in doc.items():
    line = located.lines.get(key, located.line)
    name = _normal(key)
    if name == 'config':
      raise ConfigurationError(
        f'{path}:{line}: config: a run configuration cannot name another. '
        f'Received: config={value!r}'
      )
    if isinstance(value, dict) and (name in SECTIONS or name not in flags):
      if name not in SECTIONS:
        raise _unknown(path, line, key, flags, 'section or flag')
      mapping: Any = value  # A parsed mapping: it knows its lines.
      for sub, item in mapping.items():
        sub_line = mapping.lines.get(sub, mapping.line)
        action = _section_flag(flags, name, _normal(sub))
        label = f'{key}.{sub}'
        items = _items_action(parser, name)
        if (
          isinstance(item, dict)
          and items is not None
          and (action is None or action is items)
        ):
          # A named entry of the section (a validation target).
          _put_item(
            values, origins, items, str(sub), item, label, sub_line, path
          )
          continue
        if action is None:
          raise _unknown(path, sub_line, label, flags, f'flag of section {key}')
        _put(values, origins, action, item, label, sub_line, path)
      continue
    action = flags.get(name)
    if action is None:
      raise _unknown(path, line, key, flags, 'flag')
    _put(values, origins, action, value, str(key), line, path)
  return values


def locate(error, parser, path, origins, argv):
  """`error` (about flags) located in the run configuration, if it is there.

  Checks across flags (`process()`) name the flags; when the first flag
  named that the command line did not give came from the file, the message
  is prefixed with the file, line and key that set it.

  Example:
    >>> str(locate(ConfigurationError('--momentum applies to --optimizer '
    ...     'sgd'), parser, 'run.yaml', {'momentum': ('optimizer.momentum', 9)},
    ...     []))
    'run.yaml:9: optimizer.momentum: --momentum applies to --optimizer sgd'
  """
  options = {}
  for action in _argparsing.actions(parser):
    for option in action.option_strings:
      options[option] = action.dest
  for option in re.findall(r'--[A-Za-z][\w-]*', str(error)):
    dest = options.get(option)
    given = any(a == option or a.startswith(option + '=') for a in argv)
    if dest in origins and not given:
      key, line = origins[dest]
      return ConfigurationError(f'{path}:{line}: {key}: {error}')
  return error


def _normal(key):
  return str(key).strip().lstrip('-').replace('-', '_')


def _flags(parser):
  """Every long option (normalised) to its action."""
  flags = {}
  for action in _argparsing.actions(parser):
    if _argparsing.is_help_action(action):
      continue
    for option in action.option_strings:
      if option.startswith('--'):
        flags[_normal(option)] = action
        if isinstance(action, argparse.BooleanOptionalAction):
          break  # Not --no-NAME: the key is NAME: true/false.
  return flags


def _section_flag(flags, section, key):
  if key in _SELF_KEYS and section in flags:
    return flags[section]
  for prefix in (section, *_PREFIXES.get(section, ())):
    action = flags.get(f'{prefix}_{key}')
    if action is not None:
      return action
  return flags.get(key)


def _items_action(parser, section):
  """The action whose entries are the section's mapping-valued keys."""
  for action in _argparsing.actions(parser):
    if getattr(action, 'config_section', None) == section:
      return action
  return None


def _put_item(values, origins, action, name, spec, label, line, path):
  key = (action.dest, name)
  if key in origins:
    first, first_line = origins[key]
    raise ConfigurationError(
      f'{path}:{line}: {label} is already given by {first} at line '
      f'{first_line}; give it once.'
    )
  origins[key] = (label, line)
  entries = values.setdefault(action.dest, {})
  entries[name] = action.from_config(
    name, dict(spec), f'{path}:{line}: {label}'
  )


def _unknown(path, line, key, flags, what):
  close = difflib.get_close_matches(
    _normal(str(key).rsplit('.', 1)[-1]), list(flags) + list(SECTIONS), n=3
  )
  hint = f' Did you mean {", ".join(close)}?' if close else ''
  return ConfigurationError(
    f'{path}:{line}: unknown key {key!r}: it names no {what} of this '
    f'trainer (keys are flag names, or the sections '
    f'{", ".join(SECTIONS)}).{hint}'
  )


def _put(values, origins, action, value, label, line, path):
  dest = action.dest
  if dest in origins:
    first, first_line = origins[dest]
    raise ConfigurationError(
      f'{path}:{line}: {label} sets {action.option_strings[0]}, already set '
      f'by {first} at line {first_line}; give it once.'
    )
  origins[dest] = (label, line)
  values[dest] = _convert(action, value, label, line, path)


def _convert(action, value, label, line, path):
  """Converts a YAML value as argparse would convert the flag's text."""
  where = f'{path}:{line}: {label}'
  if value is None:
    return None
  if _argparsing.is_flag_action(action):
    if not isinstance(value, bool):
      raise ConfigurationError(
        f'{where} expects true or false. Received: {label}={value!r}'
      )
    if _argparsing.is_store_false(action):
      return not value
    return value
  if _argparsing.is_store_const(action):
    if not isinstance(value, bool):
      raise ConfigurationError(
        f'{where} expects true or false. Received: {label}={value!r}'
      )
    return action.const if value else action.default
  if getattr(action, 'config_section', None):
    raise ConfigurationError(
      f'{where}: give these as mappings under {action.config_section} '
      f'(e.g. {action.config_section}: {{NAME: {{...}}}}). Received: '
      f'{label}={value!r}'
    )
  if action.nargs in ('+', '*') or _argparsing.is_append(action):
    if isinstance(value, dict):
      # A mapping for a list of KEY=VALUE items (--restore-rename a=b).
      value = [f'{k}={v}' for k, v in value.items()]
    items = value if isinstance(value, list) else [value]
    if action.nargs == '+' and not items:
      raise ConfigurationError(
        f'{where} expects a list of one or more values. Received: {label}=[]'
      )
    return [_scalar(action, item, where, label) for item in items]
  if isinstance(value, (list, dict)):
    raise ConfigurationError(
      f'{where} expects a single value. Received: {label}={value!r}'
    )
  return _scalar(action, value, where, label)


def _scalar(action, value, where, label):
  if isinstance(value, (list, dict)):
    raise ConfigurationError(
      f'{where} expects a list of single values. Received: {label}={value!r}'
    )
  if isinstance(value, bool) and action.type not in (None, str):
    # YAML reads yes/no/on/off as booleans; none of the typed flags wants one.
    raise ConfigurationError(
      f'{where} expects a value of type '
      f'{getattr(action.type, "__name__", action.type)}. Received: '
      f'{label}={value!r}'
    )
  # Through the flag's own type, from the text, as on the command line:
  # YAML reads 1e-3 as a string and 1 as an int, both good floats.
  text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
  if isinstance(value, bool):
    text = 'true' if value else 'false'
  return _argparsing.typed(
    action.type or str,
    action.choices,
    text,
    where,
    lambda _: f'{label}={value!r}',
  )


def dump(parser, values):
  """Writes resolved arguments as a run configuration (YAML).

  What `--print-config` prints: every flag with a value, by its name (the
  validation targets under `validation`), so that `--config` on the file
  gives the same arguments back.

  Example:
    >>> print(dump(parser, args.to_dict()))
    data_train:
    - data/train.csv
    ...

  Args:
    parser: the trainer's `argparse.ArgumentParser`.
    values: dest -> plain value (`ModelArguments.to_dict()`).

  Returns:
    The YAML text.
  """
  names: dict[str, tuple[str | None, Any]] = {}
  for flag in _argparsing.actions(parser):
    longs = [o for o in flag.option_strings if o.startswith('--')]
    if longs and flag.dest not in names:
      names[flag.dest] = (_normal(longs[0]), flag)
  doc: dict[str, Any] = {}
  for dest, value in values.items():
    name, action = names.get(dest, (None, None))
    if name in (None, 'config', 'print_config') or value in (None, []):
      continue
    section = getattr(action, 'config_section', None)
    if section:
      doc.setdefault(section, {}).update(value)
    else:
      doc[name] = value
  return _yaml.dump_yaml(doc)
