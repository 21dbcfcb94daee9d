"""List fields written as text, for the CSV and per-feature serving inputs.

A CSV cell and a feature tensor hold one value per instance, so the
serving signatures take a list field (length 0 or N) as one string whose
values are separated by spaces: `"7 8 9"`, `""` for no values. Training
files carry lists natively (tf.Example).
"""

import dataclasses

from tensorfx.data._schema import Schema


def text_schema(schema):
  """`schema` with each list field read as one (discrete) text value.

  Example:
    >>> text_schema(schema)['history'].type.value
    'discrete'
  """
  return Schema(
    [
      dataclasses.replace(field, type='discrete', length=1, default='')
      if field.multivalent
      else field
      for field in schema
    ]
  )


def parse_lists(raw, schema):
  """Turns the text of list fields back into their values.

  Example:
    >>> parse_lists({'history': tf.constant(['7 8', ''])}, schema)['history']
    SparseTensor(indices=[[0, 0], [0, 1]], values=[7, 8], dense_shape=[2, 2])

  Args:
    raw: a dict of [B] tensors by field name, list fields as text.
    schema: the `Schema` (not the text one).

  Returns:
    The dict with each list field as the data readers give it: a [B, None]
    `tf.SparseTensor` (length 0) or a [B, N] tensor (length N).
  """
  import tensorflow as tf

  from tensorfx.data import _transforms

  dtypes = _transforms.raw_feature_spec(schema)
  parsed = dict(raw)
  for field in schema:
    if not field.multivalent or field.name not in raw:
      continue
    values = tf.strings.split(tf.strings.strip(raw[field.name]))
    dtype = dtypes[field.name].dtype
    if dtype != tf.string:
      values = tf.ragged.map_flat_values(
        tf.strings.to_number, values, out_type=dtype
      )
    if field.length == 0:
      parsed[field.name] = values.to_sparse()
      continue
    check = tf.debugging.assert_equal(
      values.row_lengths(),
      tf.constant(field.length, tf.int64),
      message=f'field {field.name!r} needs {field.length} values, '
      'separated by spaces',
    )
    with tf.control_dependencies([check]):
      parsed[field.name] = values.to_tensor(shape=[None, field.length])
  return parsed
