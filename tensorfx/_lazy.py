"""A package's public names, imported on first use (PEP 562).

`import tensorfx`, a trainer's `--help` and argument errors must answer
without importing TensorFlow, so the packages whose modules import it
export their names lazily.
"""

import importlib
from typing import Any, Callable, Dict, List, Mapping, Tuple


def exports(
  namespace: Dict[str, Any], modules: Mapping[str, str]
) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
  """The `__getattr__` and `__dir__` of a package that exports lazily.

  Example:
    >>> __getattr__, __dir__ = exports(
    ...     globals(), {'ModelBuilder': 'tensorfx.training._builder'})

  Args:
    namespace: the package's `globals()`; a name, once imported, is
      stored there, so later lookups are plain attribute reads.
    modules: each exported name -> the module that defines it; a
      subpackage's own name -> that subpackage.

  Returns:
    `(__getattr__, __dir__)`; `__dir__` lists the package's `__all__`.
  """
  package = namespace['__name__']

  def getattr_(name: str) -> Any:
    module = modules.get(name)
    if module is None:
      raise AttributeError(f'module {package!r} has no attribute {name!r}')
    found = importlib.import_module(module)
    value = found if module == f'{package}.{name}' else getattr(found, name)
    namespace[name] = value
    return value

  def dir_() -> List[str]:
    return sorted(namespace['__all__'])

  return getattr_, dir_
