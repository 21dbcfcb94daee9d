"""Parquet files (BigQuery and Spark exports) as data sources.

Columns are found by name (the file's own order and extra columns do not
matter), read a record batch at a time with pyarrow and converted column by
column: a null is a missing value, with the field's missing policy (see
`_missing`), as is NaN in a float column and a text among a field's
`na_values`. Training reads the converted batches through `tf.data`; the
analysis hands them to tf.Transform as Arrow RecordBatches (`_arrow`).
"""

from __future__ import annotations

from typing import Any, Iterator

from tensorfx._errors import DataError
from tensorfx.data import _missing
from tensorfx.data import _sourceargs
from tensorfx.data import _validation
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource
from tensorfx.data._schema import Schema
from tensorfx.data._schema import SchemaField

# Rows per batch read from a file.
_BATCH_ROWS = 8192


def _dtype(field: SchemaField) -> Any:
  import tensorflow as tf

  return {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}[
    field.type.value
  ]


def convert(
  batch: Any, schema: Schema, where: str, first_row: int = 1
) -> dict[str, Any]:
  """The columns of a pyarrow RecordBatch (or Table) as the schema's arrays.

  Example:
    >>> convert(pa.record_batch({'x': [1.5, None]}), schema, 'f.parquet')
    {'x': array([1.5, nan], dtype=float32)}   # x: missing: mean

  Args:
    batch: the record batch; its columns are matched to fields by name.
    schema: the `Schema` (single-valued fields).
    where: the file, for messages.
    first_row: the 1-based number of the batch's first row in the file.

  Returns:
    A dict of [B] numpy arrays by field name: int64, float32 or str.

  Raises:
    DataError: naming the file, the row and the column of a null the field
      cannot take, or a column that is missing or of the wrong type.
  """
  names = batch.schema.names
  columns: dict[str, Any] = {}
  for field in schema:
    if field.name not in names:
      raise DataError(
        f'{where}: no column {field.name!r}; its columns are '
        f'{", ".join(names)}.'
      )
    columns[field.name] = _column(
      batch.column(names.index(field.name)), field, where, first_row
    )
  return columns


def _column(array: Any, field: SchemaField, where: str, first_row: int) -> Any:
  import numpy as np
  import pyarrow as pa
  import pyarrow.compute as pc

  if isinstance(array, pa.ChunkedArray):
    array = array.combine_chunks()
  if pa.types.is_dictionary(array.type):
    array = array.dictionary_decode()
  kind = field.type.value
  missing = array.is_null().to_numpy(zero_copy_only=False)
  if kind == 'discrete':
    text = (
      array
      if pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
      else pc.cast(array, pa.string())
    )
    values = text.fill_null('').to_numpy(zero_copy_only=False)
    if field.na_values:
      missing |= np.isin(values, list(field.na_values))
  else:
    if not (
      pa.types.is_integer(array.type)
      or pa.types.is_floating(array.type)
      or pa.types.is_decimal(array.type)
    ):
      raise DataError(
        f'{where}: column {field.name!r} holds {array.type}, '
        f'not numbers; the schema says {kind}.'
      )
    values = pc.cast(
      array,
      pa.float64()
      if kind == 'real' or not pa.types.is_integer(array.type)
      else pa.int64(),
    )
    values = values.fill_null(0).to_numpy(zero_copy_only=False)
    if values.dtype.kind == 'f':
      missing |= np.isnan(values)
      if kind == 'integer':
        fractional = ~missing & (values != np.round(values))
        if fractional.any():
          row = int(np.argmax(fractional))
          raise DataError(
            f'{where}: row {first_row + row}: column '
            f'{field.name!r} is not an integer: {values[row]}'
          )
  if missing.any():
    fill = _missing.fill_value(field)
    if fill is None:
      row = int(np.argmax(missing))
      raise DataError(
        f'{where}: row {first_row + row}: column '
        f'{field.name!r} is null; {_missing.hint(field)}'
      )
    values = values.copy()
    values[missing] = fill
  if kind == 'integer':
    return values.astype(np.int64)
  if kind == 'real':
    return values.astype(np.float32)
  return values.astype(object)


