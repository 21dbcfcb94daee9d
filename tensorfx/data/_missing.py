"""Missing values: what a hole in the data means, field by field.

A value is missing when a CSV cell is empty, a tf.Example lacks the feature,
a DataFrame cell is NaN or None, or a dict instance lacks the key (or holds
None). Each field of the schema says what that means, and the meaning is the
same for every source, at training and at serving:

- `default: VALUE`: the readers put VALUE in.
- `missing: mean | median | mode | zero`: the readers put the field's marker
  in (NaN for reals, the smallest int64 for integers, '' for text), and the
  transform graph replaces it with the statistic of the values present,
  computed by the analysis. The exported model holds those statistics, so
  serving imputes what training imputed.
- `missing: error`, the field of a target, and a numeric field that says
  nothing: a missing value makes the record bad: an error naming the file
  and line (or, with --skip-bad-records, the record is skipped and counted).
- a discrete field that says nothing: the empty string, which no vocabulary
  holds: onehot and embedding features map it to their out-of-vocabulary
  bucket, hash and cross features hash it like any other value.

An `indicator` feature is 1.0 where its field's value was missing, 0.0
elsewhere, so a model can learn from the holes themselves.
"""

import dataclasses
import math

from tensorfx.data._schema import Schema

# The marker of a missing integer: no CSV cell or number parses to it (both
# readers take integers of magnitude below 2**63 only).
INTEGER_MARKER = -(2**63)
# Policies the transform graph applies (the readers put the marker in).
_IMPUTED = ('mean', 'median', 'mode', 'zero')
# A real written as `nan` is missing where the field takes missing values.
NAN_TEXT = r'\s*[+-]?[nN][aA][nN]\s*'


def marker(field):
  """The value that stands for a missing value of `field` in raw tensors."""
  if field.type.value == 'discrete':
    return ''
  if field.type.value == 'real':
    return math.nan
  return INTEGER_MARKER


def imputed(field):
  """Whether the transform graph fills the field's missing values."""
  return field.missing in _IMPUTED


def fill_value(field):
  """What a reader puts where a value of `field` is missing.

  Example:
    >>> fill_value(SchemaField('age', 'integer', missing='median'))
    -9223372036854775808
    >>> fill_value(SchemaField('age', 'integer')) is None
    True

  Returns:
    The field's default; its marker when the transform graph imputes it, or
    for a discrete field that says nothing; None when a missing value is an
    error (the record is bad).
  """
  if field.default is not None:
    return field.default
  if imputed(field):
    return marker(field)
  if (
    field.missing is None
    and field.length == 1
    and field.type.value == 'discrete'
  ):
    return ''
  return None


def hint(field):
  """How to fix a record whose value of the (required) `field` is missing."""
  if field.missing == 'error':
    return (
      'every record needs it: fix the data, or skip such records '
      '(--skip-bad-records)'
    )
  return (
    f'say what a missing {field.name} means in the schema (missing: '
    'mean, median, mode or zero; or default: VALUE), or fix the data'
  )


def is_nan(value):
  """Whether a schema default is NaN (a real field's "no value")."""
  return isinstance(value, float) and value != value


def required(schema, names):
  """`schema` with the fields `names` required (a missing value is bad).

  What a target's field is when reading training data, whatever its schema
  says: a record without its label cannot be trained on.
  """
  names = set(names)
  return Schema(
    [
      dataclasses.replace(field, missing='error', default=None)
      if field.name in names and field.length == 1
      else field
      for field in schema
    ]
  )


# In the transform graph.


def is_missing(value, field):
  """[B] bool: where a raw tensor of `field` holds its marker."""
  import tensorflow as tf

  if field.type.value == 'real':
    return tf.math.is_nan(value)
  return tf.equal(value, tf.constant(marker(field), value.dtype))


def impute(inputs, schema):
  """Replaces the markers of imputed fields by their statistics.

  Runs inside the `preprocessing_fn`: the statistics are tf.Transform
  analyzers over the values present, so they are computed by the analysis
  and are constants of the transform graph from then on.

  Args:
    inputs: the raw tensors, by field name.
    schema: the `Schema`.

  Returns:
    A new dict: the imputed fields replaced, the others as they were.
  """
  import tensorflow as tf

  outputs = dict(inputs)
  for field in schema:
    if not imputed(field) or field.name not in inputs:
      continue
    value = inputs[field.name]
    missing = is_missing(value, field)
    if field.missing == 'zero':
      fill = tf.zeros([], value.dtype)
    else:
      fill = _statistic(field, tf.boolean_mask(value, ~missing))
    outputs[field.name] = tf.where(missing, fill, value)
  return outputs


def _statistic(field, present):
  """The field's statistic over its present values, as a scalar of its type."""
  import tensorflow as tf
  import tensorflow_transform as tft

  dtype = present.dtype
  if field.missing == 'mode':
    return _mode(field, present)
  values = tf.cast(present, tf.float32)
  if field.missing == 'mean':
    statistic = tft.mean(values, name=f'missing_mean_{field.name}')
  else:
    statistic = tf.reshape(
      tft.quantiles(
        values,
        num_buckets=2,
        epsilon=0.001,
        name=f'missing_median_{field.name}',
      ),
      [-1],
    )[0]
  # No value present at all: impute zero.
  statistic = tf.where(tf.math.is_finite(statistic), statistic, 0.0)
  if dtype.is_integer:
    return tf.cast(tf.round(statistic), dtype)
  return tf.cast(statistic, dtype)


def _mode(field, present):
  """The most frequent present value, read back from a 1-entry vocabulary."""
  import tensorflow as tf
  import tensorflow_transform as tft

  dtype = present.dtype
  text = (
    present
    if dtype == tf.string
    else tf.strings.as_string(present, precision=9, scientific=True)
    if dtype.is_floating
    else tf.strings.as_string(present)
  )
  from tensorflow_transform import tf_utils

  vocabulary = tft.vocabulary(
    text,
    top_k=1,
    weights=tf.ones_like(text, tf.float32),
    vocab_filename=f'missing_mode_{field.name}',
  )

  def line_table(path):
    return tf.lookup.StaticHashTable(
      tf.lookup.TextFileInitializer(
        path,
        tf.int64,
        tf.lookup.TextFileIndex.LINE_NUMBER,
        tf.string,
        tf.lookup.TextFileIndex.WHOLE_LINE,
      ),
      default_value='',
    )

  # As tf.Transform builds its own tables: initialized once, not per call.
  mode, _ = tf_utils.construct_and_lookup_table(
    line_table, vocabulary, tf.constant([0], tf.int64)
  )
  mode = mode[0]
  if dtype == tf.string:
    return mode
  # An empty vocabulary holds a placeholder, not a number: impute zero.
  number = tf.strings.regex_full_match(mode, r'[+-]?[0-9.eE+-]+')
  value = tf.strings.to_number(
    tf.where(number, mode, '0'), tf.float64 if dtype.is_floating else tf.int64
  )
  return tf.cast(value, dtype)


def indicator(value, field):
  """[B] float32: 1.0 where the raw value of `field` is missing."""
  import tensorflow as tf

  return tf.cast(is_missing(value, field), tf.float32)
