"""YAML with line numbers, file text through tf.io.gfile, and located errors.

Validators of declarative files (schemas, feature sets) report where a bad
value is: `features.yaml:12: features[2].type: ... Received: type='x'`. So
`load_yaml` returns mappings and sequences that remember the line of each key
and item, and `Where` turns a key path into such a message.

TensorFlow is imported only inside the file functions: parsing and validating
must not pay for it (the command line answers `--help` without it).
"""

import dataclasses
import difflib
import enum

import yaml

from tensorfx._errors import DataError

# Marks "no value received" apart from a received None.
NOTHING = object()

_MAX_RECEIVED = 120


class LineDict(dict):
  """A dict from YAML that knows its own line and the line of each key."""

  def __init__(self, *args, line=None, **kwargs):
    super().__init__(*args, **kwargs)
    self.line = line
    self.lines = {}


class LineList(list):
  """A list from YAML that knows its own line and the line of each item."""

  def __init__(self, *args, line=None):
    super().__init__(*args)
    self.line = line
    self.lines = []


class _Loader(yaml.SafeLoader):
  """The safe loader, building LineDict and LineList."""


def _construct_mapping(loader, node):
  loader.flatten_mapping(node)  # Resolves `<<` merge keys.
  result = LineDict(line=node.start_mark.line + 1)
  for key_node, value_node in node.value:
    key = loader.construct_object(key_node, deep=True)
    try:
      duplicate = key in result
    except TypeError:
      raise yaml.constructor.ConstructorError(
        'while constructing a mapping',
        node.start_mark,
        'found an unhashable key',
        key_node.start_mark,
      ) from None
    # Plain PyYAML keeps the last of two equal keys; that hides typos.
    if duplicate:
      raise yaml.constructor.ConstructorError(
        'while constructing a mapping',
        node.start_mark,
        f'found duplicate key {key!r}',
        key_node.start_mark,
      )
    result[key] = loader.construct_object(value_node, deep=True)
    result.lines[key] = key_node.start_mark.line + 1
  return result


def _construct_sequence(loader, node):
  result = LineList(line=node.start_mark.line + 1)
  for item in node.value:
    result.append(loader.construct_object(item, deep=True))
    result.lines.append(item.start_mark.line + 1)
  return result


_Loader.add_constructor('tag:yaml.org,2002:map', _construct_mapping)
_Loader.add_constructor('tag:yaml.org,2002:seq', _construct_sequence)


def load_yaml(text, source='<string>'):
  r"""Parses YAML safely; mappings and sequences remember their lines.

  Example:
    >>> doc = load_yaml('a: 1\nb:\n- x\n', 'f.yaml')
    >>> doc.lines['b'], doc['b'].lines[0]
    (2, 3)

  Args:
    text: the YAML text.
    source: where the text came from (a path), for error messages.

  Returns:
    Plain Python values, except that mappings are `LineDict`s and sequences
    `LineList`s (dict and list subclasses with `line` and `lines`).

  Raises:
    DataError: the text is not valid YAML; names the source, line and column.
  """
  try:
    return yaml.load(text, Loader=_Loader)  # A SafeLoader subclass.
  except yaml.MarkedYAMLError as e:
    mark = e.problem_mark or e.context_mark
    where = f'{source}:{mark.line + 1}:{mark.column + 1}' if mark else source
    problem = e.problem or e.context or 'invalid YAML'
    raise DataError(f'{where}: invalid YAML: {problem}.') from None
  except yaml.YAMLError as e:
    raise DataError(f'{source}: invalid YAML: {e}.') from None


