"""Field paths into protocol buffer messages, and what each selects.

A `ProtoFormat` maps each schema field to a spec, written in YAML or Python:

* `'a.b.c'`: the values of `c` in every `a.b`, in order. Each repeated
  field along the path flattens: `basic_block.canonicalized_instructions.
  mnemonic` is one mnemonic per instruction. A singular scalar without
  presence (proto3) reads its default when unset, as protobuf does.
* `'a.b=TOKEN'`: the text `TOKEN` once for each value present at `a.b` (a
  set member of a `oneof`, a present sub-message): an operand that is an
  immediate value becomes `_IMMEDIATE_`.
* `{each: 'a.b', values: [spec, ...]}`: for each element of the repeated
  message `a.b`, the values of each spec (relative to the element), in
  order: one instruction's mnemonic, then its prefixes, then its operands.
  Specs nest. With `lengths: true`, the number of values of each element
  instead (an integer per element): the model splits the flat values back
  into instructions with it.
* `{path: ..., reduce: mean}` (or `sum`, `min`, `max`, `first`, `count`):
  one value from the values selected (`count` also takes an `each`).
* `{path: 'a.b.c', where: 'a.b.s', match: REGEX}`: the values of `c` in
  the first element of the repeated message `a.b` whose `s` matches the
  regular expression at its start (as Python's `re.match`), none when no
  element does: what Gematria's source filters select, one task's
  throughput out of a block's measurements. Takes a `reduce` too.

This module only parses and checks specs against a message's descriptor; it
does not import TensorFlow (`_protodecode` evaluates them).
"""

import dataclasses
import re
from typing import Any, Union

from tensorfx._errors import DataError

REDUCTIONS = ('mean', 'sum', 'min', 'max', 'first', 'count')
_SPEC_KEYS = ('path', 'each', 'values', 'lengths', 'reduce', 'where', 'match')


@dataclasses.dataclass(frozen=True)
class Path:
  """The values at a dotted path; `token` replaces each value present."""

  parts: tuple[str, ...]
  token: str | None = None


@dataclasses.dataclass(frozen=True)
class Each:
  """Per element of a repeated message, the values of `items` in order."""

  parts: tuple[str, ...]
  items: tuple[Union['Path', 'Each'], ...]


@dataclasses.dataclass(frozen=True)
class FieldSpec:
  """What one schema field reads: a selection, optionally reduced.

  With `where` and `match`, the selection reads only the first element of
  the repeated message `where[:-1]` whose field `where[-1]` matches the
  regular expression `match` at its start.
  """

  selection: Path | Each
  lengths: bool = False
  reduce: str | None = None
  where: tuple[str, ...] | None = None
  match: str | None = None

  @property
  def parts(self) -> tuple[str, ...]:
    return self.selection.parts


def _parts(text: Any, where: str) -> tuple[str, ...]:
  if not isinstance(text, str) or not text.strip():
    raise DataError(
      f'{where}: a path must be a non-empty dotted string of '
      f'field names. Received: {text!r}'
    )
  parts = tuple(p.strip() for p in text.split('.'))
  if not all(parts):
    raise DataError(f'{where}: {text!r} has an empty field name.')
  return parts


def _selection(value: Any, where: str) -> Path | Each:
  if isinstance(value, str):
    path, sep, token = value.partition('=')
    return Path(_parts(path, where), token if sep else None)
  if isinstance(value, dict) and 'each' in value:
    unknown = set(value) - {'each', 'values', 'lengths'}
    items = value.get('values')
    if unknown or not isinstance(items, (list, tuple)) or not items:
      raise DataError(
        f'{where}: {{each: PATH, values: [SPEC, ...]}} takes a '
        'non-empty list of values. Received: '
        f'{dict(value)!r}'
      )
    return Each(
      _parts(value['each'], where),
      tuple(
        _selection(item, f'{where}: values[{index}]')
        for index, item in enumerate(items)
      ),
    )
  raise DataError(
    f"{where}: expected a path ('a.b.c'), a token ('a.b=T') "
    f'or {{each: PATH, values: [...]}}. Received: {value!r}'
  )


def parse_spec(value: Any, where: str) -> FieldSpec:
  """Parses one field's spec (see the module docstring).

  Example:
    >>> parse_spec({'path': 'inverse_throughputs.inverse_throughput_cycles',
    ...             'reduce': 'mean'}, 'throughput').reduce
    'mean'

  Raises:
    DataError: naming `where` and what was expected.
  """
  if isinstance(value, FieldSpec):
    return value
  if isinstance(value, dict) and 'path' in value:
    unknown = set(value) - {'path', 'reduce', 'where', 'match'}
    if unknown:
      raise DataError(
        f'{where}: unknown keys {sorted(unknown)}; a spec takes '
        f'{", ".join(_SPEC_KEYS)}.'
      )
    selection = _selection(value['path'], where)
  else:
    selection = _selection(
      {k: v for k, v in value.items() if k != 'reduce'}
      if isinstance(value, dict)
      else value,
      where,
    )
  reduce = value.get('reduce') if isinstance(value, dict) else None
  if reduce is not None and reduce not in REDUCTIONS:
    raise DataError(
      f'{where}: reduce must be one of {", ".join(REDUCTIONS)}.'
      f' Received: reduce={reduce!r}'
    )
  lengths = bool(value.get('lengths')) if isinstance(value, dict) else False
  if lengths and reduce is not None:
    raise DataError(f'{where}: lengths and reduce cannot be combined.')
  owner, pattern = _match(value, where)
  return FieldSpec(selection, lengths, reduce, owner, pattern)


