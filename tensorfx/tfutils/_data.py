"""A DataSet whose sources are tfutils data functions.

A tfutils data function takes `batch_size` (and its own keyword
arguments) and returns the model's inputs, already what the model takes:
there is no schema to read by and no transform graph. Here a function
returns a `tf.data.Dataset` of dicts of batched tensors (or a dict of
arrays holding every example, which is sliced into batches).

The exported model still serves raw instances, as every tensorfx model:
the schema is inferred from the inputs the function makes (less the
targets the loss reads), and an input layer puts parsed instances back
into the shapes and types the model was trained on.
"""

import math
from typing import Any, Callable, Iterable, Mapping, NoReturn, Optional

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.data import DataSet
from tensorfx.data import DataSource
from tensorfx.data import Schema
from tensorfx.data import SchemaField
from tensorfx.data import SchemaFieldType
from tensorfx.data._schema import is_identifier


class FunctionSource(DataSource):
  """A named source read by calling a data function.

  Args:
    name: the source's name ('train', or a validation target's).
    func: the data function, called as `func(batch_size=N, **kwargs)`.
    kwargs: its other keyword arguments.
    where: the function's path, for errors
      (`train_params['data_params']`).
    cycle: whether reading repeats the data without end (a validation
      target with `num_steps` reads that many batches, cycling as
      tfutils' data providers did).
  """

  def __init__(
    self,
    name: str,
    func: Callable[..., Any],
    kwargs: Mapping[str, Any],
    where: str,
    cycle: bool = False,
  ) -> None:
    super().__init__([], schema=None)
    self.name = name
    self.func = func
    self.kwargs = dict(kwargs)
    self.where = where
    self.cycle = cycle
    # (batch_size, dataset) of the first call, unread.
    self._made: Optional[tuple[int, tf.data.Dataset]] = None

  def files(self) -> list[str]:
    """A function source has no files."""
    return []

  def dataset(self, batch_size: int) -> tf.data.Dataset:
    """The function's dataset for `batch_size`, as it returns it (checked).

    Raises:
      ConfigurationError: the function returned something else than a
        dataset of dicts of tensors (or a dict of arrays).
    """
    if (
      self._made is not None
      and self._made[0] == batch_size
      and tf.executing_eagerly()
    ):
      # The dataset made to describe the inputs serves the first read (a
      # parameter-server worker's function makes its own).
      return self._made[1]
    data = _as_dataset(
      self.func(batch_size=batch_size, **self.kwargs),
      batch_size,
      f"{self.where}['func']",
    )
    self._made = (batch_size, data)
    return data

  def read(
    self,
    batch_size: int,
    epochs: Optional[int] = 1,
    shuffle: bool = False,
    seed: Optional[int] = None,
    shuffle_buffer: int = 10000,
  ) -> tf.data.Dataset:
    """A `tf.data.Dataset` of the function's batches.

    Shuffling is the function's business (`shuffle` and `seed` are not
    passed on); `epochs` None, or a cycling source, repeats the data.
    """
    del shuffle, seed, shuffle_buffer
    data = self.dataset(batch_size)
    self._made = None  # The next read is a fresh pass.
    if self.cycle or epochs is None:
      data = data.repeat()
    elif epochs > 1:
      data = data.repeat(epochs)
    return data.prefetch(tf.data.AUTOTUNE)


class FunctionDataSet(DataSet):
  """The sources of a `train_from_params` job: data functions by name.

  Example:
    >>> dataset = FunctionDataSet(
    ...     {'train': FunctionSource('train', mnist, {'split': 'train'},
    ...                              "train_params['data_params']")},
    ...     batch_size=64, targets=['labels'])
    >>> dataset.schema.field_names
    ('images',)

  Args:
    sources: name -> `FunctionSource`; the first one describes the inputs.
    batch_size: the batch size the first source is read with.
    targets: the inputs the loss reads (`loss_params['pred_targets']`),
      which the exported model does not take.

  Raises:
    ConfigurationError: an input of the first source cannot be served
      (not batched, an unknown inner dimension, a name that is not an
      identifier, a type a schema cannot hold).
  """

  def __init__(
    self,
    sources: Mapping[str, FunctionSource],
    batch_size: int,
    targets: Iterable[str] = (),
  ) -> None:
    first = next(iter(sources.values()))
    spec = first.dataset(batch_size).element_spec
    self.input_spec = dict(spec)
    self.targets = tuple(targets)
    self.serving_spec = {
      name: s for name, s in spec.items() if name not in self.targets
    }
    super().__init__(_schema(self.serving_spec, f"{first.where}['func']"))
    # DataSet's own registry of sources, as its subclasses fill it.
    self._sources.update(sources)

  @property
  def analyzed(self) -> bool:
    """Always: the functions make the model's inputs, there is no analysis."""
    return True

  def use_analysis(self, directory: str) -> bool:
    del directory
    return True

  def analyze(
    self,
    output_dir: str,
    source: str = 'train',
    pipeline_args: Any = None,
    reuse: bool = True,
  ) -> NoReturn:
    raise ConfigurationError(
      'A dataset of tfutils data functions has no feature set to analyze.'
    )

  def add_source(
    self, name: str, paths: Any, like: Optional[str] = None
  ) -> NoReturn:
    raise ConfigurationError(
      f'Validation target {name!r}: a train_from_params target brings its '
      "own data function (validation_params[NAME]['data']), not files. "
      f'Received: data={paths!r}'
    )

  def input_layer(self) -> 'InputLayer':
    """The layer that makes model inputs of parsed raw instances."""
    return InputLayer(self.serving_spec)


