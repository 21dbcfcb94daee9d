"""`--action predict`: batch prediction with a checkpoint, without export.

Gematria predicts from a checkpoint file with the model its flags build
(`--gematria_action=predict --gematria_checkpoint_file=...`). Here the
trainer builds the model from its flags, restores the checkpoint, traces
the serving signatures in memory (nothing is written) and predicts the
`--predict-input` files into `--predict-output` with
`tensorfx.prediction.predict_files`, exactly as an exported model would.
"""

import types

from tensorfx.prediction import Model
from tensorfx.prediction import _batch
from tensorfx.training._run import actions as _actions


class _Signature:
  """A traced serving function, called by keyword as a loaded SavedModel's.

  `tensorfx.prediction.Model` calls a SavedModel's signatures with one
  keyword per input and reads their inputs from
  `structured_input_signature`; the functions the builder traces take
  them positionally (or as one dict).
  """

  def __init__(self, function):
    self._function = function
    args, _ = function.structured_input_signature
    self._as_dict = len(args) == 1 and isinstance(args[0], dict)
    specs = dict(args[0]) if self._as_dict else {s.name: s for s in args}
    self._names = list(specs)
    self.structured_input_signature = ((), specs)

  def __call__(self, **inputs):
    if self._as_dict:
      return self._function(inputs)
    return self._function(*[inputs[name] for name in self._names])


def checkpoint_model(builder, output, checkpoint=None):
  """A `tensorfx.prediction.Model` of a checkpoint, without exporting it.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory (its analysis is used when there is
      no `--data-metadata`).
    checkpoint: a checkpoint prefix or directory; None for the latest of
      `OUTPUT/checkpoints`.

  Returns:
    The `Model`, its `path` the checkpoint restored.
  """
  prepared = _actions.Prepared(builder, output, checkpoint)
  signatures = {
    name: _Signature(function)
    for name, function in prepared.prediction.signatures.items()
  }
  return Model(
    types.SimpleNamespace(signatures=signatures),
    path=prepared.path,
    schema=builder.dataset.schema,
  )


def predict(builder, output, checkpoint, settings, skip_bad_records=False):
  """Predicts `settings.inputs` with a checkpoint into `settings.output`.

  Args:
    builder: the `ModelBuilder`.
    output: the job's output directory.
    checkpoint: a checkpoint prefix or directory; None for the latest.
    settings: the job's `PredictionSettings`.
    skip_bad_records: skip and count bad input records instead of failing.

  Returns:
    The `PredictionSummary`.
  """
  model = checkpoint_model(builder, output, checkpoint)
  return _batch.predict_files(
    model,
    list(settings.inputs),
    settings.output,
    input_format=settings.input_format,
    output_format=settings.output_format,
    batch_size=settings.batch_size,
    prefix=settings.prefix,
    skip_bad_records=skip_bad_records,
    **_proto_options(builder, settings),
  )


def _proto_options(builder, settings):
  """Reading (and annotating) protocol buffer records, for such datasets."""
  dataset = builder.dataset
  if getattr(dataset, 'proto_format', None) is None or not dataset.sources:
    return {}
  return {
    'protos': dataset[dataset.sources[0]],
    'source_name': settings.source or type(builder).__name__,
  }
