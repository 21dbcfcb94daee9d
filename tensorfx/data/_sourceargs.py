"""Keyword arguments of data sets: options by name, any other one a source.

A data set takes its sources as keywords (`train=`, `eval=`), so a misspelt
option (`heade=True`) would become a source; `check_sources` refuses it.
"""

import difflib
import os
from typing import Any, Callable, Mapping, Sequence

from tensorfx._errors import DataError


def check_sources(
  kind: str,
  sources: Mapping[str, Any],
  options: Sequence[str],
  is_source: Callable[[Any], bool],
  source_value: str,
) -> None:
  """Raises a DataError for a keyword that is neither an option nor a source.

  A data set takes its sources as keywords (`train=`, `eval=`), so a
  misspelt option (`heade=True`) would become a source: it is refused when
  its value is not a source's (`is_source(value)` is false), or when its
  name is a near miss of an option's.

  Args:
    kind: the data set's class name, for the message.
    sources: the keywords taken as sources, by name.
    options: the names of the data set's options.
    is_source: whether a value can be a source's (paths, a DataFrame).
    source_value: what a source's value is, for the message.
  """
  for name, value in sources.items():
    if value is None:
      continue
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.8)
    if not close and not is_source(value):
      # A source's name with a wrong value (train=[1, 2]), or an option
      # spelt unlike any: say both.
      raise DataError(
        f'Source {name!r} must be {source_value}. Received: '
        f"{type(value).__name__} ({name}={value!r}). {kind}'s options "
        f'are {", ".join(options)}; any other keyword is a source.'
      )
    if close:
      hint = f' (did you mean {close[0]}?)' if close else ''
      raise DataError(
        f'{kind} has no option {name!r}{hint}; its options are '
        f'{", ".join(options)}, and any other keyword is a source '
        f'(train=, eval=), whose value is {source_value}. '
        f'Received: {name}={value!r}'
      )


def paths_or(source_type: type) -> Callable[[Any], bool]:
  """Whether a value names files or is a source of `source_type`."""
  return lambda value: isinstance(value, source_type) or is_paths(value)


def is_paths(value: Any) -> bool:
  """Whether `value` can name files: a path, or a sequence of paths."""
  if isinstance(value, (str, os.PathLike)):
    return True
  return isinstance(value, (list, tuple)) and all(
    isinstance(v, (str, os.PathLike)) for v in value
  )
