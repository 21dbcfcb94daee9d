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
