"""Decodes serialized protocol buffers into raw feature tensors, in-graph.

`tf.io.decode_proto` decodes one level of a message: its fields, with
sub-messages as serialized bytes. A path through repeated sub-messages is
decoded level by level, each level's bytes decoded again as the next
message, and the counts of each level kept as the row partitions of a
`tf.RaggedTensor`; the levels are then merged (flattened) or kept apart as
the spec says (see `_protopaths`). The message's descriptor travels as the
bytes of a `FileDescriptorSet` (`descriptor_source='bytes://...'`), so no
compiled proto library is needed by TensorFlow.

The result has the shapes `tf.io.parse_example` gives: a [B] tensor for a
field of length 1, [B, N] for length N, a `tf.SparseTensor` for length 0;
a record whose values do not fit the schema fails with an
`InvalidArgumentError` naming the field.
"""

from typing import Any

from tensorfx.data import _missing
from tensorfx.data import _protopaths


def descriptor_set(descriptor: Any) -> bytes:
  """The serialized `FileDescriptorSet` of a message and its imports."""
  from google.protobuf import descriptor_pb2

  files = descriptor_pb2.FileDescriptorSet()
  seen = set()

  def add(file):
    if file.name in seen:
      return
    seen.add(file.name)
    for dependency in file.dependencies:
      add(dependency)
    proto = files.file.add()
    file.CopyToProto(proto)

  add(descriptor.file)
  return files.SerializeToString()


def _output_type(field):
  import tensorflow as tf

  f = field
  if _protopaths.is_message(f) or f.type in (f.TYPE_STRING, f.TYPE_BYTES):
    return tf.string
  return {
    f.TYPE_DOUBLE: tf.float64,
    f.TYPE_FLOAT: tf.float32,
    f.TYPE_INT64: tf.int64,
    f.TYPE_SINT64: tf.int64,
    f.TYPE_SFIXED64: tf.int64,
    f.TYPE_UINT64: tf.uint64,
    f.TYPE_FIXED64: tf.uint64,
    f.TYPE_INT32: tf.int32,
    f.TYPE_SINT32: tf.int32,
    f.TYPE_SFIXED32: tf.int32,
    f.TYPE_ENUM: tf.int32,
    f.TYPE_UINT32: tf.uint32,
    f.TYPE_FIXED32: tf.uint32,
    f.TYPE_BOOL: tf.bool,
  }[f.type]


