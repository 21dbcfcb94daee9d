"""Compiles a FeatureSet into a tf.Transform `preprocessing_fn`.

One transform engine serves analysis (Beam), training (the transform graph
applied per batch in the input pipeline) and serving (the same graph inside
the exported SavedModel), so training and serving cannot skew.

Multivalent fields: a fixed-length field (length N) is a [B, N] tensor, a
variable-length one (length 0) a `tf.SparseTensor`. Numeric transforms
(identity, scale, zscore, log, bucketize) work value by value on fixed-length
fields, keeping one slot per position. Categorical transforms read any
multivalent field as a bag of values: onehot gives a multi-hot [B, size]
(1 for each value present), hash, bucketize and embedding give the index of
each value (a [B, N] tensor or a SparseTensor), which `multi_hot` and the
models' embeddings (mean of the values') turn into one row per instance.
Targets, keys and crosses read single-valued fields only.

Missing values (see `_missing`) are imputed first, so every feature reads
complete values; indicator features read the raw ones.
"""

import dataclasses
from typing import Any

from tensorfx.data import _missing
from tensorfx.data._featuretypes import FeatureType

# Types whose output is an integer category index; concat one-hot encodes them.
_CATEGORICAL = frozenset(
  {
    FeatureType.BUCKETIZE,
    FeatureType.EMBEDDING,
    FeatureType.HASH,
    FeatureType.CROSS,
  }
)


def raw_feature_spec(schema):
  """The tf.io feature spec of the raw (untransformed) data of a schema."""
  import tensorflow as tf

  spec = {}
  for field in schema:
    dtype = _dtype(field)
    if field.length == 0:
      spec[field.name] = tf.io.VarLenFeature(dtype)
    else:
      shape = [] if field.length == 1 else [field.length]
      spec[field.name] = tf.io.FixedLenFeature(shape, dtype)
  return spec


def parsing_spec(schema):
  """The tf.io feature spec that reads records, missing values filled.

  Like `raw_feature_spec`, but a fixed-length field that may be missing
  from a record (a default, or a missing value the transform imputes, see
  `_missing.fill_value`) takes its fill value there. (tf.Transform's
  metadata takes no defaults, so the raw feature spec has none.)
  """
  import tensorflow as tf

  spec = raw_feature_spec(schema)
  for field in schema:
    default = _missing.fill_value(field)
    if field.length == 0 or default is None:
      continue
    if field.length > 1:
      default = [default] * field.length
    spec[field.name] = tf.io.FixedLenFeature(
      spec[field.name].shape, spec[field.name].dtype, default_value=default
    )
  return spec


def _dtype(field):
  import tensorflow as tf

  return {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}[
    field.type.value
  ]


@dataclasses.dataclass(frozen=True)
class TransformedFeature:
  """What one transformed feature looks like to a model.

  Attributes:
    name: the feature's name.
    type: its FeatureType.
    dense_width: for float features, the width of its last dimension (1 for
      a scalar); 0 for categorical ones.
    cardinality: for categorical features (integer indices), the number of
      categories; 0 otherwise.
    embedding_dim: for embedding features, the embedding width.
    vocabulary: for vocabulary-backed targets, the labels in index order.
  """

  name: str
  type: FeatureType
  dense_width: int = 0
  cardinality: int = 0
  embedding_dim: int = 0
  vocabulary: tuple = ()

  @property
  def categorical(self):
    return self.cardinality > 0


def build_preprocessing_fn(feature_set, schema):
  """Returns the tf.Transform `preprocessing_fn` of `feature_set`.

  Args:
    feature_set: a validated `FeatureSet`.
    schema: the `Schema` of the raw data.

  Returns:
    A function from a dict of raw tensors to a dict of transformed tensors,
    one per top-level feature.
  """
  feature_set.validate(schema)

  def preprocessing_fn(inputs):
    imputed = _missing.impute(inputs, schema)
    return {f.name: _transform(f, imputed, schema, inputs) for f in feature_set}

  return preprocessing_fn


