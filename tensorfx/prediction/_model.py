"""Model: predictions from an exported tensorfx SavedModel."""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

from tensorfx import _atomic
from tensorfx import _logging
from tensorfx._errors import DataError
from tensorfx.data import Schema
from tensorfx.data import _missing

_CSV = 'serving_default'
_EXAMPLES = 'predict_examples'
_FEATURES = 'predict_features'


class Model:
  """A trained model, loaded from its SavedModel, predicting raw instances.

  Example:
    >>> model = Model.load('output/model')
    >>> model.predict(['6.3,3.3,6,2.5'])
    [{'classes': ['setosa', 'versicolor', 'virginica'], 'label': 'virginica',
      'scores': [0.0, 0.01, 0.99]}]

  Args:
    saved_model: the object `tf.saved_model.load` returned.
    path: where it was loaded from.
  """

  def __init__(
    self,
    saved_model: Any,
    path: str | None = None,
    schema: Schema | None = None,
  ) -> None:
    self._model = saved_model
    self.path = path
    self.schema = schema
    # The version number, when loaded from a versioned base directory.
    self.version: int | None = None
    signature = saved_model.signatures[_FEATURES]
    _, specs = signature.structured_input_signature
    order = schema.field_names if schema is not None else sorted(specs)
    self._feature_specs = {n: specs[n] for n in order if n in specs}

  @classmethod
  @_logging.guard_root()
  def load(cls, path: str) -> Model:
    """Loads the SavedModel at `path` (a tensorfx export, local or gs://).

    `path` is a SavedModel directory (`OUTPUT/model`), or a base directory
    of numbered versions as TensorFlow Serving lays them out
    (`--export-versioned`: `OUTPUT/model/300/`, `OUTPUT/model/600/`),
    whose highest version is loaded, as TensorFlow Serving would serve.

    Example:
      >>> model = Model.load('output/model')      # either layout
      >>> model.path, model.version
      ('output/model/600', 600)

    Raises:
      DataError: naming `path`, when there is no tensorfx model there.
    """
    import tensorflow as tf

    if not tf.io.gfile.exists(path):
      raise DataError(f'There is no model at {path!r}.')
    _check_complete(path)
    path, version = _resolve_version(path)
    try:
      loaded = tf.saved_model.load(path)
    except (OSError, tf.errors.OpError) as e:
      _check_complete(path)
      raise DataError(f'Cannot load the model at {path!r}: {e}') from None
    # An export that began while this one was loading replaced files.
    _check_complete(path)
    missing = [
      s for s in (_CSV, _EXAMPLES, _FEATURES) if s not in loaded.signatures
    ]
    if missing:
      raise DataError(
        f'{path!r} is not a tensorfx model: it lacks the signatures {missing}.'
      )
    schema_path = os.path.join(path, 'assets.extra', 'schema.yaml')
    schema = (
      Schema.load(schema_path) if tf.io.gfile.exists(schema_path) else None
    )
    model = cls(loaded, path, schema)
    model.version = version
    return model

  @property
  def features(self) -> list[str]:
    """The raw features of an instance, in schema order (no targets)."""
    return list(self._feature_specs)

  @_logging.guard_root()
  def predict(self, instances: Sequence[Any]) -> list[dict[str, Any]]:
    """Predicts a list of raw instances.

    Args:
      instances: a list whose items are all of one kind: CSV lines (`str`,
        fields in schema order, target columns optional), dicts of raw
        values by field name, or serialized `tf.train.Example` protos
        (`bytes`, or `tf.train.Example` objects). A missing value (an empty
        cell, an absent key or feature, None or NaN, or a text among the
        field's `na_values`, such as `NA`) means what the schema says it
        means, as in training.

    Returns:
      One dict of outputs per instance, with plain Python values, its keys
      in the one order every prediction has: sorted by output name (the
      same in every process, whatever `PYTHONHASHSEED`). For
      `nn.FeedForwardClassification`: `classes` (the class names, in the
      order of `scores`), `label` (the predicted class) and `scores` (a
      probability per class).

    Raises:
      DataError: naming the instance and what is wrong with it.
    """
    import tensorflow as tf

    from tensorfx.data import _validation

    instances = list(instances)
    if not instances:
      return []
    first = instances[0]
    kinds = {type(i) for i in instances}
    if isinstance(first, str):
      self._same(kinds, str)
      call = lambda: self._model.signatures[_CSV](
        csv=tf.constant(instances, tf.string)
      )
    elif isinstance(first, dict):
      self._same(kinds, dict)
      call = lambda: self._model.signatures[_FEATURES](
        **self._columns(instances)
      )
    elif isinstance(first, (bytes, tf.train.Example)):
      serialized = [
        i.SerializeToString() if isinstance(i, tf.train.Example) else i
        for i in instances
      ]
      if not all(isinstance(s, bytes) for s in serialized):
        raise DataError(
          'All instances must be of one kind (CSV lines, dicts or tf.Example).'
        )
      call = lambda: self._model.signatures[_EXAMPLES](
        examples=tf.constant(serialized, tf.string)
      )
    else:
      raise DataError(
        'An instance must be a CSV line (str), a dict or a '
        'serialized tf.Example. Received: '
        f'{type(first).__name__}'
      )
    with _validation.data_errors():
      outputs = call()
    return _rows({k: v.numpy() for k, v in outputs.items()}, len(instances))

  def _fill(self, name):
    """What stands for a missing value of feature `name`, or None (an error).

    List fields travel as text (`"7 8"`): missing is no value, `""`.
    """
    if self.schema is None or name not in self.schema:
      return None
    field = self.schema[name]
    return '' if field.multivalent else _missing.fill_value(field)

  def _token(self, name, value):
    """Whether `value` is one of the field's missing-value texts (`NA`)."""
    return (
      isinstance(value, str)
      and self.schema is not None
      and name in self.schema
      and value in self.schema[name].na_values
    )

  def _missing(self, index, name, present):
    what = (
      'feature {!r} has no value (None, NaN or "")'
      if present
      else 'missing feature {!r}'
    )
    message = f'instance {index}: {what.format(name)}'
    if self.schema is not None and name in self.schema:
      return f'{message}; {_missing.hint(self.schema[name])}'
    return f'{message}; expected {self.features}.'

  @staticmethod
  def _same(kinds, kind):
    if kinds != {kind}:
      raise DataError(
        'All instances must be of one kind (CSV lines, dicts '
        'or tf.Example). Received: '
        f'{sorted(k.__name__ for k in kinds)}'
      )

  def _columns(self, instances):
    import tensorflow as tf

    columns = {}
    for name, spec in self._feature_specs.items():
      fill = self._fill(name)
      values = []
      for index, instance in enumerate(instances, start=1):
        value = instance.get(name)
        if (
          value is None
          or (isinstance(value, float) and math.isnan(value))
          or (value == '' and spec.dtype != tf.string)
          or self._token(name, value)
        ):
          if fill is None:
            raise DataError(self._missing(index, name, name in instance))
          value = fill
        elif (
          spec.dtype.is_integer
          and isinstance(value, float)
          and value.is_integer()
        ):
          # A whole number written as a float (JSON, a Parquet float column
          # that holds nulls): the integer it is.
          value = int(value)
        values.append(value)
      try:
        columns[name] = tf.constant(values, spec.dtype)
      except (TypeError, ValueError) as e:
        raise DataError(
          f'feature {name!r}: values must be {spec.dtype.name}: {e}'
        ) from None
    return columns


