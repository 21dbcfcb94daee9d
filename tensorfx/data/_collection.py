"""NamedCollection: what Schema and FeatureSet share as containers.

Both are immutable sequences of named items (fields, features) found by
name or by position, equal by value, read from and written to YAML with
a single list under one key. The subclasses say what their items are
called and check them.
"""

from typing import Any, ClassVar, Dict, Iterator, Tuple

from tensorfx import _yaml


class NamedCollection:
  """An immutable sequence of named items; equal by value.

  Subclasses set `_KIND` (the class name in messages), `_NOUN` ('a
  schema'), `_KEY` (the YAML list: 'fields'), `_ITEM` ('field') and
  `_ITEM_CLASS` ('SchemaField'), keep their items with `_keep` and
  parse YAML with `_parse_list`.

  Example:
    >>> schema = Schema.create(SchemaField.real('x'))
    >>> 'x' in schema, len(schema), schema[0] is schema['x']
    (True, 1, True)
  """

  _KIND: ClassVar[str]
  _NOUN: ClassVar[str]
  _KEY: ClassVar[str]
  _ITEM: ClassVar[str]
  _ITEM_CLASS: ClassVar[str]
  _items: Tuple[Any, ...]
  _positions: Dict[str, int]

  @classmethod
  def create(cls, *items: Any) -> Any:
    """A collection of items given one by one or as one list (the original's).

    Raises:
      DataError: no items, or as the constructor raises.
    """
    if len(items) == 1 and isinstance(items[0], (list, tuple)):
      items = tuple(items[0])
    if not items:
      raise _yaml.Invalid(
        cls._KIND,
        (cls._KEY,),
        f'{cls._KIND}.create needs one or more {cls._ITEM_CLASS}s',
        list(items),
      )
    return cls(items)  # type: ignore[call-arg]

  @classmethod
  def load(cls, path: Any) -> Any:
    """Reads and parses a YAML file (local or `gs://`).

    Example:
      >>> schema = Schema.load('gs://bucket/iris/schema.yaml')  # doctest: +SKIP

    Raises:
      DataError: the file is missing or invalid; names the path.
    """
    return cls.parse(_yaml.read_text(path), source=str(path))  # type: ignore[attr-defined]

  @classmethod
  def _parse_list(cls, text: Any, source: str, parse_item: Any) -> Any:
    """A collection of the items listed under `_KEY` in YAML text.

    `parse_item(item, where)` makes each item of its mapping and location;
    `source` names the text in messages.

    Raises:
      DataError: the text is invalid; names the source, line and key path.
    """
    doc = _yaml.load_yaml(text, source)
    where = _yaml.root(doc, source)
    if not isinstance(doc, dict):
      raise where.error(
        f'{cls._NOUN} must be a mapping with a {cls._KEY!r} list', doc
      )
    _yaml.check_keys(where, doc, (cls._KEY,), cls._NOUN)
    if cls._KEY not in doc:
      raise where.error(f'{cls._NOUN} needs a {cls._KEY!r} list', doc)
    items = doc[cls._KEY]
    items_where = where.at(doc, cls._KEY)
    if not isinstance(items, list) or not items:
      raise items_where.error(
        f'{cls._KEY} must be a non-empty list of {cls._KEY}', items
      )
    parsed = [
      parse_item(item, items_where.at(items, i)) for i, item in enumerate(items)
    ]
    try:
      return cls(parsed)  # type: ignore[call-arg]
    except _yaml.Invalid as e:
      raise where.relocate(doc, e) from None

  def _keep(
    self, items: Any, item_class: Any, named: Any = None, may_repeat: Any = None
  ) -> None:
    """Keeps the items, once each is an `item_class` and names are unique.

    `named(item, path)` yields `(path, item)` of an item and of the items
    nested in it (by default the item alone); `may_repeat(first, path,
    item)`, whether one may share the name of an earlier `first` (its
    `(path, item)`; by default never).

    Raises:
      DataError: an item is not an `item_class`, or repeats a name.
    """
    items = tuple(items)
    seen: Dict[str, Any] = {}
    for i, item in enumerate(items):
      at = (self._KEY, i)
      if not isinstance(item, item_class):
        raise _yaml.Invalid(
          self._KIND, at, f'expected a {self._ITEM_CLASS}', item
        )
      for path, each in named(item, at) if named else [(at, item)]:
        first = seen.get(each.name)
        if first and not (may_repeat and may_repeat(first, path, each)):
          raise _yaml.Invalid(
            self._KIND,
            path + ('name',),
            f'duplicate {self._ITEM} name; {_dotted(first[0])} has the '
            'same name',
            each.name,
          )
        seen.setdefault(each.name, (path, each))
    self._items = items
    # Top-level names are unique; their paths are (_KEY, position).
    self._positions = {n: p[1] for n, (p, _) in seen.items() if len(p) == 2}

  def _check_name(self, name: Any) -> None:
    if name not in self._positions:
      raise _yaml.Invalid(
        self._KIND,
        (),
        f'no {self._ITEM} named {name!r}; the {self._KEY} '
        f'are {", ".join(self._positions) or "(none)"}',
        name,
      )

  def __getitem__(self, key: Any) -> Any:
    """The item named `key` (a str), or at position `key` (an int)."""
    if isinstance(key, int) and not isinstance(key, bool):
      return self._items[key]
    self._check_name(key)
    return self._items[self._positions[key]]

  def __contains__(self, name: object) -> bool:
    return name in self._positions

  def __iter__(self) -> Iterator[Any]:
    return iter(self._items)

  def __len__(self) -> int:
    return len(self._items)

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, type(self)) and not isinstance(self, type(other)):
      return NotImplemented
    return self._items == other._items  # type: ignore[attr-defined]

  def __hash__(self) -> int:
    return hash(self._items)

  def __repr__(self) -> str:
    return f'{self._KIND}({list(self._items)!r})'

  def to_dict(self) -> Dict[str, Any]:
    """The YAML mapping of the collection."""
    return {self._KEY: [item.to_dict() for item in self._items]}

  def format(self) -> str:
    """The collection as YAML text that `parse` reads back to an equal one."""
    return _yaml.dump_yaml(self.to_dict())


def _dotted(path: Tuple[Any, ...]) -> str:
  text = ''
  for key in path:
    text = (
      f'{text}[{key}]'
      if isinstance(key, int)
      else (f'{text}.{key}' if text else key)
    )
  return text
