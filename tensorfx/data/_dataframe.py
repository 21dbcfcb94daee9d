"""pandas DataFrames as data sources, with the schema inferred if not given.

A DataFrame is in memory already, so reading it is a gather per batch: the
pipeline shuffles and batches row indices, then takes each column's rows of
the batch in one vectorized call.
"""

import numbers

from tensorfx._errors import DataError
from tensorfx.data import _missing
from tensorfx.data import _sourceargs
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource
from tensorfx.data._schema import Schema
from tensorfx.data._schema import SchemaField
from tensorfx.data._schema import SchemaFieldType
from tensorfx.data._schema import is_identifier

# Rows per RecordBatch the analysis reads.
_BATCH_ROWS = 65536


def _is_list(value):
  import numpy as np

  return isinstance(value, (list, tuple, np.ndarray))


def _type_of_values(values, column):
  """The schema type of a sequence of Python/numpy scalars."""
  import numpy as np

  values = [v for v in values if v is not None]
  if values and all(
    isinstance(v, (numbers.Integral, np.integer))
    and not isinstance(v, (bool, np.bool_))
    for v in values
  ):
    return 'integer'
  if values and all(
    isinstance(v, (numbers.Real, np.number))
    and not isinstance(v, (bool, np.bool_))
    for v in values
  ):
    return 'real'
  if all(isinstance(v, (str, bytes, bool, np.bool_)) for v in values):
    return 'discrete'
  raise DataError(
    f'Column {column!r} mixes value types; give a schema to say how to read it.'
  )


def infer_schema(frame):
  """A `Schema` for the columns of a DataFrame.

  int columns (nullable `Int64` too) are integer fields, float columns real
  ones; object, string, category and bool columns are discrete. A column
  whose cells are lists is a variable-length field (length 0) of its
  values' type. As `tensorfx schema infer` does, a number column with holes
  (NaN, None, `pd.NA`) gets `missing: mean`; a text column's holes are out
  of vocabulary. So a DataFrame with holes trains as loaded.

  Example:
    >>> infer_schema(pd.DataFrame({'n': [1, 2], 'c': ['a', 'b']})).field_names
    ('n', 'c')

  Raises:
    DataError: a column name is not an identifier, or its type is unknown.
  """
  import pandas as pd
  from pandas.api import types

  fields = []
  for name in frame.columns:
    if not is_identifier(name):
      raise DataError(
        f'DataFrame column names must be letters, digits and '
        f'underscores, not starting with a digit. Received: '
        f'{name!r}'
      )
    column = frame[name]
    dtype = column.dtype
    if types.is_bool_dtype(dtype):
      kind, length = 'discrete', 1
    elif types.is_integer_dtype(dtype):
      kind, length = 'integer', 1
    elif types.is_float_dtype(dtype):
      kind, length = 'real', 1
    elif (
      isinstance(dtype, pd.CategoricalDtype)
      or types.is_string_dtype(dtype)
      or types.is_object_dtype(dtype)
    ):
      cells = [c for c in column if _is_list(c)]
      if cells and len(cells) == len(column):
        length = 0
        kind = _type_of_values([v for c in cells for v in c], name)
      elif cells:
        raise DataError(f'Column {name!r} mixes lists and single values.')
      else:
        length = 1
        kind = 'discrete'
    else:
      raise DataError(
        f'Column {name!r} has dtype {dtype}, which a schema '
        'cannot describe; convert it, or drop it.'
      )
    missing = None
    if length == 1 and kind != 'discrete' and column.isna().any():
      missing = 'mean'
    fields.append(
      SchemaField(name, SchemaFieldType(kind), length=length, missing=missing)
    )
  if not fields:
    raise DataError('The DataFrame has no columns.')
  return Schema(fields)


