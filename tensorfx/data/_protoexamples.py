"""Protocol buffer records as tf.Examples, for prediction.

A model's serving signatures take tf.Examples (or CSV lines, or dicts);
batch prediction of protocol buffer records decodes each batch with the
format's in-graph decoder (one instance per record: fields under the
format's `examples` path, the measurements, are left out) and writes the
decoded fields of each record as a tf.Example, which the model parses as
it parses its training records.
"""

from collections.abc import Sequence
from typing import Any


def to_examples(
  source: Any, values: Sequence[bytes]
) -> list[tuple[bytes | None, str | None]]:
  """`(serialized tf.Example, None)` or `(None, problem)` per record.

  Args:
    source: a `ProtoDataSource` (its format and schema).
    values: serialized messages.
  """
  import tensorflow as tf

  if not values:
    return []
  try:
    decoded = source.decode(tf.constant(list(values)), for_prediction=True)
  except tf.errors.OpError:
    results: list[tuple[bytes | None, str | None]] = []
    for value in values:
      problem = source.proto_format.problem(value)
      if problem is None:
        results.extend(
          to_examples(source, [value])
          if len(values) > 1
          else [(None, 'does not decode as the schema says')]
        )
      else:
        results.append((None, problem))
    return results
  columns = {name: _rows(value, len(values)) for name, value in decoded.items()}
  examples: list[tuple[bytes | None, str | None]] = []
  for index in range(len(values)):
    example = tf.train.Example()
    for name, rows in columns.items():
      field = source.schema[name]
      feature = example.features.feature[name]
      row = rows[index]
      if field.type.value == 'integer':
        feature.int64_list.value.extend(int(v) for v in row)
      elif field.type.value == 'real':
        feature.float_list.value.extend(float(v) for v in row)
      else:
        feature.bytes_list.value.extend(row)
    examples.append((example.SerializeToString(), None))
  return examples


def _rows(value: Any, count: int) -> list:
  """One list of values per record, from a [B], [B, N] or sparse tensor."""
  import tensorflow as tf

  if isinstance(value, tf.SparseTensor):
    rows: list = [[] for _ in range(count)]
    for (row, _), item in zip(value.indices.numpy(), value.values.numpy()):
      rows[row].append(item)
    return rows
  array = value.numpy()
  return [list(row) if array.ndim > 1 else [row] for row in array]