def _resolve_version(path: str) -> tuple[str, int | None]:
  """`(the SavedModel's directory, its version or None)` for `path`.

  Raises:
    DataError: `path` holds neither a SavedModel nor numbered versions.
  """
  import tensorflow as tf

  if any(
    tf.io.gfile.exists(os.path.join(path, name))
    for name in ('saved_model.pb', 'saved_model.pbtxt')
  ):
    return path, None
  versions = []
  if tf.io.gfile.isdir(path):
    for name in tf.io.gfile.listdir(path):
      name = name.rstrip('/')
      # TensorFlow Serving's versions: directories named by an integer
      # (a model being written, 300.partial, is not one yet; nor, on an
      # object store, one that holds the marker of an unfinished export).
      if (
        name.isdigit()
        and tf.io.gfile.exists(os.path.join(path, name, 'saved_model.pb'))
        and not _atomic.incomplete(os.path.join(path, name))
      ):
        versions.append(int(name))
  if not versions:
    raise DataError(
      f'Cannot load the model at {path!r}: it holds no saved_model.pb, '
      'nor version directories holding one (VERSION/saved_model.pb, as '
      '--export-versioned writes).'
    )
  version = max(versions)
  return os.path.join(path, str(version)), version


def _rows(outputs, count):
  """One dict of plain Python values per instance, from output columns.

  The keys are sorted: a signature's outputs come back in no fixed order
  (it is a map), and a prediction must read the same in every process.
  """
  # tolist() converts a whole column in C; only text needs a Python pass.
  names = sorted(outputs)
  columns = [
    _plain(outputs[name].tolist())
    if outputs[name].dtype.kind in 'OSU'
    else outputs[name].tolist()
    for name in names
  ]
  if not columns:
    return [{} for _ in range(count)]
  return [dict(zip(names, values)) for values in zip(*columns)]


def _plain(values):
  """Decodes the bytes in a (nested) list of values."""
  return [
    v.decode('utf-8', errors='replace')
    if isinstance(v, bytes)
    else _plain(v)
    if isinstance(v, list)
    else v
    for v in values
  ]


def _check_complete(path):
  """Refuses a model directory whose export is unfinished (gs://)."""
  if _atomic.incomplete(path):
    raise DataError(
      f'The model at {path!r} is incomplete: its export was interrupted '
      f'(or is still running; {_atomic.MARKER} is there until it ends). '
      'Export it again: tensorfx export --output JOB_DIR.'
    )
