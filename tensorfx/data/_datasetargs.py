"""The two forms of the DataSet constructor's arguments.

tensorfx's `DataSet(schema, metadata=None, features=None)` and the original
tensorfx's last `DataSet(sources, schema, metadata=None, features=None)`.
"""

import collections.abc
from typing import Any

_NAMES = ('schema', 'metadata', 'features')
# The original tensorfx's order: DataSet(sources, schema, metadata, features).
_ORIGINAL_NAMES = ('sources',) + _NAMES


def dataset_arguments(args: tuple, kwargs: dict[str, Any]) -> tuple:
  """`(sources, schema, metadata, features)` of either constructor form.

  DataSet(schema, metadata=None, features=None) is tensorfx's, and
  DataSet(sources, schema, metadata=None, features=None) the original
  tensorfx's; a dict (of name to DataSource) first, or `sources=`, says
  which.
  """
  original = 'sources' in kwargs or (
    bool(args) and isinstance(args[0], collections.abc.Mapping)
  )
  names = _ORIGINAL_NAMES if original else _NAMES
  if len(args) > len(names):
    raise TypeError(
      f'DataSet takes at most {len(names)} positional '
      f'arguments ({", ".join(names)}); {len(args)} were given'
    )
  values = dict(zip(names, args))
  for key, value in kwargs.items():
    if key not in names:
      raise TypeError(
        f'DataSet got an unexpected keyword argument {key!r}; '
        f'it takes {", ".join(names)}'
      )
    if key in values:
      raise TypeError(f'DataSet got multiple values for argument {key!r}')
    values[key] = value
  if 'schema' not in values:
    raise TypeError("DataSet missing required argument: 'schema'")
  return (
    values.get('sources'),
    values['schema'],
    values.get('metadata'),
    values.get('features'),
  )
