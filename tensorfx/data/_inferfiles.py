"""Observing data files for schema inference: CSV, Parquet, tf.Example.

Reads the files (all rows, or a prefix of `sample` rows over all files) into
`_inference.Column`s, by name: header names for CSV files with a header
(made identifiers, as `_csvheader.field_name` matches them back), the
Parquet columns, the tf.Example features; `column_1`, `column_2`, ... for
CSV files without a header.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterator, Sequence

from tensorfx._errors import DataError
from tensorfx.data import _csvheader
from tensorfx.data import _paths
from tensorfx.data._inference import Column

_TFRECORD = ('.tfrecord', '.tfrecords', '.tfrecord.gz', '.tfrecords.gz')
_PARQUET = ('.parquet', '.pq')


def format_of(path: str, requested: str = 'auto') -> str:
  """csv, parquet or tfrecord: `requested`, or by the file's name."""
  if requested != 'auto':
    return requested
  name = path.lower()
  if name.endswith(_TFRECORD):
    return 'tfrecord'
  if name.endswith(_PARQUET):
    return 'parquet'
  return 'csv'


def observe(
  paths: Sequence[str],
  header: bool = False,
  na_values: Sequence[str] = (),
  delimiter: str = ',',
  sample: int | None = None,
  data_format: str = 'auto',
  strip_cells: bool = False,
) -> list[Column]:
  """The `Column`s of the files' data, in the order first seen.

  Example:
    >>> [c.name for c in observe(['penguins.csv'], header=True,
    ...                          na_values=['NA'])]  # doctest: +SKIP
    ['species', 'island', 'bill_length_mm', ...]

  Raises:
    DataError: a file is missing or unreadable; names it.
  """
  columns: dict[str, Column] = {}
  rows = 0
  left = sample
  for path in _paths.expand(paths):
    kind = format_of(path, data_format)
    if kind == 'parquet':
      read = _parquet_rows(path)
    elif kind == 'tfrecord':
      read = _example_rows(path)
    else:
      read = _csv_rows(path, header, delimiter, strip_cells)
    for kind_or_text, row in read:
      if left is not None and left <= 0:
        break
      if left is not None:
        left -= 1
      for name, value in row.items():
        if name not in columns:
          # Absent from the rows before: missing there.
          columns[name] = Column(
            name, values=rows, missing=rows, na_values=tuple(na_values)
          )
        column = columns[name]
        if kind_or_text == 'text':
          column.add_texts([value], na_values)
        else:
          values, kind = value
          column.add_typed(values, kind)
      rows += 1
      for name, column in columns.items():
        if name not in row:
          column.values += 1
          column.missing += 1
  if not columns:
    raise DataError(f'No data to infer a schema from in {", ".join(paths)}.')
  return list(columns.values())


def _csv_rows(
  path: str, header: bool, delimiter: str, strip: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
  import tensorflow as tf

  names: list[str] | None = None
  with tf.io.gfile.GFile(path, 'rb') as f:
    for number, line in enumerate(f, start=1):
      try:
        text = line.decode('utf-8-sig' if number == 1 else 'utf-8')
      except UnicodeDecodeError:
        raise DataError(
          f'{path}:{number}: not UTF-8 text; save the file as UTF-8'
        ) from None
      if not text.strip():
        continue
      try:
        cells = next(csv.reader(io.StringIO(text), delimiter=delimiter))
      except csv.Error as e:
        raise DataError(f'{path}:{number}: {e}') from None
      if strip:
        cells = [c.strip() for c in cells]
      if names is None:
        if header:
          names = [_csvheader.field_name(c) for c in cells]
          continue
        names = [f'column_{i}' for i in range(1, len(cells) + 1)]
      if len(cells) != len(names):
        raise DataError(
          f'{path}:{number}: expected {len(names)} columns, found {len(cells)}'
        )
      yield 'text', dict(zip(names, cells))


def _arrow_kind(data_type: Any) -> str:
  import pyarrow as pa

  if pa.types.is_dictionary(data_type):
    data_type = data_type.value_type
  if pa.types.is_integer(data_type):
    return 'integer'
  if pa.types.is_floating(data_type) or pa.types.is_decimal(data_type):
    return 'real'
  return 'discrete'


def _parquet_rows(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
  import pyarrow as pa
  import pyarrow.parquet as pq
  import tensorflow as tf

  with tf.io.gfile.GFile(path, 'rb') as f:
    data = f.read()
  try:
    reader = pq.ParquetFile(pa.BufferReader(data))
  except (OSError, pa.ArrowException) as e:
    raise DataError(f'{path}: not a Parquet file: {e}') from None
  kinds = {field.name: _arrow_kind(field.type) for field in reader.schema_arrow}
  for batch in reader.iter_batches():
    for row in batch.to_pylist():
      yield (
        'typed',
        {
          _csvheader.field_name(name): ([value], kinds[name])
          for name, value in row.items()
        },
      )


def _example_rows(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
  import tensorflow as tf

  compression = 'GZIP' if path.lower().endswith('.gz') else None
  kinds = {
    'int64_list': 'integer',
    'float_list': 'real',
    'bytes_list': 'discrete',
  }
  number = 0
  try:
    for number, record in enumerate(  # noqa: B007  (read by the error)
      tf.data.TFRecordDataset(path, compression), start=1
    ):
      example = tf.train.Example.FromString(record.numpy())
      row: dict[str, Any] = {}
      for name, feature in example.features.feature.items():
        kind = feature.WhichOneof('kind')
        if kind is None:
          continue
        row[name] = (list(getattr(feature, kind).value), kinds[kind])
      yield 'typed', row
  except tf.errors.OpError as e:
    raise DataError(
      f'{path}: after record {number}: not a TFRecord file '
      f'of tf.Example: {e.message.splitlines()[0]}'
    ) from None
