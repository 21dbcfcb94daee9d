"""Schema inference: the rules shared by `tensorfx schema infer` and DataFrames.

Each column is observed value by value (`Column`): how many values it has,
how many are missing (an empty cell, a null, NaN, a declared `na_values`
token), whether every present value is an integer, a real, and how many
distinct values it holds. From that a field is inferred:

- type: `integer` when every present value is one (text that parses as a
  64-bit integer, or an integer column), else `real` when every one is a
  number, else `discrete`;
- missing: `mean` for a number column with holes; a text column with holes
  keeps the default (a missing text is out of every vocabulary);
- na_values: the tokens the data was read with, so the schema reads the
  files alone.

A starter feature set (`starter_features`) follows the same observations:
zscore for numbers, onehot for vocabularies up to `ONEHOT_LIMIT` values, an
embedding above, and the target named by the caller.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Sequence

from tensorfx import _yaml
from tensorfx._errors import DataError
from tensorfx.data._schema import Schema
from tensorfx.data._schema import SchemaField
from tensorfx.data._schema import SchemaFieldType

# Distinct values a column keeps count of (more: "many").
DISTINCT_LIMIT = 10000
# The largest vocabulary a starter feature set one-hot encodes.
ONEHOT_LIMIT = 50
_INTEGER = re.compile(r'\s*[+-]?\d+\s*\Z')
_REAL = re.compile(r'\s*[+-]?((\d+\.?\d*)|(\.\d+))([eE][+-]?\d+)?\s*\Z')
_INTEGER_LIMIT = 2.0**63


@dataclasses.dataclass
class Column:
  """What was seen of one column's values.

  Example:
    >>> column = Column('age')
    >>> column.add_texts(['31', '', '45'])
    >>> column.field().to_dict()
    {'name': 'age', 'type': 'integer', 'missing': 'mean'}
  """

  name: str
  values: int = 0
  missing: int = 0
  integers: bool = True
  reals: bool = True
  distinct: set[Any] = dataclasses.field(default_factory=set)
  na_values: tuple[str, ...] = ()
  # The list lengths seen in typed values (tf.Example features).
  lengths: set[int] = dataclasses.field(default_factory=set)

  @property
  def length(self) -> int:
    """1 for one value a row; N for lists of N always; 0 for any length."""
    if not self.lengths or self.lengths == {1}:
      return 1
    return next(iter(self.lengths)) if len(self.lengths) == 1 else 0

  def _distinct(self, value: Any) -> None:
    if len(self.distinct) <= DISTINCT_LIMIT:
      self.distinct.add(value)

  def add_texts(
    self, cells: Iterable[str], na_values: Sequence[str] = ()
  ) -> None:
    """Observes CSV cells (text): empty cells and `na_values` are missing."""
    tokens = set(na_values)
    for cell in cells:
      self.values += 1
      if not cell or cell in tokens:
        self.missing += 1
        continue
      self._distinct(cell)
      if self.integers and not (
        _INTEGER.match(cell) and abs(float(cell)) < _INTEGER_LIMIT
      ):
        self.integers = False
      if self.reals and not _REAL.match(cell):
        self.reals = False

  def add_typed(self, values: list[Any], kind: str) -> None:
    """Observes one row's values of a typed column (integer, real, discrete).

    `values` is a list: one value (a Parquet or DataFrame cell), or a
    tf.Example feature's; an empty list, None and NaN are missing. A real
    column whose values are all whole stays real: its type says so.
    """
    import math

    if kind != 'integer':
      self.integers = False
    if kind == 'discrete':
      self.reals = False
    self.values += 1
    if values:
      self.lengths.add(len(values))
    values = [
      v
      for v in values
      if v is not None and not (isinstance(v, float) and math.isnan(v))
    ]
    if not values:
      self.missing += 1
    for value in values:
      if kind == 'discrete' and isinstance(value, bytes):
        value = value.decode('utf-8', 'replace')
      if kind == 'discrete' and str(value) in self.na_values:
        if len(values) == 1:
          self.missing += 1
        continue
      self._distinct(value)

  @property
  def kind(self) -> str:
    """The inferred type: integer, real or discrete."""
    present = self.values - self.missing
    if present and self.integers:
      return 'integer'
    if present and self.reals:
      return 'real'
    return 'discrete'

  def field(self) -> SchemaField:
    """The inferred `SchemaField`."""
    kind = self.kind
    missing = (
      'mean'
      if self.missing and kind != 'discrete' and self.length == 1
      else None
    )
    return SchemaField(
      self.name,
      SchemaFieldType(kind),
      length=self.length,
      missing=missing,
      na_values=self.na_values if self.length == 1 else (),
    )

  def comment(self) -> str:
    """A note on what was seen, for the schema file."""
    many = len(self.distinct) > DISTINCT_LIMIT
    parts = [f'{self.values} values']
    if self.missing:
      parts.append(f'{self.missing} missing')
    if self.kind == 'discrete':
      parts.append(f'{"over " if many else ""}{len(self.distinct)} distinct')
    return ', '.join(parts)


def schema_of(columns: Sequence[Column]) -> Schema:
  """The `Schema` of observed columns, in their order."""
  if not columns:
    raise DataError('No columns to infer a schema from.')
  return Schema([c.field() for c in columns])


def format_schema(columns: Sequence[Column], source: str = '') -> str:
  """The schema of observed columns as YAML, a comment over each field."""
  schema = schema_of(columns)
  lines = []
  if source:
    lines.append(f'# Inferred by tensorfx schema infer from {source}.')
  lines.append('fields:')
  for column, field in zip(columns, schema):
    lines.append(f'# {column.name}: {column.comment()}')
    text = _yaml.dump_yaml([field.to_dict()]).rstrip('\n')
    lines.extend(text.split('\n'))
  return '\n'.join(lines) + '\n'


def starter_features(
  columns: Sequence[Column], target: str | None = None
) -> str:
  """A feature set for observed columns, as YAML text.

  Every field but the target goes into one concat feature `X`: numbers as
  zscore, text as onehot (up to `ONEHOT_LIMIT` distinct values) or an
  embedding; the target, when named, is `Y`.

  Raises:
    DataError: `target` is not a column.
  """
  names = [c.name for c in columns]
  if target is not None and target not in names:
    raise DataError(
      f'The target {target!r} is not a column; the columns '
      f'are {", ".join(names)}.'
    )
  inputs: list[dict[str, Any]] = []
  for column in columns:
    if column.name == target or column.length != 1:
      continue
    if column.kind != 'discrete':
      inputs.append(
        {'name': f'{column.name}_z', 'type': 'zscore', 'fields': column.name}
      )
    elif len(column.distinct) <= ONEHOT_LIMIT:
      inputs.append(
        {
          'name': f'{column.name}_onehot',
          'type': 'onehot',
          'fields': column.name,
        }
      )
    else:
      size = min(len(column.distinct), DISTINCT_LIMIT)
      inputs.append(
        {
          'name': f'{column.name}_embedding',
          'type': 'embedding',
          'fields': column.name,
          'dim': max(2, min(32, round(size**0.25 * 2))),
        }
      )
  if not inputs:
    raise DataError("No column is left for the model's inputs.")
  features = [{'name': 'X', 'type': 'concat', 'features': inputs}]
  if target is not None:
    features.append({'name': 'Y', 'type': 'target', 'fields': target})
  return (
    '# A starter feature set by tensorfx schema infer: edit to taste.\n'
    + _yaml.dump_yaml({'features': features})
  )