class DataFrameDataSource(DataSource):
  """A pandas DataFrame: one row per instance, one column per schema field.

  Missing values (NaN, None) are what the schema says (see `Schema`'s
  `default` and `missing`): a fill value, or an error naming the column and
  row. Columns the schema lacks are ignored.

  Example:
    >>> source = DataFrameDataSource(frame, schema, name='train')
    >>> batch = next(iter(source.read(batch_size=32)))

  Args:
    frame: the `pandas.DataFrame`.
    schema: the `Schema` of its columns.
    name: the source's name, for error messages.
  """

  def __init__(self, frame, schema, name='data'):
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
      raise DataError(
        f'Source {name!r} must be a pandas DataFrame. '
        f'Received: {type(frame).__name__}'
      )
    super().__init__([], schema)
    self.name = name
    self.frame = frame
    self._columns = None

  def files(self):
    """A DataFrame source has no files."""
    return []

  def __len__(self):
    return len(self.frame)

  def columns(self):
    """The checked columns: field name -> numpy array (or list of lists).

    Raises:
      DataError: naming the column (and row) that does not fit the schema.
    """
    if self._columns is None:
      self._columns = {f.name: self._column(f) for f in self.schema}
    return self._columns

  def _column(self, field):
    import numpy as np
    import pandas as pd

    where = f'DataFrame {self.name!r}'
    if field.name not in self.frame.columns:
      raise DataError(
        f'{where} has no column {field.name!r}; its columns '
        f'are {", ".join(map(str, self.frame.columns))}.'
      )
    column = self.frame[field.name]
    kind = field.type.value
    if field.length != 1:
      return [
        self._cells(field, row, cell, where) for row, cell in column.items()
      ]
    missing = column.isna().to_numpy()
    if field.na_values and kind == 'discrete':
      missing = missing | column.astype(object).isin(field.na_values).to_numpy()
    if missing.any():
      fill = _missing.fill_value(field)
      if fill is None:
        row = column.index[int(np.argmax(missing))]
        raise DataError(
          f'{where}: row {row!r}: column {field.name!r} is '
          f'empty; {_missing.hint(field)}'
        )
      column = column.astype(object).where(~missing, fill)
    if kind == 'discrete':
      return np.array(
        [v.decode('utf-8') if isinstance(v, bytes) else str(v) for v in column],
        dtype=object,
      )
    try:
      numeric = pd.to_numeric(column, errors='raise')
    except (ValueError, TypeError):
      bad = pd.to_numeric(column, errors='coerce').isna().to_numpy()
      row = column.index[int(np.argmax(bad))]
      raise DataError(
        f'{where}: row {row!r}: column {field.name!r} is not '
        f'a number: {column[row]!r}'
      ) from None
    values = numeric.to_numpy()
    if kind == 'integer':
      if values.dtype.kind == 'f':
        fractional = values != np.round(values)
        if fractional.any():
          row = column.index[int(np.argmax(fractional))]
          raise DataError(
            f'{where}: row {row!r}: column {field.name!r} is '
            f'not an integer: {column[row]!r}'
          )
      return values.astype(np.int64)
    return values.astype(np.float32)

  def _cells(self, field, row, cell, where):
    """One list cell of a multivalent field, as a checked Python list."""
    if cell is None or (not _is_list(cell) and _isna(cell)):
      values = []
    elif _is_list(cell):
      values = list(cell)
    else:
      raise DataError(
        f'{where}: row {row!r}: column {field.name!r} holds '
        f'{cell!r}; field {field.name!r} has length '
        f'{field.length}, so each cell must be a list.'
      )
    if field.length > 1 and len(values) != field.length:
      if not values and field.default is not None:
        values = [field.default] * field.length
      else:
        raise DataError(
          f'{where}: row {row!r}: column {field.name!r} has '
          f'{len(values)} values; the schema says '
          f'{field.length}.'
        )
    kind = field.type.value
    try:
      if kind == 'integer':
        values = [_as_int(v) for v in values]
      elif kind == 'real':
        values = [float(v) for v in values]
      else:
        values = [
          v.decode('utf-8') if isinstance(v, bytes) else str(v) for v in values
        ]
    except (TypeError, ValueError):
      raise DataError(
        f'{where}: row {row!r}: column {field.name!r} holds '
        f'values that are not {kind}: {values!r}'
      ) from None
    return values

  def read(
    self, batch_size, epochs=1, shuffle=False, seed=None, shuffle_buffer=10000
  ):
    import tensorflow as tf

    columns = {}
    for field in self.schema:
      values = self.columns()[field.name]
      if field.length == 0:
        columns[field.name] = tf.ragged.constant(
          values, dtype=_dtype(field), row_splits_dtype=tf.int64
        )
      elif field.length > 1:
        columns[field.name] = (
          tf.constant(values, dtype=_dtype(field))
          if values
          else tf.zeros([0, field.length], _dtype(field))
        )
      else:
        columns[field.name] = tf.constant(values, dtype=_dtype(field))
    size = len(self.frame)
    # Rows are shuffled and batched as indices; each batch then gathers its
    # rows from every column at once.
    ds = tf.data.Dataset.range(size)
    if shuffle:
      ds = ds.shuffle(
        min(max(size, 1), max(shuffle_buffer, 1)),
        seed=seed,
        reshuffle_each_iteration=True,
      )
    # Full batches when endless (see `DataSource.read`).
    ds = ds.repeat(epochs).batch(batch_size, drop_remainder=epochs is None)

    def gather(indices):
      batch = {}
      for name, column in columns.items():
        value = tf.gather(column, indices)
        if isinstance(value, tf.RaggedTensor):
          # As tf.io.parse_example reads variable-length features.
          value = value.to_sparse()
        batch[name] = value
      return batch

    ds = ds.map(
      gather,
      num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=not shuffle or seed is not None,
    )
    return ds.prefetch(tf.data.AUTOTUNE)

  def arrow_batches(self, rows=_BATCH_ROWS):
    """Yields the rows as Arrow RecordBatches of `rows` rows (see `_arrow`)."""
    from tensorfx.data import _arrow

    columns = self.columns()
    for start in range(0, len(self.frame), rows):
      yield _arrow.record_batch(
        {
          name: column[start : start + rows] for name, column in columns.items()
        },
        self.schema,
      )

  def record_batches(self, pipeline, label='ReadDataFrame'):
    import apache_beam as beam

    return pipeline | f'{label}Batches' >> beam.Create(
      list(self.arrow_batches())
    )

  def content_digest(self):
    import hashlib
    import pickle

    import pandas as pd

    try:
      data = pd.util.hash_pandas_object(self.frame, index=True).to_numpy()
      data = data.tobytes() + repr(list(self.frame.columns)).encode()
    except TypeError:  # Cells holding lists cannot be hashed by pandas.
      data = pickle.dumps(self.frame)
    return hashlib.sha256(data).hexdigest()[:16]