def _plain(value):
  """Converts to what `yaml.safe_dump` represents: no subclasses or tuples."""
  if isinstance(value, enum.Enum):
    return _plain(value.value)
  if hasattr(value, 'items'):  # dict, LineDict, read-only mappings.
    return {_plain(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if isinstance(value, str):
    return str(value)
  return value


# libyaml's emitter where PyYAML was built with it: the same text, four
# times faster (job.yaml is rewritten as a job trains).
_DUMPER = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)


def dump_yaml(obj):
  """Writes plain values (dicts, lists, scalars) as block-style YAML.

  Example:
    >>> print(dump_yaml({'b': 1, 'a': [1.5]}), end='')
    b: 1
    a:
    - 1.5
  """
  return yaml.dump(
    _plain(obj),
    Dumper=_DUMPER,
    sort_keys=False,
    default_flow_style=False,
    allow_unicode=True,
  )


def read_text(path):
  """Reads a text file through `tf.io.gfile` (local, `gs://`, ...).

  Example:
    >>> text = read_text('gs://bucket/schema.yaml')  # doctest: +SKIP

  Raises:
    DataError: naming the path, when it does not exist, is a directory or
      cannot be read.
  """
  import tensorflow as tf

  path = str(path)
  try:
    if not tf.io.gfile.exists(path):
      raise DataError(
        f'{path}: no such file. Check the path; it must exist and be readable.'
      )
    if tf.io.gfile.isdir(path):
      raise DataError(f'{path}: is a directory, not a file.')
    with tf.io.gfile.GFile(path, 'r') as f:
      return f.read()
  except tf.errors.OpError as e:
    raise DataError(f'{path}: cannot read: {e.message}') from None
  except UnicodeDecodeError as e:
    raise DataError(f'{path}: not UTF-8 text: {e}') from None


def write_text(path, text):
  """Writes a text file through `tf.io.gfile`, creating its directory.

  The text goes to a temporary file renamed into place, so a reader never
  sees a half-written file (local renames are atomic; on object stores the
  object appears whole when the upload ends).

  Example:
    >>> write_text('gs://bucket/out/metadata.json', '{}')  # doctest: +SKIP
  """
  import posixpath
  import uuid

  import tensorflow as tf

  path = str(path)
  directory = posixpath.dirname(path)
  temporary = f'{path}.tmp-{uuid.uuid4().hex}'
  try:
    if directory and not tf.io.gfile.exists(directory):
      tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(temporary, 'w') as f:
      f.write(text)
    tf.io.gfile.rename(temporary, path, overwrite=True)
  except tf.errors.OpError as e:
    try:
      if tf.io.gfile.exists(temporary):
        tf.io.gfile.remove(temporary)
    except tf.errors.OpError:
      pass  # The write error below is the one to report.
    raise DataError(f'{path}: cannot write: {e.message}') from None


def _received(name, value):
  text = repr(_plain(value))
  if len(text) > _MAX_RECEIVED:
    text = text[: _MAX_RECEIVED - 3] + '...'
  return f'{name}={text}' if name else text


def _join(path, key):
  if isinstance(key, int):
    return f'{path}[{key}]'
  return f'{path}.{key}' if path else str(key)


def _last(path):
  return path.rsplit('.', 1)[-1]


class Invalid(DataError):
  """A bad value, located by its key path inside the object being built.

  Constructors raise it, so code that builds objects directly gets a
  DataError; parsers catch it and re-raise it with the file and line of the
  path through `Where.locate`.

  Attributes:
    subject: what was being built, e.g. "Feature 'x'" (unlocated messages).
    path: the keys (str) and indices (int) leading to the bad value.
    problem: what is wrong.
    value: the value received, or NOTHING.
    label: what to call the value; by default the last key of the path.
  """

  def __init__(self, subject, path, problem, value=NOTHING, label=None):
    self.subject = subject
    self.path = tuple(path)
    self.problem = problem
    self.value = value
    self.label = label
    dotted = ''
    for key in self.path:
      dotted = _join(dotted, key)
    super().__init__(_message(subject, dotted, problem, value, label))


def _message(prefix, path, problem, value, label=None):
  parts = [p for p in (prefix, path) if p]
  text = ': '.join(parts + [problem.rstrip('.')])
  if value is not NOTHING:
    text += '. Received: ' + _received(label or _last(path), value)
  else:
    text += '.'
  return text


@dataclasses.dataclass(frozen=True)
class Where:
  r"""A location in a parsed file: the source, a key path and its line.

  Example:
    >>> doc = load_yaml('fields:\n- name: 1x\n', 'schema.yaml')
    >>> where = root(doc, 'schema.yaml')
    >>> str(where.locate(doc, ('fields', 0, 'name')).error(
    ...     'not an identifier', 1))
    'schema.yaml:2: fields[0].name: not an identifier. Received: name=1'
  """

  source: str
  path: str = ''
  line: int | None = None

  def at(self, container, key):
    """The location of `container[key]` (a mapping key or a list index)."""
    line = self.line
    lines = getattr(container, 'lines', None)
    if isinstance(lines, dict) and key in lines:
      line = lines[key]
    elif (
      isinstance(lines, list) and isinstance(key, int) and 0 <= key < len(lines)
    ):
      line = lines[key]
    return Where(self.source, _join(self.path, key), line)

  def locate(self, container, path):
    """The location of a key path under `container`.

    Follows the path while the containers know their lines; past that the
    path is still named, at the last line known.
    """
    where = self
    for key in path:
      where = where.at(container, key)
      try:
        container = container[key]
      except (KeyError, IndexError, TypeError):
        container = None
    return where

  def error(self, problem, value=NOTHING, label=None):
    """A DataError: `source:line: path: problem. Received: key=value`.

    Args:
      problem: what is wrong.
      value: the value received, if any.
      label: what to call the value; by default the last key of the path.
    """
    prefix = f'{self.source}:{self.line}' if self.line else self.source
    return DataError(_message(prefix, self.path, problem, value, label))

  def relocate(self, container, invalid):
    """The located DataError for an `Invalid` raised building `container`."""
    return self.locate(container, invalid.path).error(
      invalid.problem, invalid.value, invalid.label
    )


def did_you_mean(value, choices):
  """' (did you mean X?)' for the choice closest to a misspelt `value`, or ''.

  Example:
    >>> did_you_mean('reel', ['integer', 'real', 'discrete'])
    ' (did you mean real?)'
  """
  if not isinstance(value, str):
    return ''
  close = difflib.get_close_matches(
    value.strip().lower(), [str(c) for c in choices], n=1, cutoff=0.6
  )
  return f' (did you mean {close[0]}?)' if close else ''


def root(doc, source):
  """The location of a whole parsed document."""
  return Where(source, line=getattr(doc, 'line', None) or 1)


def check_keys(where, mapping, allowed, what):
  """Raises a located DataError naming the keys of `mapping` not allowed."""
  unknown = [k for k in mapping if k not in allowed]
  if unknown:
    names = ', '.join(repr(k) for k in unknown)
    accepted = ', '.join(allowed)
    raise where.at(mapping, unknown[0]).error(
      f'unknown key{"s" if len(unknown) > 1 else ""} {names} in {what}; '
      f'accepted keys are {accepted}',
      mapping[unknown[0]],
    )
