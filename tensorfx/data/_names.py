"""Names: a tuple of named things that also compares equal to their names.

The original tensorfx returned plain lists where tensorfx returns tuples
(`schema.fields`, `feature.fields`): its users compare them with lists of
names. `Names` is still the tuple tensorfx code indexes and iterates, and
also equals the list (or tuple) of the names of its items.
"""

from typing import Any


def _name(item: Any) -> Any:
  return item if isinstance(item, str) else getattr(item, 'name', item)


class Names(tuple):
  """A tuple of names, or of objects with a `name`, equal to their names.

  Example:
    >>> names = Names(('a', 'b'))
    >>> names == ['a', 'b'], names == ('a', 'b'), names[0]
    (True, True, 'a')
  """

  __slots__ = ()

  def __eq__(self, other: object) -> bool:
    if isinstance(other, (list, tuple)):
      if tuple.__eq__(self, tuple(other)):
        return True
      if len(other) == len(self) and all(isinstance(o, str) for o in other):
        return [_name(item) for item in self] == list(other)
      return False
    return NotImplemented

  def __ne__(self, other: object) -> bool:
    equal = self.__eq__(other)
    return equal if equal is NotImplemented else not equal

  def __contains__(self, item: object) -> bool:
    if isinstance(item, str):
      return any(_name(each) == item for each in self)
    return tuple.__contains__(self, item)

  __hash__ = tuple.__hash__

  def __repr__(self) -> str:
    return tuple.__repr__(self)