class InputLayer(tf.Module):
  """Puts parsed raw instances into the model's input shapes and types.

  Stands where a tf.Transform layer stands in other models: a served CSV
  line or tf.Example is parsed by the inferred schema (a list field of
  N values for an input of N values per example), then reshaped and cast
  back to what the data function made.

  Args:
    spec: input name -> `tf.TensorSpec` of a batch.
  """

  def __init__(self, spec: Mapping[str, Any]) -> None:
    super().__init__(name='tfutils_inputs')
    self._spec = dict(spec)

  def __call__(self, raw: Mapping[str, Any]) -> dict[str, Any]:
    inputs = {}
    for name, spec in self._spec.items():
      value = tf.cast(raw[name], spec.dtype)
      inputs[name] = tf.reshape(value, [-1] + spec.shape.as_list()[1:])
    return inputs


def _as_dataset(data: Any, batch_size: int, where: str) -> tf.data.Dataset:
  if isinstance(data, dict):
    try:
      data = tf.data.Dataset.from_tensor_slices(data).batch(batch_size)
    except (TypeError, ValueError) as e:
      raise ConfigurationError(
        f'{where} returned a dict: its values must be arrays of every '
        f'example, of one length ({e}).'
      ) from None
  if not isinstance(data, tf.data.Dataset):
    raise ConfigurationError(
      f'{where} must return a tf.data.Dataset of dicts of batched tensors '
      '(or a dict of arrays of every example). Received: '
      f'{type(data).__name__}'
    )
  spec = data.element_spec
  if (
    not isinstance(spec, dict)
    or not spec
    or not all(isinstance(s, tf.TensorSpec) for s in spec.values())
  ):
    raise ConfigurationError(
      f'{where} must return a dataset of dicts of tensors keyed by input '
      f'name. Received: element_spec={spec!r}'
    )
  return data


def _schema(spec: Mapping[str, Any], where: str) -> Schema:
  fields = []
  for name, tensor in spec.items():
    shape = tensor.shape
    described = f"{where}'s input {name!r} ({tensor.dtype.name}, shape {shape})"
    if not is_identifier(name):
      raise ConfigurationError(
        f'{described}: input names must be letters, digits and '
        'underscores, not starting with a digit (they name the exported '
        "model's features)."
      )
    if shape.rank is None or shape.rank < 1:
      raise ConfigurationError(
        f'{described}: inputs must be batches, [batch, ...]; batch the '
        'dataset (dataset.batch(batch_size)).'
      )
    inner = shape.as_list()[1:]
    if any(d is None for d in inner):
      raise ConfigurationError(
        f'{described}: every dimension but the batch must be known, so '
        'the exported model can take it; pad to a fixed size, or set the '
        'shape (tf.ensure_shape).'
      )
    if tensor.dtype.is_floating:
      kind = 'real'
    elif tensor.dtype.is_integer or tensor.dtype == tf.bool:
      kind = 'integer'
    elif tensor.dtype == tf.string:
      kind = 'discrete'
    else:
      raise ConfigurationError(
        f'{described}: the type {tensor.dtype.name} cannot be an input of '
        'the exported model; cast it to a number or a string.'
      )
    fields.append(
      SchemaField(name, SchemaFieldType(kind), length=math.prod(inner))
    )
  if not fields:
    raise ConfigurationError(
      f'{where} makes only the inputs the loss reads as targets; the model '
      'needs at least one other input.'
    )
  return Schema(fields)