def batches(
  path: str, schema: Schema, rows: int = _BATCH_ROWS
) -> Iterator[dict[str, Any]]:
  """Yields the converted columns of one Parquet file, a batch at a time."""
  import pyarrow as pa
  import pyarrow.parquet as pq
  import tensorflow as tf

  source = path
  if '://' in path:
    # pyarrow cannot read a tf.io.gfile file: the file is read whole.
    with tf.io.gfile.GFile(path, 'rb') as f:
      source = pa.BufferReader(f.read())
  try:
    reader = pq.ParquetFile(source)
  except (OSError, pa.ArrowException) as e:
    raise DataError(f'{path}: not a Parquet file: {e}') from None
  present = set(reader.schema_arrow.names)
  wanted = [f.name for f in schema if f.name in present]
  first = 1
  for batch in reader.iter_batches(batch_size=rows, columns=wanted):
    yield convert(batch, schema, path, first)
    first += batch.num_rows


class ParquetDataSource(DataSource):
  """Parquet files; columns matched to the schema by name.

  Example:
    >>> source = ParquetDataSource('data/train-*.parquet', schema)
    >>> batch = next(iter(source.read(batch_size=64)))

  Args:
    paths: a path, a file pattern, a comma-separated list or a sequence of
      them; local or any `tf.io.gfile` filesystem (`gs://`).
    schema: the `Schema` (single-valued fields).
  """

  def __init__(self, paths: Any, schema: Schema) -> None:
    super().__init__(paths, schema)
    for field in schema:
      if field.length != 1:
        raise DataError(
          f'Parquet sources read one value per column; field '
          f'{field.name!r} has length {field.length}. Use ExamplesDataSet '
          'for list fields.'
        )
    self._error: str | None = None

  def read(
    self,
    batch_size: int,
    epochs: int | None = 1,
    shuffle: bool = False,
    seed: int | None = None,
    shuffle_buffer: int = 10000,
  ) -> Any:
    import random

    import tensorflow as tf

    files = self.files()
    _validation.watch(self)
    names = [f.name for f in self.schema]
    order = random.Random(seed)

    def generate():
      paths = list(files)
      if shuffle:
        order.shuffle(paths)
      try:
        for path in paths:
          for columns in batches(path, self.schema):
            yield {name: columns[name] for name in names}
      except DataError as e:
        # tf.data keeps only the text of what a generator raises.
        self._error = str(e)
        raise

    ds = tf.data.Dataset.from_generator(
      generate,
      output_signature={
        f.name: tf.TensorSpec([None], _dtype(f)) for f in self.schema
      },
    )
    ds = ds.unbatch()
    if shuffle:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    # Full batches when endless (see `DataSource.read`).
    ds = ds.repeat(epochs).batch(batch_size, drop_remainder=epochs is None)
    return ds.prefetch(tf.data.AUTOTUNE)

  def diagnose(self, error: Exception) -> str | None:
    """The message of the `DataError` that failed a `read()` pipeline."""
    if self._error and self._error.split(':')[0] in str(error):
      return self._error
    return None

  def record_batches(self, pipeline: Any, label: str = 'ReadParquet') -> Any:
    import apache_beam as beam

    from tensorfx.data import _arrow

    schema = self.schema

    def read_file(path: str) -> Iterator[Any]:
      for columns in batches(path, schema):
        yield _arrow.record_batch(columns, schema)

    files = pipeline | f'{label}Files' >> beam.Create(self.files())
    if len(self.files()) > 1:
      files |= f'{label}Spread' >> beam.Reshuffle()
    return files | f'{label}Batches' >> beam.FlatMap(read_file)


class ParquetDataSet(DataSet):
  """A DataSet of Parquet sources sharing one schema.

  Example:
    >>> dataset = ParquetDataSet('schema.yaml', train='data/train-*.parquet',
    ...                          eval='data/eval.parquet',
    ...                          features='features.yaml')

  Args:
    schema: a `Schema` or the path of its YAML file.
    metadata: the analysis output: a directory written by `tensorfx analyze`
      (or its `metadata.json`), a `Metadata`, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    **sources: named sources (`train=`, `eval=`, ...), each a path, pattern
      or list of them.

  Raises:
    DataError: a keyword is neither an option nor a source.
  """

  def __init__(
    self,
    schema: Any,
    metadata: Any = None,
    features: Any = None,
    **sources: Any,
  ) -> None:
    _sourceargs.check_sources(
      'ParquetDataSet',
      sources,
      ('schema', 'metadata', 'features'),
      _sourceargs.is_paths,
      'a path, pattern or list of them',
    )
    super().__init__(schema, metadata=metadata, features=features)
    self._add_sources(
      sources, lambda paths: ParquetDataSource(paths, self._reading_schema)
    )
