"""Metadata: the statistics and vocabularies analysis computes (JSON)."""

import copy
import json
import posixpath
import types

from tensorfx import _yaml
from tensorfx._errors import DataError

_FILE = 'metadata.json'
_KEYS = ('instances', 'fields')


def _is_int(value):
  return isinstance(value, int) and not isinstance(value, bool)


def _frozen(value):
  if isinstance(value, dict):
    return types.MappingProxyType({k: _frozen(v) for k, v in value.items()})
  if isinstance(value, list):
    return tuple(_frozen(v) for v in value)
  return value


def _thawed(value):
  if isinstance(value, (dict, types.MappingProxyType)):
    return {k: _thawed(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_thawed(v) for v in value]
  return value


class Metadata:
  """Statistics and vocabularies of a data source, from `tensorfx analyze`.

  Numeric fields have `count`, `min`, `max`, `mean` and `std`; discrete
  fields have `count`, `vocabulary` (value -> count, most frequent first)
  and `vocabulary_size` (which counts values past those listed).

  Example:
    >>> metadata = Metadata.parse('''{"instances": 3, "fields": {
    ...   "species": {"type": "discrete", "count": 3,
    ...               "vocabulary": {"a": 1, "b": 2}}}}''')
    >>> metadata.instances, metadata.vocabulary('species')
    (3, ['b', 'a'])

  Args:
    instances: how many instances were analyzed.
    fields: field name -> a dict of its statistics.

  Raises:
    DataError: a value is invalid; the message names its key.
  """

  def __init__(self, instances=0, fields=None):
    data = {'instances': instances, 'fields': {} if fields is None else fields}
    _check(data)
    self._instances = instances
    self._fields = _frozen(copy.deepcopy(_thawed(data['fields'])))

  @property
  def instances(self):
    """The number of instances analyzed."""
    return self._instances

  @property
  def fields(self):
    """A read-only mapping of field name to its (read-only) statistics."""
    return self._fields

  def field(self, name):
    """The statistics of field `name`, a read-only mapping.

    Raises:
      DataError: the metadata has no such field; lists the fields it has.
    """
    if name not in self._fields:
      raise _yaml.Invalid(
        'Metadata',
        (),
        f'no statistics for field {name!r}; the fields are '
        f'{", ".join(self._fields) or "(none)"}',
        name,
      )
    return self._fields[name]

  def vocabulary(self, name):
    """The values of a discrete field, most frequent first, then by value.

    Example:
      >>> metadata.vocabulary('species')  # doctest: +SKIP
      ['setosa', 'versicolor', 'virginica']

    Raises:
      DataError: the field is unknown or has no vocabulary.
    """
    stats = self.field(name)
    vocabulary = stats.get('vocabulary')
    if vocabulary is None:
      raise _yaml.Invalid(
        'Metadata',
        ('fields', name),
        'the field has no vocabulary; only discrete fields do',
        stats.get('type'),
        label='type',
      )
    if isinstance(vocabulary, tuple):
      return list(vocabulary)  # Already in order.
    return [
      v
      for v, _ in sorted(
        vocabulary.items(), key=lambda item: (-item[1], item[0])
      )
    ]

  def __eq__(self, other):
    if not isinstance(other, Metadata):
      return NotImplemented
    return self.to_dict() == other.to_dict()

  # Holds mappings; equal by value, so not hashable (None is how Python
  # says so; typeshed types __hash__ as a method).
  __hash__ = None  # type: ignore[assignment]

  def __repr__(self):
    return (
      f'Metadata(instances={self._instances!r}, '
      f'fields={_thawed(self._fields)!r})'
    )

  @classmethod
  def from_dict(cls, data, source='<dict>'):
    """Builds metadata from its JSON mapping (`instances`, `fields`).

    Example:
      >>> Metadata.from_dict({'instances': 0, 'fields': {}}).instances
      0

    Raises:
      DataError: the mapping is invalid; names the source and key path.
    """
    where = _yaml.Where(source)
    _check(
      data,
      lambda path, problem, value=_yaml.NOTHING: where.locate(data, path).error(
        problem, value
      ),
    )
    return cls(data['instances'], data['fields'])

  def to_dict(self):
    """The JSON mapping of the metadata (plain, mutable copies)."""
    return {'instances': self._instances, 'fields': _thawed(self._fields)}

  @classmethod
  def parse(cls, text, source='<string>'):
    """Parses metadata from JSON text.

    Also reads the original tensorfx's metadata.json (field name -> `min`,
    `max` and maybe `mean`, `std`, or `entries`): numeric fields keep those
    statistics, discrete ones their entries as the vocabulary; the instance
    count is unknown (0).

    Raises:
      DataError: the text is not valid JSON (names the source, line and
        column) or not valid metadata (names the source and key path).
    """
    try:
      data = json.loads(text)
    except json.JSONDecodeError as e:
      raise DataError(
        f'{source}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}.'
      ) from None
    if _legacy(data):
      data = {
        'instances': 0,
        'fields': {name: _from_legacy(stats) for name, stats in data.items()},
      }
    return cls.from_dict(data, source)

  @classmethod
  def load(cls, path):
    """Reads metadata from a JSON file, or a directory's `metadata.json`.

    Example:
      >>> metadata = Metadata.load('gs://b/analysis')  # doctest: +SKIP

    Raises:
      DataError: the file is missing or invalid; names the path.
    """
    import tensorflow as tf

    path = str(path)
    if tf.io.gfile.isdir(path):
      path = posixpath.join(path, _FILE)
    return cls.parse(_yaml.read_text(path), source=path)

  def format(self):
    """The metadata as JSON text that `parse` reads back equal."""
    return json.dumps(self.to_dict(), indent=2) + '\n'

  def save(self, path):
    """Writes the metadata as JSON (local or `gs://`).

    Example:
      >>> metadata.save('gs://b/analysis')  # doctest: +SKIP

    Args:
      path: the file to write, or a directory (existing, or written with a
        trailing '/') to write `metadata.json` into.

    Returns:
      The path of the file written.
    """
    import tensorflow as tf

    path = str(path)
    if path.endswith('/') or tf.io.gfile.isdir(path):
      path = posixpath.join(path, _FILE)
    _yaml.write_text(path, self.format())
    return path


# The keys of a field's statistics in the original tensorfx's metadata.json.
_LEGACY_NUMERIC = ('min', 'max', 'mean', 'std')
_LEGACY_DISCRETE = ('entries',)


def _legacy(data):
  """Whether a parsed metadata.json is in the original tensorfx's format."""
  if not isinstance(data, dict) or not data or set(_KEYS) <= set(data):
    return False
  for stats in data.values():
    if not isinstance(stats, dict) or not stats:
      return False
    keys = set(stats)
    if not (
      keys <= set(_LEGACY_NUMERIC) and {'min', 'max'} <= keys
    ) and keys != set(_LEGACY_DISCRETE):
      return False
  return True


def _from_legacy(stats):
  if 'entries' in stats:
    entries = stats['entries']
    return {
      'type': 'discrete',
      'count': 0,
      'vocabulary': [str(e) for e in entries]
      if isinstance(entries, list)
      else entries,
      'vocabulary_size': len(entries) if isinstance(entries, list) else 0,
    }
  return dict({'type': 'real', 'count': 0}, **stats)


def is_legacy(path):
  """Whether the file at `path` is a metadata.json of the original tensorfx.

  False for a missing or unreadable file, or any other content.
  """
  try:
    text = _yaml.read_text(path)
  except DataError:
    return False
  try:
    return _legacy(json.loads(text))
  except ValueError:
    return False


def _invalid(path, problem, value=_yaml.NOTHING):
  return _yaml.Invalid('Metadata', path, problem, value)


def _check(data, fail=_invalid):
  """Validates a metadata mapping; `fail(path, problem, value)` makes errors."""
  if not isinstance(data, dict):
    raise fail(
      (), "metadata must be a mapping with 'instances' and 'fields'", data
    )
  unknown = [k for k in data if k not in _KEYS]
  if unknown:
    raise fail(
      (unknown[0],),
      f'unknown key {unknown[0]!r}; accepted keys are {", ".join(_KEYS)}',
      data[unknown[0]],
    )
  for key in _KEYS:
    if key not in data:
      raise fail((), f'metadata needs {key!r}', _yaml.NOTHING)
  instances = data['instances']
  if not _is_int(instances) or instances < 0:
    raise fail(('instances',), 'instances must be an integer >= 0', instances)
  fields = data['fields']
  if not isinstance(fields, (dict, types.MappingProxyType)):
    raise fail(
      ('fields',),
      'fields must be a mapping of field name to statistics',
      fields,
    )
  for name, stats in fields.items():
    if not isinstance(name, str):
      raise fail(('fields',), 'field names must be strings', name)
    if not isinstance(stats, (dict, types.MappingProxyType)):
      raise fail(('fields', name), 'statistics must be a mapping', stats)
    count = stats.get('count', 0)
    if not _is_int(count) or count < 0:
      raise fail(
        ('fields', name, 'count'), 'count must be an integer >= 0', count
      )
    vocabulary = stats.get('vocabulary', {})
    if isinstance(vocabulary, (list, tuple)):
      continue
    if not isinstance(vocabulary, (dict, types.MappingProxyType)) or any(
      not _is_int(c) or c < 0 for c in vocabulary.values()
    ):
      raise fail(
        ('fields', name, 'vocabulary'),
        'vocabulary must map values '
        'to counts (integers >= 0), or list values in order',
        vocabulary,
      )