class Decoder:
  """Evaluates field specs over a batch of serialized messages.

  Args:
    descriptor: the message's `Descriptor`.
    specs: schema field name -> `FieldSpec`.
    schema: the `Schema` (types, lengths and fill values of the fields).
    examples: a path of a repeated message field: each of its elements is
      one example (specs under it read the element), or None for one
      example per record.
  """

  def __init__(self, descriptor, specs, schema, examples=None):
    self._descriptor = descriptor
    self._source = b'bytes://' + descriptor_set(descriptor)
    self._specs = specs
    self._schema = schema
    self._examples = tuple(examples.split('.')) if examples else None
    # Specs share their paths' prefixes (every token of an instruction
    # reads the instructions): each level is decoded once per batch.
    self._levels: dict = {}

  def _decode(self, serialized, descriptor, field):
    """[N, (k)] ragged values of one field of N serialized messages."""
    return self._once(
      (serialized.ref(), descriptor.full_name, field.name),
      lambda: self._decode_level(serialized, descriptor, field),
    )

  def _once(self, key, build):
    """`build()`, made once per batch for each key."""
    if key not in self._levels:
      self._levels[key] = build()
    return self._levels[key]

  def _decode_level(self, serialized, descriptor, field):
    import tensorflow as tf

    # decode_proto refuses an empty batch (no element of a record matched,
    # a record without elements): one empty message more, dropped after.
    sizes, (values,) = tf.io.decode_proto(
      tf.concat([serialized, tf.constant([b''])], 0),
      descriptor.full_name,
      [field.name],
      [_output_type(field)],
      descriptor_source=self._source,
    )
    sizes, values = sizes[:-1], values[:-1]
    lengths = sizes[:, 0]
    if (
      not _protopaths.is_repeated(field)
      and not _protopaths.is_message(field)
      and not getattr(field, 'has_presence', False)
    ):
      # proto3: an unset scalar reads its default, as protobuf reads it.
      dense = tf.reshape(values, [-1, tf.shape(values)[1]])
      default = (
        tf.zeros([tf.shape(serialized)[0], 1], values.dtype)
        if (values.dtype != tf.string)
        else tf.fill([tf.shape(serialized)[0], 1], '')
      )
      dense = tf.concat([dense, default], axis=1)[:, 0]
      return _rows(dense, tf.ones_like(lengths))
    present = tf.sequence_mask(lengths, tf.shape(values)[1])
    return _rows(tf.gather_nd(values, tf.where(present)), lengths)

  def _walk(self, serialized, descriptor, parts, token=None):
    """[N, (k)] ragged values at `parts`, every level flattened."""
    return self._once(
      (serialized.ref(), descriptor.full_name, tuple(parts), token),
      lambda: self._walk_level(serialized, descriptor, parts, token),
    )

  def _walk_level(self, serialized, descriptor, parts, token):
    import tensorflow as tf

    field = descriptor.fields_by_name[parts[0]]
    level = self._decode(serialized, descriptor, field)
    if len(parts) == 1:
      if token is not None:
        return _rows(
          tf.fill([tf.shape(level.flat_values)[0]], token), level.row_lengths()
        )
      return level
    inner = self._walk(level.flat_values, field.message_type, parts[1:], token)
    return _nest(inner, level.row_lengths())

  def _select(self, serialized, descriptor, selection, lengths=False):
    if isinstance(selection, _protopaths.Path):
      return self._walk(
        serialized, descriptor, selection.parts, selection.token
      )
    joined, elements = self._once(
      (serialized.ref(), descriptor.full_name, selection),
      lambda: self._each(serialized, descriptor, selection),
    )
    if lengths:
      return _rows(joined.row_lengths(), elements.row_lengths())
    return _nest(joined, elements.row_lengths())

  def _each(self, serialized, descriptor, selection):
    """The items of each element, joined as text; and the elements."""
    elements = self._walk(serialized, descriptor, selection.parts)
    element_type = _protopaths.resolve(descriptor, selection.parts, '')[
      -1
    ].message_type
    parts = [
      self._as_text(self._select(elements.flat_values, element_type, item))
      for item in selection.items
    ]
    return _join(parts), elements

  @staticmethod
  def _as_text(ragged):
    import tensorflow as tf

    if ragged.dtype == tf.string:
      return ragged
    if ragged.dtype.is_floating:
      # As protobuf's text: 1.5, 2 (not 2.000000).
      return tf.ragged.map_flat_values(
        lambda v: tf.strings.as_string(v, shortest=True), ragged
      )
    if ragged.dtype == tf.bool:
      return tf.ragged.map_flat_values(
        lambda v: tf.where(v, 'true', 'false'), ragged
      )
    return tf.ragged.map_flat_values(tf.strings.as_string, ragged)

  def _matched(self, spec, serialized, descriptor):
    """[N, (k)] values of the first element whose `where` matches."""
    import tensorflow as tf

    owner = spec.where[:-1]
    elements = self._walk(serialized, descriptor, owner)
    element_type = _protopaths.resolve(descriptor, owner, '')[-1].message_type
    keys = self._as_text(
      self._walk(elements.flat_values, element_type, spec.where[-1:])
    )
    keys = keys.to_tensor(default_value='', shape=[None, 1])[:, 0]
    # RE2 matches whole strings: `(?:REGEX).*` is Python's re.match.
    hits = tf.cast(
      tf.strings.regex_full_match(keys, f'(?s)(?:{spec.match}).*'), tf.int64
    )
    rows = elements.value_rowids()
    # How many hits up to each element, within its row: 1 at the first.
    running = tf.cumsum(hits)
    before = tf.gather(tf.concat([[0], running], 0), elements.row_starts())
    first = tf.logical_and(hits > 0, running - tf.gather(before, rows) == 1)
    counts = tf.math.unsorted_segment_sum(
      tf.cast(first, tf.int64), rows, elements.nrows()
    )
    inner = _relative(spec.selection, len(owner))
    values = self._select(
      tf.boolean_mask(elements.flat_values, first),
      element_type,
      inner,
      spec.lengths,
    )
    return _nest(values, counts)

  def _field(self, spec, serialized, descriptor):
    import tensorflow as tf

    if spec.match is not None:
      values = self._matched(spec, serialized, descriptor)
    else:
      values = self._select(
        serialized, descriptor, spec.selection, spec.lengths
      )
    if spec.reduce == 'count':
      counts = values.row_lengths()
      return _rows(counts, tf.ones_like(counts))
    if spec.reduce is not None:
      if values.dtype == tf.string or spec.reduce == 'first':
        return values[:, :1]
      values = tf.cast(values, tf.float64)
      reduce = {
        'mean': tf.reduce_mean,
        'sum': tf.reduce_sum,
        'min': tf.reduce_min,
        'max': tf.reduce_max,
      }[spec.reduce]
      present = values.row_lengths() > 0
      # No values: nothing to reduce (a missing value, not NaN).
      return _rows(
        tf.boolean_mask(reduce(values, axis=1), present),
        tf.cast(present, tf.int64),
      )
    return values

  def decode(self, serialized, for_prediction=False):
    """Dict of raw feature tensors (by schema field) of a [B] batch.

    Args:
      serialized: a [B] string tensor of serialized messages.
      for_prediction: one example per record even when `examples` is set;
        the fields under `examples` (measurements, targets) are left out.
    """
    self._levels = {}
    try:
      return self._decode_batch(serialized, for_prediction)
    finally:
      self._levels = {}

  def _decode_batch(self, serialized, for_prediction):
    import tensorflow as tf

    records = serialized
    rows: Any | None = None
    element_type = None
    elements = None
    if self._examples and not for_prediction:
      found = self._walk(serialized, self._descriptor, self._examples)
      rows = found.value_rowids()
      elements = found.flat_values
      element_type = _protopaths.resolve(self._descriptor, self._examples, '')[
        -1
      ].message_type
    outputs: dict[str, Any] = {}
    for name, spec in self._specs.items():
      if for_prediction and spec.match is not None:
        # A measurement picked by its source: not an input.
        continue
      under = self._under_examples(spec.parts)
      if under is not None:
        if for_prediction:
          continue
        depth = len(spec.parts) - len(under)
        local = _protopaths.FieldSpec(
          _relative(spec.selection, depth), spec.lengths, spec.reduce
        )
        values = self._field(local, elements, element_type)
      else:
        values = self._field(spec, records, self._descriptor)
        if rows is not None:
          values = tf.gather(values, rows)
      outputs[name] = self._shaped(name, values)
    return outputs

  def _under_examples(self, parts: tuple[str, ...]):
    if (
      self._examples is not None
      and parts[: len(self._examples)] == self._examples
    ):
      return parts[len(self._examples) :]
    return None

  def _shaped(self, name, values):
    """The schema's dtype and shape (dense, [B, N] or sparse) of a field."""
    import tensorflow as tf

    field = self._schema[name]
    dtype = {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}[
      field.type.value
    ]
    if dtype == tf.string:
      values = self._as_text(values)
    else:
      if values.dtype == tf.string:
        raise tf.errors.InvalidArgumentError(
          None,
          None,
          f'field {name!r}: the proto field is text, the '
          f'schema says {field.type.value}',
        )
      values = tf.cast(values, dtype)
    lengths = values.row_lengths()
    if field.length == 0:
      return values.to_sparse()
    fill = _missing.fill_value(field)
    if field.length == 1 and fill is not None:
      check = tf.debugging.assert_less_equal(
        lengths,
        tf.constant(1, lengths.dtype),
        message=f'field {name!r}: more than one value in the message',
      )
      with tf.control_dependencies([check]):
        return values.to_tensor(
          default_value=tf.constant(fill, dtype), shape=[None, 1]
        )[:, 0]
    check = tf.debugging.assert_equal(
      lengths,
      tf.constant(field.length, lengths.dtype),
      message=f'field {name!r}: expected {field.length} value(s) in each '
      'message',
    )
    with tf.control_dependencies([check]):
      dense = tf.reshape(values.flat_values, [-1, field.length])
    return dense[:, 0] if field.length == 1 else dense


