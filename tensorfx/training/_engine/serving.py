"""The serving signatures: the exported model takes raw instances.

Three signatures share one model: `serving_default` takes CSV lines
(`csv`, in schema order, target columns optional), `predict_examples`
serialized tf.Example protos (`examples`), and `predict_features` one
tensor per raw field. Each parses, applies the tf.Transform graph, then
the hooks `build_inference` and `build_output` (traced once, in one
function the three signatures call, on the chief, when the model is first
exported or checked).
"""

import tensorflow as tf

from tensorfx import _autograph
from tensorfx import embeddings
from tensorfx.data import FeatureType
from tensorfx.data import _csv
from tensorfx.data import _listtext
from tensorfx.data import _missing
from tensorfx.data import _transforms
from tensorfx.data import _validation
from tensorfx.training import _interfaces
from tensorfx.training._engine import precision


def build(builder):
  """Builds the `PredictionInterface` of `builder`'s model."""
  dataset = builder.dataset
  schema = dataset.schema
  features = dataset.features
  target_fields = set()
  key_names = []
  if features is not None:
    for feature in features:
      if feature.type in (FeatureType.TARGET, FeatureType.WEIGHT):
        # What is known only of training data: optional when serving.
        target_fields.update(feature.fields)
      elif feature.type == FeatureType.KEY:
        key_names.append(feature.name)
  serving = [f for f in schema if f.name not in target_fields]
  # As training reads records: a field with a default may be left out.
  spec = _transforms.parsing_spec(schema)
  serving_spec = {f.name: spec[f.name] for f in serving}
  # CSV cells and feature tensors hold list fields as text: "7 8 9".
  text_schema = _listtext.text_schema(schema)
  text_spec = _transforms.raw_feature_spec(text_schema)
  transform = _transforms.applier(builder.transform_layer)

  # The hooks are users' code: converted (this module is not).
  _autograph.skip_library()
  build_inference = _autograph.hook(builder.build_inference)
  build_output = _autograph.hook(builder.build_output)

  # Each signature parses its input into the same raw tensors, so one
  # trace of the model serves all three (one per signature tripled the
  # serving check: 6.5 s of the Gematria sample's start-up, now 2.4 s).
  @tf.function(autograph=False)
  def predict(raw):
    transformed = transform(raw)
    inferences = precision.to_float32(
      build_inference(transformed, training=False)
    )
    # float32 outputs whatever --precision the model computed in.
    outputs = dict(precision.to_float32(build_output(inferences)))
    for name in key_names:
      outputs[name] = transformed[name]
    return outputs

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name='csv')])
  def predict_csv(csv):
    raw, reasons = _csv.parse_lines(
      csv,
      text_schema,
      fields=[f.name for f in serving],
      optional=sorted(target_fields),
    )
    index = tf.range(1, tf.size(csv, out_type=tf.int64) + 1)
    check = _validation.assert_valid(
      reasons, tf.fill(tf.shape(csv), 'instance'), index
    )
    with tf.control_dependencies([check]):
      raw = {k: tf.identity(v) for k, v in raw.items()}
    return predict(_listtext.parse_lists(raw, schema))

  @tf.function(
    input_signature=[tf.TensorSpec([None], tf.string, name='examples')]
  )
  def predict_examples(examples):
    return predict(tf.io.parse_example(examples, serving_spec))

  feature_signature = {
    f.name: tf.TensorSpec([None], text_spec[f.name].dtype, name=f.name)
    for f in serving
  }

  @tf.function(input_signature=[feature_signature])
  def predict_features(raw):
    return predict(_listtext.parse_lists(_na_texts(raw, serving), schema))

  signatures = {
    'serving_default': predict_csv.get_concrete_function(),
    'predict_examples': predict_examples.get_concrete_function(),
    'predict_features': predict_features.get_concrete_function(),
  }
  module = tf.Module()
  module.transform_layer = builder.transform_layer
  captured = {}
  for function in signatures.values():
    for variable in function.variables:
      captured[id(variable)] = variable
  module.model_variables = list(captured.values())
  # Exact-key tables serve through their indexes' hash tables.
  module.embedding_indexes = [
    index
    for table in embeddings.find_tables(builder)
    for index in table.index_tables
  ]
  return _interfaces.PredictionInterface(signatures=signatures, module=module)


def _na_texts(raw, fields):
  """Text features equal to one of their field's `na_values` made missing.

  A served `NA` is missing, as the CSV lines it was trained from said; a
  number tensor cannot hold one.
  """
  raw = dict(raw)
  for field in fields:
    fill = _missing.fill_value(field)
    if (
      not field.na_values
      or field.type.value != 'discrete'
      or fill is None
      or field.multivalent
    ):
      continue
    value = raw[field.name]
    token = tf.reduce_any(
      tf.equal(value[:, None], tf.constant(list(field.na_values))), axis=1
    )
    raw[field.name] = tf.where(token, fill, value)
  return raw
