"""The statistics of metadata.json, computed a RecordBatch at a time.

Numeric fields: count, missing, min, max, mean and std of the values
present; discrete fields: count, missing and the vocabulary (value ->
count). Each batch is reduced by Arrow and NumPy (vectorized), and partial
statistics merge, so the same code runs in a Beam combiner (the analysis) and
in memory (`DataFrameDataSet.infer_metadata`).
"""

import math

from tensorfx.data import _missing

# Past this many distinct values metadata.json lists the most frequent ones
# only; the full vocabulary is in the transform graph's assets.
MAX_LISTED_VALUES = 1000
MAX_COUNTED_VALUES = 100000


class Statistics:
  """Partial statistics of some record batches of a schema.

  Example:
    >>> stats = Statistics(schema)
    >>> for batch in batches:
    ...   stats.add(batch)
    >>> Metadata.from_dict(stats.result())  # doctest: +SKIP
  """

  def __init__(self, schema):
    self._fields = [(f.name, f.type.value, f) for f in schema]
    self.instances = 0
    self.fields = {name: _new(kind) for name, kind, _ in self._fields}

  def add(self, batch):
    """Adds the rows of one `pyarrow.RecordBatch`."""
    import pyarrow.compute as pc

    self.instances += batch.num_rows
    for name, kind, field in self._fields:
      column = batch.column(name)
      values = pc.list_flatten(column)
      stats = self.fields[name]
      if kind == 'discrete':
        _add_text(stats, values, field)
      else:
        _add_numbers(stats, values, field)
    return self

  def merge(self, other):
    """Adds another partial result (of the same schema) to this one."""
    self.instances += other.instances
    for name, kind, _ in self._fields:
      _merge(self.fields[name], other.fields[name], kind)
    return self

  def result(self):
    """The metadata.json mapping: `instances` and `fields`."""
    return {
      'instances': self.instances,
      'fields': {
        name: _finish(self.fields[name], kind) for name, kind, _ in self._fields
      },
    }


def _new(kind):
  if kind == 'discrete':
    return {'count': 0, 'missing': 0, 'values': {}, 'truncated': False}
  return {
    'count': 0,
    'missing': 0,
    'min': math.inf,
    'max': -math.inf,
    'sum': 0.0,
    'sum_sq': 0.0,
  }


def _add_text(stats, values, field):
  import pyarrow.compute as pc

  if field.length == 1 and _missing.fill_value(field) == '':
    present = pc.not_equal(pc.binary_length(values), 0)
    stats['missing'] += (
      len(values) - pc.sum(present).as_py() if len(values) else 0
    )
    values = pc.filter(values, present)
  stats['count'] += len(values)
  if not len(values):
    return
  counted = pc.value_counts(values)
  counts = stats['values']
  for value, count in zip(
    counted.field('values').to_pylist(), counted.field('counts').to_pylist()
  ):
    # tf.Example holds bytes; metadata.json holds text.
    text = value.decode('utf-8', errors='replace')
    if text in counts or len(counts) < MAX_COUNTED_VALUES:
      counts[text] = counts.get(text, 0) + count
    else:
      stats['truncated'] = True


def _add_numbers(stats, values, field):
  import numpy as np

  array = values.to_numpy(zero_copy_only=False)
  if field.length == 1 and _missing.imputed(field):
    if field.type.value == 'real':
      present = ~np.isnan(array)
    else:
      present = array != _missing.INTEGER_MARKER
    stats['missing'] += int(array.size - present.sum())
    array = array[present]
  if not array.size:
    return
  numbers = array.astype(np.float64)
  stats['count'] += int(numbers.size)
  stats['min'] = min(stats['min'], float(numbers.min()))
  stats['max'] = max(stats['max'], float(numbers.max()))
  stats['sum'] += float(numbers.sum())
  stats['sum_sq'] += float(np.dot(numbers, numbers))


def _merge(into, other, kind):
  into['count'] += other['count']
  into['missing'] += other['missing']
  if kind == 'discrete':
    for v, c in other['values'].items():
      if v in into['values'] or len(into['values']) < MAX_COUNTED_VALUES:
        into['values'][v] = into['values'].get(v, 0) + c
      else:
        into['truncated'] = True
    into['truncated'] = into['truncated'] or other['truncated']
  else:
    into['min'] = min(into['min'], other['min'])
    into['max'] = max(into['max'], other['max'])
    into['sum'] += other['sum']
    into['sum_sq'] += other['sum_sq']


def _finish(stats, kind):
  count = stats['count']
  result = {'type': kind, 'count': count}
  if stats['missing']:
    result['missing'] = stats['missing']
  if kind == 'discrete':
    ordered = sorted(stats['values'].items(), key=lambda kv: (-kv[1], kv[0]))
    result.update(
      vocabulary=dict(ordered[:MAX_LISTED_VALUES]), vocabulary_size=len(ordered)
    )
    if stats['truncated'] or len(ordered) > MAX_LISTED_VALUES:
      result['vocabulary_truncated'] = True
    return result
  if not count:
    return result
  mean = stats['sum'] / count
  variance = max(stats['sum_sq'] / count - mean * mean, 0.0)
  result.update(
    min=stats['min'], max=stats['max'], mean=mean, std=math.sqrt(variance)
  )
  return result
