"""Parameter dictionaries read by key, with errors that name the key's path.

tfutils' dictionaries nest (`train_params['data_params']['func']`); a
missing or bad key is reported with its whole path, so the user finds it
in their script at once.
"""

import difflib
import inspect
import re
from typing import Any, Callable, Optional, Sequence

from tensorfx._errors import ConfigurationError
from tensorfx._logging import logger

_ADDRESS = re.compile(r' at 0x[0-9a-fA-F]+')


class Params:
  """One parameter dictionary and where it is (`train_params['targets']`).

  Example:
    >>> data = Params(train_params, 'train_params').child('data_params',
    ...                                                   required=True)
    >>> func = data.function('func', 'the function that makes the data')
    >>> data.where('batch_size')
    "train_params['data_params']['batch_size']"

  Args:
    value: the dictionary (None reads as empty).
    path: how the user wrote it, e.g. `"train_params['data_params']"`.

  Raises:
    ConfigurationError: `value` is not a dict.
  """

  def __init__(self, value: Any, path: str) -> None:
    if value is None:
      value = {}
    if not isinstance(value, dict):
      raise ConfigurationError(
        f'{path} must be a dict. Received: {path}={value!r}'
      )
    self.value = dict(value)
    self.path = path

  def __contains__(self, key: Any) -> bool:
    return key in self.value

  def where(self, key: Any) -> str:
    """The path of `key`: `train_params['num_steps']`."""
    return f'{self.path}[{key!r}]'

  def get(self, key: str, default: Any = None) -> Any:
    """The value of `key`, or `default` when absent (or None)."""
    value = self.value.get(key)
    return default if value is None else value

  def required(self, key: str, what: str) -> Any:
    """The value of `key`, which must be there.

    Args:
      key: the key.
      what: what the key holds, for the error ('the batch size').

    Raises:
      ConfigurationError: naming the key's path and the keys there are.
    """
    if self.value.get(key) is None:
      keys = ', '.join(repr(k) for k in self.value) or 'none'
      raise ConfigurationError(
        f'{self.where(key)} is required: {what}. Received: {self.path} '
        f'with the keys {keys}'
      )
    return self.value[key]

  def function(self, key: str, what: str, required: bool = True) -> Any:
    """A callable at `key` (None when absent and not required).

    Raises:
      ConfigurationError: absent and required, or not callable.
    """
    if not required and self.value.get(key) is None:
      return None
    value = self.required(key, what)
    if not callable(value):
      raise ConfigurationError(
        f'{self.where(key)} must be a function: {what}. Received: '
        f'{self.where(key)}={value!r}'
      )
    return value

  def integer(
    self,
    key: str,
    default: Optional[int],
    minimum: int = 1,
    allow_none: bool = False,
  ) -> Any:
    """A whole number at `key` (at least `minimum`), or `default`.

    Raises:
      ConfigurationError: not a whole number, or below `minimum`.
    """
    if key not in self.value or (self.value[key] is None and not allow_none):
      return default
    value = self.value[key]
    if value is None:
      return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
      expected = (
        'a positive integer'
        if minimum == 1
        else f'an integer of at least {minimum}'
      )
      if allow_none:
        expected += ' or None'
      raise ConfigurationError(
        f'{self.where(key)} must be {expected}. Received: '
        f'{self.where(key)}={value!r}'
      )
    return value

  def boolean(self, key: str, default: bool) -> bool:
    """A bool at `key`, or `default`.

    Raises:
      ConfigurationError: not a bool (or 0/1).
    """
    value = self.value.get(key)
    if value is None:
      return default
    if value not in (True, False):
      raise ConfigurationError(
        f'{self.where(key)} must be True or False. Received: '
        f'{self.where(key)}={value!r}'
      )
    return bool(value)

  def child(
    self, key: str, required: bool = False, what: str = 'a dict'
  ) -> 'Params':
    """The dictionary at `key` as `Params` (empty when absent)."""
    if required:
      self.required(key, what)
    return Params(self.value.get(key), self.where(key))

  def alias(self, old: str, new: str) -> None:
    """Reads tfutils' deprecated key `old` as `new` (and says so)."""
    if self.value.get(old) is None:
      return
    if self.value.get(new) is not None:
      raise ConfigurationError(
        f'{self.where(old)} is the deprecated name of {self.where(new)}; '
        f'give one of them. Received: both'
      )
    logger.warning(
      '%s is deprecated (as in tfutils): read as %s',
      self.where(old),
      self.where(new),
    )
    self.value[new] = self.value.pop(old)

  def rest(self, *known: str) -> dict[str, Any]:
    """The keys not in `known`: the keyword arguments of a function."""
    return {k: v for k, v in self.value.items() if k not in known}

  def check_known(self, known: Sequence[str], hint: str = '') -> None:
    """Raises on a key that is not in `known` (a typo, or unsupported).

    Raises:
      ConfigurationError: naming the key and the keys accepted.
    """
    for key in self.value:
      if key not in known:
        close = difflib.get_close_matches(str(key), known, n=1)
        guess = f' Did you mean {close[0]!r}?' if close else ''
        raise ConfigurationError(
          f'{self.where(key)} is not a key tensorfx reads.{guess} The keys '
          f'of {self.path} are {", ".join(known)}.{hint}'
        )


def accepts(func: Callable[..., Any], name: str) -> bool:
  """Whether `func` takes an argument `name` (or any keyword)."""
  try:
    parameters = inspect.signature(func).parameters
  except (TypeError, ValueError):
    return True
  return name in parameters or any(
    p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
  )


def describe(value: Any) -> Any:
  """A plain, stable description of a parameter value, to record.

  Functions and classes are named by module and qualified name; dicts,
  lists and numbers stay as they are; anything else is its repr without
  memory addresses (which change from run to run).

  Example:
    >>> describe({'func': tf.nn.relu, 'units': (8, 4)})
    {'func': 'tensorflow.python.ops.gen_nn_ops.relu', 'units': [8, 4]}
  """
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  if isinstance(value, dict):
    return {str(k): describe(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [describe(v) for v in value]
  if hasattr(value, 'item') and getattr(value, 'ndim', None) == 0:
    return value.item()  # A NumPy scalar.
  if isinstance(value, re.Pattern):
    return value.pattern
  if callable(value):
    module = getattr(value, '__module__', None)
    name = getattr(value, '__qualname__', None) or getattr(
      value, '__name__', None
    )
    if name:
      return f'{module}.{name}' if module else name
  return _ADDRESS.sub('', repr(value))