def _relative(selection, depth):
  if isinstance(selection, _protopaths.Each):
    return _protopaths.Each(selection.parts[depth:], selection.items)
  return _protopaths.Path(selection.parts[depth:], selection.token)


# The ragged tensors below are built from decode_proto's own counts, so
# they are valid by construction: RaggedTensor's checks and its general
# concat and merge would add ~50 operations each to every traced decoder.


def _rows(values, lengths):
  """[N, (k)]: `values` cut into rows of `lengths`."""
  import tensorflow as tf

  return tf.RaggedTensor.from_row_lengths(
    values, tf.cast(lengths, tf.int64), validate=False
  )


def _nest(inner, lengths):
  """[N, (k)]: the rows of `inner` taken `lengths` at a time, each joined."""
  import tensorflow as tf

  splits = tf.concat([[0], tf.cumsum(tf.cast(lengths, tf.int64))], 0)
  return tf.RaggedTensor.from_row_splits(
    inner.values, tf.gather(inner.row_splits, splits), validate=False
  )


def _join(parts):
  """[N, (k)]: row by row, the values of each part in turn."""
  import tensorflow as tf

  if len(parts) == 1:
    return parts[0]
  lengths = tf.add_n([part.row_lengths() for part in parts])
  # Where each part's values go: its row's start, after the earlier parts.
  start = tf.cumsum(lengths, exclusive=True)
  indices = []
  for part in parts:
    position = tf.range(tf.size(part.values, tf.int64))
    rows = tf.searchsorted(part.row_splits[1:], position, side='right')
    within = position - tf.gather(part.row_splits, rows)
    indices.append(tf.cast(tf.gather(start, rows) + within, tf.int32))
    start += part.row_lengths()
  values = tf.dynamic_stitch(indices, [part.values for part in parts])
  return _rows(values, lengths)
