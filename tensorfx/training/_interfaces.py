"""The three graph interfaces a ModelBuilder produces for the trainer.

Each is a frozen dataclass holding the `tf.function`s the trainer drives and
the references the phase needs. Variables are shared by all three: they are
created once, under the strategy's scope, before any of them is built.
"""

import dataclasses
from typing import Any, Callable, Mapping, Optional


@dataclasses.dataclass(frozen=True)
class TrainingInterface:
  """What the trainer needs to train.

  Attributes:
    dataset: the training `tf.data.Dataset` (or a distributed dataset).
    global_step: the int64 step variable, advanced once per training step.
    loop: `tf.function(iterator, num_steps) -> (loss, steps_run)`: runs up to
      `num_steps` training steps (fewer when the data ends, or after a step
      whose loss is not finite or above `--thres-loss`) and returns the
      last step's loss and the number of steps run.
    optimizer: the optimizer the training step applies.
    variables: the trainable variables being trained.
    batch_size: the global batch size (examples per step).
    gradient_norm: a float32 variable the training step sets to the
      global norm of the gradient it applied (before clipping); None when
      the step does not report it. Read it at log intervals, not per step.
    input_from: `input_from(batches) -> dataset`: `dataset` without its
      first `batches` batches, what a resumed run reads (each step of
      `loop` reads one batch). None: a resumed run reads them from
      `dataset`'s iterator and drops them.
    input_read: under parameter servers, the int64 variable of the batches
      the job's steps have read, which each worker's `dataset` skips its
      share of when its iterator is made; None otherwise.
  """

  dataset: Any
  global_step: Any
  loop: Callable
  optimizer: Any
  variables: tuple
  batch_size: int
  gradient_norm: Any = None
  input_from: Optional[Callable[[int], Any]] = None
  input_read: Any = None

  @property
  def graph(self) -> Any:
    """The `tf.Graph` of the training loop, traced over `dataset`.

    The original tensorfx's interfaces held their graph; here it is the
    traced function's (what TensorBoard shows). None when the loop is not a
    `tf.function` (a parameter-server coordinator's).

    Example:
      >>> training, _, _ = builder.build_graph_interfaces(config)
      >>> [op.name for op in training.graph.get_operations()][:3]
    """
    import tensorflow as tf

    if not hasattr(self.loop, 'get_concrete_function'):
      return None
    return self.loop.get_concrete_function(
      iter(self.dataset), tf.constant(1, tf.int64)
    ).graph


@dataclasses.dataclass(frozen=True)
class EvaluationInterface:
  """What the trainer needs to evaluate.

  Attributes:
    dataset: `dataset(source='eval', batch_size=None, batches=None)`
      returns a fresh evaluation dataset: one pass over a source of the
      dataset (its first `batches` batches, when given) in batches of
      `batch_size` (default `--eval-batch-size`), distributed like the
      training data.
    loop: `tf.function(iterator) -> count`: updates `metrics` over every
      batch of the iterator and returns the number of examples seen.
    metrics: the metric objects, by name (`loss` included); read with
      `result()`, cleared with `reset_state()`.
    step: `tf.function(batch) -> count`: updates `metrics` with one batch of
      the dataset; validation targets that aggregate batch by batch call it.
    compute: `compute(fn) -> tf.function(batch) -> (values, count)`: a step
      that runs the model on one batch and returns `fn(inputs, outputs)`
      (a dict of tensors) and the batch's examples, for validation targets
      that compute their own values (`ValidationTarget.compute`); traced
      once per `fn`.
  """

  dataset: Callable
  loop: Callable
  metrics: Mapping[str, Any]
  step: Optional[Callable] = None
  compute: Optional[Callable] = None

  @property
  def graph(self) -> Any:
    """The `tf.Graph` of the evaluation loop, traced over the eval data.

    None when the loop is not a `tf.function`.
    """
    if not hasattr(self.loop, 'get_concrete_function'):
      return None
    return self.loop.get_concrete_function(iter(self.dataset())).graph


@dataclasses.dataclass(frozen=True)
class PredictionInterface:
  """What the exporter needs to save a servable model.

  Attributes:
    signatures: `tf.function`s by signature name, each taking raw instances
      in one form (CSV lines, serialized tf.Example, feature tensors) and
      returning the outputs of `ModelBuilder.build_output`.
    module: the `tf.Module` to save; it tracks exactly the variables,
      tables and assets the signatures use.
  """

  signatures: Mapping[str, Callable]
  module: Any

  @property
  def graph(self) -> Any:
    """The `tf.Graph` of the default serving signature (CSV lines in)."""
    return _signature_graph(self.signatures)


def _signature_graph(signatures):
  fn = signatures.get('serving_default') or next(iter(signatures.values()))
  if hasattr(fn, 'get_concrete_function'):
    fn = fn.get_concrete_function()
  return getattr(fn, 'graph', None)


class DeferredPrediction:
  """A `PredictionInterface` built on first use.

  Tracing the serving signatures (CSV parsing, tf.Example parsing, the
  transform graph, the model) takes seconds that need not come before the
  first training step: the trainer reads `signatures` or `module` only
  when it exports.

  Args:
    build: a callable returning the `PredictionInterface`.
  """

  def __init__(self, build):
    self._build = build
    self._interface = None

  @property
  def interface(self):
    """The `PredictionInterface`, built once."""
    if self._interface is None:
      self._interface = self._build()
    return self._interface

  @property
  def signatures(self):
    return self.interface.signatures

  @property
  def module(self):
    return self.interface.module

  @property
  def graph(self):
    """The `tf.Graph` of the default serving signature (built first)."""
    return self.interface.graph
