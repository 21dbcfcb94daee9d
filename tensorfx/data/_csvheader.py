"""CSV headers: the first line of a file names its columns.

With `header=True` a file's columns are matched to the schema's fields by
name, in whatever order the file has them; columns the schema lacks are
ignored. A header name that is not an identifier (`Sepal.Length`,
`body mass (g)`) matches the field of its `field_name` (`Sepal_Length`,
`body_mass_g`), the name `tensorfx schema infer` gives it. Each file is
read by its own header, so shards may order their columns differently.
"""

from __future__ import annotations

import csv
import io
import re

from tensorfx._errors import DataError
from tensorfx.data._schema import Schema

_NOT_IDENTIFIER = re.compile(r'[^A-Za-z0-9_]+')


def field_name(header: str) -> str:
  """The schema field name for a header's column name.

  Example:
    >>> field_name('Sepal.Length'), field_name('body mass (g)')
    ('Sepal_Length', 'body_mass_g')
  """
  name = _NOT_IDENTIFIER.sub('_', header.strip()).strip('_') or 'column'
  return f'_{name}' if name[0].isdigit() else name


def header_names(path: str, delimiter: str = ',') -> list[str]:
  """The column names in the first line of a file (empty for an empty file)."""
  import tensorflow as tf

  with tf.io.gfile.GFile(path, 'rb') as f:
    line = f.readline()
  try:
    text = line.decode('utf-8-sig').rstrip('\r\n')
  except UnicodeDecodeError:
    raise DataError(
      f'{path}:1: the header is not UTF-8 text; save the file as UTF-8'
    ) from None
  if not text.strip():
    return []
  try:
    return [
      name.strip()
      for name in next(
        csv.reader(io.StringIO(text), delimiter=delimiter, strict=True)
      )
    ]
  except csv.Error as e:
    raise DataError(f'{path}:1: the header is not a CSV line: {e}') from None


def looks_like_header(path: str, schema: Schema, delimiter: str = ',') -> bool:
  """Whether a file's first line names a field of `schema`, as a header does.

  What a bad first row is checked for: a header read as data.
  """
  try:
    names = header_names(path, delimiter)
  except DataError:
    return False
  return any(name in schema or field_name(name) in schema for name in names)


def columns(
  path: str, schema: Schema, delimiter: str = ','
) -> tuple[tuple[str | None, ...], list[str]]:
  """The field name (or None: ignored) of each column of a file, by its header.

  Example:
    >>> columns('penguins.csv', schema)  # doctest: +SKIP
    ('species', None, 'bill_length_mm', ...)

  Returns:
    `(columns, ignored)`: a tuple as long as the header, and the header
    names of the columns ignored.

  Raises:
    DataError: naming the file and the field its header lacks, or a field
      two of its columns name.
  """
  names = header_names(path, delimiter)
  layout: list[str | None] = []
  seen: dict[str, int] = {}
  ignored: list[str] = []
  for index, name in enumerate(names):
    match = name if name in schema else field_name(name)
    if match not in schema:
      layout.append(None)
      ignored.append(name)
      continue
    if match in seen:
      raise DataError(
        f'{path}:1: the header names field {match!r} twice '
        f'(columns {seen[match] + 1} and {index + 1})'
      )
    seen[match] = index
    layout.append(match)
  absent = [f.name for f in schema if f.name not in seen]
  if absent:
    raise DataError(
      f'{path}:1: the header has no column for field {absent[0]!r}'
      f'{" (nor " + ", ".join(map(repr, absent[1:])) + ")" if absent[1:] else ""}'
      f'; its columns are {", ".join(names) or "(none)"}. Rename the '
      'column or the field, or drop the field from the schema.'
    )
  return tuple(layout), ignored