def _transform(feature, inputs, schema, raw=None):
  """One feature's tensor from the imputed `inputs`.

  Indicator features read the `raw` inputs (before imputation; by default
  `inputs`).
  """
  import tensorflow as tf
  import tensorflow_transform as tft

  raw = inputs if raw is None else raw
  kind = feature.type
  params = feature.params
  if kind == FeatureType.CONCAT:
    parts = []
    for child in feature.features:
      value = _transform(child, inputs, schema, raw)
      if child.type in _CATEGORICAL:
        value = multi_hot(value, _cardinality(child))
      elif value.dtype == tf.string:
        raise ValueError(
          f'Feature {feature.name!r}: concat needs numeric children; '
          f'{child.name!r} is a string. Received: type={child.type.value}'
        )
      parts.append(as_matrix(tf.cast(value, tf.float32)))
    return tf.concat(parts, axis=1)

  if kind == FeatureType.CROSS:
    values = [
      tf.strings.as_string(inputs[f])
      if inputs[f].dtype != tf.string
      else inputs[f]
      for f in feature.fields
    ]
    crossed = tf.strings.reduce_join(
      tf.stack(values, axis=-1), axis=-1, separator='\x1f'
    )
    return tf.strings.to_hash_bucket_fast(crossed, params['buckets'])

  x = inputs[feature.fields[0]]
  field = schema[feature.fields[0]]
  if kind == FeatureType.INDICATOR:
    return _missing.indicator(raw[field.name], field)

  def each(fn, value):
    # Value by value, for dense and variable-length (sparse) fields alike.
    if isinstance(value, tf.SparseTensor):
      return tf.sparse.map_values(fn, value)
    return fn(value)

  def as_text(value):
    return value if value.dtype == tf.string else tf.strings.as_string(value)

  if kind in (FeatureType.IDENTITY, FeatureType.KEY):
    return (
      each(lambda v: tf.cast(v, tf.float32), x)
      if kind == FeatureType.IDENTITY and field.numeric
      else x
    )
  if kind == FeatureType.WEIGHT:
    # As read: a weight of 0 leaves the example out of the loss.
    return tf.cast(x, tf.float32)
  if kind == FeatureType.TARGET:
    if field.numeric:
      return tf.cast(x, tf.float32)
    # An unseen label maps to -1 and is left out of losses and metrics.
    return tft.compute_and_apply_vocabulary(
      x,
      vocab_filename=feature.name,
      num_oov_buckets=0,
      default_value=-1,
      weights=_ones(x),
    )
  if kind == FeatureType.SCALE:
    return tft.scale_by_min_max(
      tf.cast(x, tf.float32),
      output_min=params.get('min', 0.0),
      output_max=params.get('max', 1.0),
    )
  if kind == FeatureType.ZSCORE:
    return tft.scale_to_z_score(tf.cast(x, tf.float32))
  if kind == FeatureType.LOG:
    return tf.math.log(tf.cast(x, tf.float32) + params.get('offset', 1.0))
  if kind == FeatureType.BUCKETIZE:
    x = tf.cast(x, tf.float32)
    if params.get('boundaries') is not None:
      boundaries = tf.constant([list(params['boundaries'])], tf.float32)
      return tft.apply_buckets(x, boundaries)
    return tft.bucketize(x, params['buckets'])
  if kind == FeatureType.HASH:
    return each(
      lambda v: tf.strings.to_hash_bucket_fast(as_text(v), params['buckets']), x
    )
  if kind == FeatureType.EMBEDDING and feature.table is not None:
    # Raw keys: the model's embedding table hashes them (and admits,
    # evicts), at training and serving time alike.
    return x
  if kind in (FeatureType.ONEHOT, FeatureType.EMBEDDING):
    if kind == FeatureType.EMBEDDING and params.get('hash_buckets'):
      return each(
        lambda v: tf.strings.to_hash_bucket_fast(
          as_text(v), params['hash_buckets']
        ),
        x,
      )
    text = each(as_text, x)
    if params.get('vocabulary_file'):
      index = each(lambda v: _file_vocabulary(v, params), text)
      if kind == FeatureType.EMBEDDING:
        return index
      return multi_hot(
        index,
        len(read_vocabulary(params['vocabulary_file']))
        + params.get('oov_buckets', 1),
      )
    index = tft.compute_and_apply_vocabulary(
      text,
      top_k=params.get('top_k'),
      num_oov_buckets=params.get('oov_buckets', 1),
      vocab_filename=feature.name,
      weights=_ones(text),
    )
    if kind == FeatureType.EMBEDDING:
      return index
    return multi_hot(index, _cardinality(feature))
  raise ValueError(
    f'Feature {feature.name!r}: unsupported type. Received: type={kind.value}'
  )