def _match(value: Any, where: str) -> tuple[tuple[str, ...] | None, str | None]:
  """The `where` path and `match` pattern of a spec, checked."""
  if not isinstance(value, dict) or (
    'where' not in value and 'match' not in value
  ):
    return None, None
  if 'where' not in value or 'match' not in value:
    raise DataError(
      f'{where}: where (the path of the field to match) and '
      'match (a regular expression) go together. Received: '
      f'{dict(value)!r}'
    )
  pattern = value['match']
  if not isinstance(pattern, str):
    raise DataError(
      f'{where}: match must be a regular expression (text). '
      f'Received: match={pattern!r}'
    )
  try:
    re.compile(pattern)
  except re.error as e:
    raise DataError(
      f'{where}: match={pattern!r} is not a regular expression ({e}).'
    ) from None
  return _parts(value['where'], f'{where}: where'), pattern


def is_repeated(field: Any) -> bool:
  repeated = getattr(field, 'is_repeated', None)
  if repeated is None:  # protobuf before 5.
    return field.label == field.LABEL_REPEATED
  return bool(repeated() if callable(repeated) else repeated)


def is_message(field: Any) -> bool:
  return field.message_type is not None


def resolve(descriptor: Any, parts: tuple[str, ...], where: str) -> list:
  """The field descriptors along `parts`, checked to exist.

  Raises:
    DataError: naming the path, the message and the fields it has.
  """
  fields = []
  current = descriptor
  for index, part in enumerate(parts):
    if current is None:
      raise DataError(
        f'{where}: {".".join(parts[:index])!r} is not a '
        'message; it has no field '
        f'{part!r}.'
      )
    field = current.fields_by_name.get(part)
    if field is None:
      raise DataError(
        f'{where}: message {current.full_name} has no field {part!r} (it '
        f'has {", ".join(f.name for f in current.fields)}). Received: '
        f'{".".join(parts)!r}'
      )
    fields.append(field)
    current = field.message_type
  return fields


def check(descriptor: Any, spec: FieldSpec, where: str) -> None:
  """Checks that every path of `spec` exists in the message `descriptor`."""
  _check(descriptor, spec.selection, where, spec.reduce == 'count')
  if spec.where is not None:
    _check_where(descriptor, spec, where)
  if spec.lengths and not isinstance(spec.selection, Each):
    raise DataError(
      f'{where}: lengths: true needs {{each: PATH, values: [...]}}}}.'
    )


def _check_where(descriptor: Any, spec: FieldSpec, where: str) -> None:
  """`where` names a scalar of a repeated message that `path` goes through."""
  fields = resolve(descriptor, spec.where or (), f'{where}: where')
  owner = (spec.where or ())[:-1]
  if not owner or not is_message(fields[-2]) or not is_repeated(fields[-2]):
    raise DataError(
      f'{where}: where must be a field of a repeated message '
      "('MESSAGES.FIELD'). Received: where="
      f'{".".join(spec.where or ())!r}'
    )
  if is_message(fields[-1]) or is_repeated(fields[-1]):
    raise DataError(
      f'{where}: where must name a single scalar field to '
      'match. Received: where='
      f'{".".join(spec.where or ())!r}'
    )
  if spec.parts[: len(owner)] != owner or len(spec.parts) == len(owner):
    raise DataError(
      f'{where}: path must select inside the elements of '
      f'{".".join(owner)!r}, the message where matches. '
      f'Received: path={".".join(spec.parts)!r}'
    )


def _check(descriptor, selection, where, counting=False):
  fields = resolve(descriptor, selection.parts, where)
  if isinstance(selection, Each):
    last = fields[-1]
    if not is_message(last):
      raise DataError(
        f'{where}: each: {".".join(selection.parts)!r} must be '
        f'a message field; it is a {last.type} scalar.'
      )
    for item in selection.items:
      _check(last.message_type, item, where)
  elif is_message(fields[-1]) and selection.token is None and not counting:
    raise DataError(
      f'{where}: {".".join(selection.parts)!r} is a message '
      f'({fields[-1].message_type.full_name}); select its fields '
      "('PATH.FIELD'), or a token for each present ('PATH=TOKEN')."
    )
