"""Output records of batch prediction: an input record plus its outputs.

A JSON object (the record's features, then the outputs as keys) or a
serialized tf.Example (the record's features, then a feature per output);
CSV cells are typed by the model's schema.
"""

import io

from tensorfx._errors import DataError


class Converter:
  """Turns an input record plus its outputs into the output record."""

  def __init__(self, schema, serving, prefix):
    self._schema = schema
    self._serving = list(serving)
    self._prefix = prefix or ''

  def row(self, record, outputs):
    """The JSON object: the record's features, then the outputs.

    The features come in schema order (then any the schema lacks, as the
    record had them, or sorted for a tf.Example), the outputs sorted by
    name: one key order for every record, in every process.
    """
    row = self._in_schema_order(self._features(record), record.kind)
    for name, value in sorted(outputs.items()):
      key = self._prefix + name
      if key in row and _plain(row[key]) != _plain(value):
        self._clash(record, key)
      row[key] = value
    return row

  def example(self, record, outputs):
    """The serialized tf.Example: the record's features, then the outputs."""
    import tensorflow as tf

    if record.kind == 'example':
      example = tf.train.Example.FromString(record.value)
    else:
      example = tf.train.Example()
      for name, value in self._features(record).items():
        feature = _feature(value, self._field_type(name))
        if feature is not None:
          example.features.feature[name].CopyFrom(feature)
    features = example.features.feature
    for name, value in outputs.items():
      key = self._prefix + name
      feature = _feature(value)
      if key in features and features[key] != feature:
        self._clash(record, key)
      features[key].CopyFrom(feature)
    return example.SerializeToString()

  def _in_schema_order(self, row, kind):
    """`row` with the schema's fields first, in the schema's order."""
    rest = list(row) if kind != 'example' else sorted(row)
    if self._schema is None:
      return {name: row[name] for name in rest}
    first = [name for name in self._schema.field_names if name in row]
    known = set(first)
    return {
      name: row[name] for name in first + [n for n in rest if n not in known]
    }

  def _clash(self, record, key):
    raise DataError(
      f'{record.where}: the output {key!r} would replace the input '
      f'feature {key!r}, which has another value; give a prefix for the '
      'outputs (--prefix, e.g. predicted_).'
    )

  def _field_type(self, name):
    if self._schema is not None and name in self._schema:
      return self._schema[name].type.value
    return None

  def _features(self, record):
    """The record's features as a dict of plain values."""
    if record.kind == 'json':
      return dict(record.value)
    if record.kind == 'csv':
      return self._csv_row(record.value)
    import tensorflow as tf

    example = tf.train.Example.FromString(record.value)
    row = {}
    for name, feature in example.features.feature.items():
      kind = feature.WhichOneof('kind')
      values = list(getattr(feature, kind).value) if kind else []
      if kind == 'bytes_list':
        values = [v.decode('utf-8', 'replace') for v in values]
      listed = (
        self._schema is not None
        and name in self._schema
        and self._schema[name].multivalent
      )
      row[name] = values[0] if len(values) == 1 and not listed else values
    return row

  def _csv_row(self, line):
    """A CSV line's cells by field name (typed by the schema)."""
    import csv

    values = next(csv.reader(io.StringIO(line)))
    if self._schema is None:
      return dict(zip(self._serving, values))
    fields = list(self._schema)
    if len(values) != len(fields):
      # The target columns left out, as when serving.
      fields = [self._schema[name] for name in self._serving]
    return {
      field.name: _typed(value, field) for field, value in zip(fields, values)
    }


def _typed(text, field):
  """A CSV cell as the field's Python value (None when empty)."""
  if text == '':
    return None
  kind = field.type.value
  if field.multivalent:
    parts = text.split()
    return [_number(p, kind) for p in parts]
  return _number(text, kind)


def _number(text, kind):
  try:
    if kind == 'integer':
      return int(text)
    if kind == 'real':
      return float(text)
  except ValueError:
    pass
  return text


def _flat(value):
  if isinstance(value, (list, tuple)):
    for item in value:
      yield from _flat(item)
  else:
    yield value


def _plain(value):
  """A value compared across JSON and model outputs (floats as float32)."""
  import numpy as np

  values = list(_flat(value))
  return [float(np.float32(v)) if isinstance(v, float) else v for v in values]


def _feature(value, field_type=None):
  """A tf.train.Feature holding `value` (a scalar or a nested list)."""
  import tensorflow as tf

  values = [v for v in _flat(value) if v is not None]
  if value is None or (not values and field_type is None):
    return None if value is None else tf.train.Feature()
  if field_type is None:
    first = values[0]
    if isinstance(first, (bool, int)):
      field_type = 'integer'
    elif isinstance(first, float):
      field_type = 'real'
    else:
      field_type = 'discrete'
  if field_type == 'integer':
    return tf.train.Feature(
      int64_list=tf.train.Int64List(value=[int(v) for v in values])
    )
  if field_type == 'real':
    return tf.train.Feature(
      float_list=tf.train.FloatList(value=[float(v) for v in values])
    )
  return tf.train.Feature(
    bytes_list=tf.train.BytesList(
      value=[
        v if isinstance(v, bytes) else str(v).encode('utf-8') for v in values
      ]
    )
  )