def read_vocabulary(path):
  """The tokens of a vocabulary file, one per line, in order (no blanks).

  Gematria's `--gematria_tokens_file` format; a token's index is its line.
  """
  import tensorflow as tf

  from tensorfx._errors import DataError

  try:
    with tf.io.gfile.GFile(path) as f:
      tokens = [line.strip() for line in f if line.strip()]
  except tf.errors.NotFoundError:
    raise DataError(f'vocabulary_file {path!r} does not exist.') from None
  if not tokens:
    raise DataError(f'vocabulary_file {path!r} holds no token.')
  return tokens


def _file_vocabulary(text, params):
  """Indexes of `text` in the file's tokens; others in the OOV buckets.

  The tokens are constants of the transform graph: the exported model does
  not need the file.
  """
  import tensorflow as tf

  tokens = read_vocabulary(params['vocabulary_file'])
  table = tf.lookup.StaticHashTable(
    tf.lookup.KeyValueTensorInitializer(
      tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)
    ),
    -1,
  )
  index = table.lookup(text)
  oov = params.get('oov_buckets', 1)
  if not oov:
    return index
  return tf.where(
    index >= 0, index, len(tokens) + tf.strings.to_hash_bucket_fast(text, oov)
  )


def _ones(x):
  """Weights of 1 per value of `x`: each batch is counted in the graph.

  With weights, tf.Transform reduces every batch to its distinct values and
  their counts before Beam sees them; without, it sends Beam every value of
  every record, which is most of the analysis's time. Same vocabulary.
  """
  import tensorflow as tf

  if isinstance(x, tf.SparseTensor):
    return tf.ones_like(x.values, tf.float32)
  return tf.ones_like(x, tf.float32)


def multi_hot(indices, depth):
  """One-hot rows of category indices; a multi-hot row for several per row.

  Example:
    >>> multi_hot(tf.constant([[0, 2], [1, 1]]), 3).numpy()
    array([[1., 0., 1.],
           [0., 1., 0.]], dtype=float32)

  Args:
    indices: [B] indices (one category each), [B, N] indices or a
      [B, None] `tf.SparseTensor` (several each; negative ones count for
      nothing, as out-of-range ones do in `tf.one_hot`).
    depth: the number of categories.

  Returns:
    [B, depth] float32: 1.0 where the row holds the category.
  """
  import tensorflow as tf

  if isinstance(indices, tf.SparseTensor):
    indices = tf.sparse.to_dense(indices, default_value=-1)
  if indices.shape.rank == 1:
    return tf.one_hot(indices, depth)
  # A sum, not a max: rows with no value at all (an empty axis 1) give 0.
  return tf.minimum(tf.reduce_sum(tf.one_hot(indices, depth), axis=1), 1.0)