def _isna(value):
  import pandas as pd

  try:
    return bool(pd.isna(value))
  except (TypeError, ValueError):
    return False


def _as_int(value):
  if isinstance(value, float) and not value.is_integer():
    raise ValueError(value)
  return int(value)


def _dtype(field):
  import tensorflow as tf

  return {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}[
    field.type.value
  ]


class DataFrameDataSet(DataSet):
  """A DataSet of pandas DataFrames, its schema inferred when not given.

  Example:
    >>> dataset = DataFrameDataSet(train=train_df, eval=eval_df,
    ...                            features='features.yaml')
    >>> dataset.schema.field_names
    ('age', 'education', 'income')
    >>> dataset.infer_metadata().instances
    800

  Args:
    schema: a `Schema` or the path of its YAML file; by default inferred
      from the first source (see `infer_schema`).
    metadata: the analysis output: a directory written by `tensorfx analyze`
      (or its `metadata.json`), a `Metadata`, or None to analyze on demand.
    features: a `FeatureSet` or the path of its YAML file.
    **sources: named sources (`train=`, `eval=`, ...), each a DataFrame.
  """

  def __init__(self, schema=None, metadata=None, features=None, **sources):
    import pandas as pd

    _sourceargs.check_sources(
      'DataFrameDataSet',
      sources,
      ('schema', 'metadata', 'features'),
      lambda value: isinstance(value, pd.DataFrame),
      'a pandas DataFrame',
    )
    sources = {k: v for k, v in sources.items() if v is not None}
    if schema is None:
      if not sources:
        raise DataError(
          'DataFrameDataSet needs a schema or at least one '
          'source to infer it from.'
        )
      name, frame = next(iter(sources.items()))
      if not isinstance(frame, pd.DataFrame):
        raise DataError(
          f'Source {name!r} must be a pandas DataFrame. '
          f'Received: {type(frame).__name__}'
        )
      schema = infer_schema(frame)
    super().__init__(schema, metadata=metadata, features=features)
    for name, frame in sources.items():
      self._sources[name] = DataFrameDataSource(
        frame, self._reading_schema, name
      )

  def infer_metadata(self, source='train'):
    """Computes a source's statistics and vocabularies in memory (no Beam).

    The same `Metadata` that `analyze()` writes to `metadata.json`, without
    the transform graph; for looking at the data.
    """
    from tensorfx.data import _statistics
    from tensorfx.data._metadata import Metadata

    data_source = self[source]
    statistics = _statistics.Statistics(data_source.schema)
    for batch in data_source.arrow_batches():
      statistics.add(batch)
    return Metadata.from_dict(statistics.result())
