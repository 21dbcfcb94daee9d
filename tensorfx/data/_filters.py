"""Record filters: keep only the records whose field matches a pattern.

What Gematria's `--gematria_throughput_source_filter` does for its records,
for any field of a schema: `--data-filter FIELD=REGEX` keeps a record when
the regular expression matches (anywhere, as `re.search`) the field's value,
or one of its values for a multivalent field; numbers are matched as text.
Several filters must all match.
"""

import re

from tensorfx._errors import ConfigurationError


def parse_filters(items, schema=None):
  """Parses `FIELD=REGEX` items into `(field, regex)` pairs.

  Example:
    >>> parse_filters(['source=^ithemal', 'arch=HASWELL|SKYLAKE'])
    [('source', '^ithemal'), ('arch', 'HASWELL|SKYLAKE')]

  Args:
    items: the `--data-filter` values (None or a list of strings).
    schema: the data's `Schema`, to check that each field exists.

  Returns:
    A list of `(field, regex)` pairs.

  Raises:
    ConfigurationError: an item without `=`, a bad regular expression, or
      a field not in the schema.
  """
  filters = []
  for item in items or ():
    field, sep, pattern = str(item).partition('=')
    field = field.strip()
    if not sep or not field or not pattern:
      raise ConfigurationError(
        '--data-filter expects FIELD=REGEX (e.g. source=^measured). '
        f'Received: --data-filter={item}'
      )
    try:
      re.compile(pattern)
    except re.error as e:
      raise ConfigurationError(
        f'--data-filter {field}: {pattern!r} is not a regular expression '
        f'({e}). Received: --data-filter={item}'
      ) from None
    if schema is not None:
      names = [f.name for f in schema]
      if field not in names:
        raise ConfigurationError(
          f'--data-filter names the field {field!r}, which the schema does '
          f'not have (it has {", ".join(names)}). Received: '
          f'--data-filter={item}'
        )
    filters.append((field, pattern))
  return filters


def filter_records(dataset, filters, batch_size, forever=False):
  """Keeps the records of a batched raw dataset that match every filter.

  The batches are split into records, filtered and batched again, so
  batches keep `batch_size` records (the last one may be smaller, unless
  the data repeats forever).

  Args:
    dataset: a `tf.data.Dataset` of dicts of raw [batch] tensors (dense or
      `tf.SparseTensor`), as `DataSource.read()` makes.
    filters: `(field, regex)` pairs, as `parse_filters` returns.
    batch_size: records per batch of the result.
    forever: whether `dataset` repeats forever: then every batch is full,
      with a static batch dimension (see `DataSource.read`).

  Returns:
    The filtered `tf.data.Dataset`.
  """
  import tensorflow as tf

  if not filters:
    return dataset
  # RE2 matches whole strings: `.*(?:REGEX).*` is a search.
  compiled = [(field, f'(?s).*(?:{pattern}).*') for field, pattern in filters]

  def keep(record):
    matched = tf.constant(True)
    for field, pattern in compiled:
      value = record[field]
      values = (
        value.values
        if isinstance(value, tf.SparseTensor)
        else tf.reshape(value, [-1])
      )
      if values.dtype != tf.string:
        values = tf.strings.as_string(values)
      matched = tf.logical_and(
        matched, tf.reduce_any(tf.strings.regex_full_match(values, pattern))
      )
    return matched

  return (
    dataset.unbatch()
    .filter(keep)
    .batch(batch_size, drop_remainder=forever)
    .prefetch(tf.data.AUTOTUNE)
  )


def why_nothing_matched(source, filters, limit=100_000):
  """Why filtered data is empty: what the filtered fields hold instead.

  Reads up to `limit` records of `source` unfiltered and, when none
  matches `filters`, says so with the values each filtered field holds
  (the most frequent first), so that a mistyped pattern shows what it
  should have been.

  Example:
    >>> why_nothing_matched(dataset['train'], [('source', '^hsw')])
    "--data-filter source=^hsw matched none of the 300 records read of
    the data; its field 'source' holds: 'skl' (200), 'mca' (100)"

  Args:
    source: the `DataSource` filtered.
    filters: `(field, regex)` pairs, as `parse_filters` returns.
    limit: the most records read.

  Returns:
    The message, or None when no filter is given, the data is empty, or
    a record matches (then something else emptied the data).
  """
  import collections

  import tensorflow as tf

  if not filters:
    return None
  values: dict[str, collections.Counter[str]] = {
    field: collections.Counter() for field, _ in filters
  }
  patterns = [(field, re.compile(pattern)) for field, pattern in filters]
  records = 0
  for batch in source.read(1024, epochs=1, shuffle=False):
    rows = _rows(batch, [field for field, _ in filters], tf)
    for row in rows:
      records += 1
      if all(any(p.search(v) for v in row[f]) for f, p in patterns):
        return None
      for field, _ in filters:
        values[field].update(row[field])
    if records >= limit:
      break
  if not records:
    return None
  held = '; '.join(
    f'its field {field!r} holds: '
    + ', '.join(f'{v!r} ({n})' for v, n in counts.most_common(10))
    + (f' and {len(counts) - 10} more values' if len(counts) > 10 else '')
    for field, counts in values.items()
  )
  given = ' '.join(f'{field}={pattern}' for field, pattern in filters)
  return (
    f'--data-filter {given} matched none of the {records:,} records read '
    f'of the data; {held}'
  )


def _rows(batch, fields, tf):
  """Each record's values of `fields` as text: `[{field: [str, ...]}]`."""
  columns = {}
  size = None
  for field in fields:
    value = batch[field]
    if isinstance(value, tf.SparseTensor):
      dense = tf.sparse.to_dense(
        value, default_value='' if value.dtype == tf.string else 0
      )
      counts = tf.math.bincount(
        tf.cast(value.indices[:, 0], tf.int32), minlength=value.dense_shape[0]
      ).numpy()
      cells = [list(r[:n]) for r, n in zip(dense.numpy(), counts)]
    else:
      array = value.numpy().reshape(value.shape[0], -1)
      cells = [list(r) for r in array]
    columns[field] = [
      [
        v.decode('utf-8', 'replace') if isinstance(v, bytes) else str(v)
        for v in c
      ]
      for c in cells
    ]
    size = len(cells)
  return [
    {field: columns[field][i] for field in fields} for i in range(size or 0)
  ]