def applier(layer):
  """A function applying the transform layer, not converted by autograph.

  The transform graph is a restored function: nothing in it needs
  autograph, and converting tf.Transform's loader code (which autograph
  does for each `dataset.map` or `tf.function` the layer is called in)
  costs over a second of every job's start.

  Example:
    >>> apply = applier(dataset.transform_output.transform_features_layer())
    >>> transformed = raw_batches.map(apply)
  """
  import tensorflow as tf

  @tf.autograph.experimental.do_not_convert
  def apply(features):
    return layer(features)

  return apply


def as_matrix(value):
  """Reshapes [B] or [B, ...] to [B, width], keeping the width static."""
  import numpy as np
  import tensorflow as tf

  if value.shape.rank == 1:
    return tf.expand_dims(value, -1)
  if value.shape.rank == 2:
    return value
  return tf.reshape(value, [-1, int(np.prod(value.shape.as_list()[1:]))])


def _cardinality(feature):
  """The number of categories of a categorical feature, inside the fn."""
  import tensorflow as tf
  import tensorflow_transform as tft

  params = feature.params
  if feature.type == FeatureType.BUCKETIZE:
    if params.get('boundaries') is not None:
      return len(params['boundaries']) + 1
    return params['buckets']
  if feature.type == FeatureType.HASH or feature.type == FeatureType.CROSS:
    return params['buckets']
  if params.get('hash_buckets'):
    return params['hash_buckets']
  if params.get('vocabulary_file'):
    return len(read_vocabulary(params['vocabulary_file'])) + params.get(
      'oov_buckets', 1
    )
  size = tft.experimental.get_vocabulary_size_by_name(feature.name)
  return tf.cast(size, tf.int32) + params.get('oov_buckets', 1)


def describe(feature_set, transform_output):
  """Describes each transformed feature to a model, after analysis.

  Args:
    feature_set: the `FeatureSet` that was analyzed.
    transform_output: the `tft.TFTransformOutput` of the analysis.

  Returns:
    A dict from feature name to `TransformedFeature`.
  """
  spec = transform_output.transformed_feature_spec()
  described = {}
  for feature in feature_set:
    kind = feature.type
    params = feature.params
    if kind == FeatureType.TARGET:
      vocabulary: tuple[Any, ...] = ()
      if spec[feature.name].dtype.is_integer:
        vocabulary = tuple(
          v.decode('utf-8') if isinstance(v, bytes) else v
          for v in transform_output.vocabulary_by_name(feature.name)
        )
      described[feature.name] = TransformedFeature(
        feature.name,
        kind,
        dense_width=1,
        vocabulary=vocabulary,
        cardinality=len(vocabulary),
      )
    elif kind == FeatureType.EMBEDDING and feature.table is not None:
      owner = feature_set[feature.table].params
      described[feature.name] = TransformedFeature(
        feature.name,
        kind,
        cardinality=int(owner['capacity']),
        embedding_dim=int(owner['dim']),
      )
    elif kind in _CATEGORICAL:
      if params.get('vocabulary_file'):
        size = len(read_vocabulary(params['vocabulary_file'])) + params.get(
          'oov_buckets', 1
        )
      elif kind == FeatureType.EMBEDDING and not params.get('hash_buckets'):
        size = transform_output.vocabulary_size_by_name(
          feature.name
        ) + params.get('oov_buckets', 1)
      elif kind == FeatureType.EMBEDDING:
        size = params['hash_buckets']
      elif kind == FeatureType.BUCKETIZE:
        size = (
          len(params['boundaries']) + 1
          if params.get('boundaries') is not None
          else params['buckets']
        )
      else:
        size = params['buckets']
      described[feature.name] = TransformedFeature(
        feature.name,
        kind,
        cardinality=int(size),
        embedding_dim=int(params.get('dim', 0) or 0),
      )
    else:
      shape = getattr(spec[feature.name], 'shape', [])
      width = int(shape[-1]) if shape else 1
      described[feature.name] = TransformedFeature(
        feature.name, kind, dense_width=width
      )
  return described
