"""The variables of a plain model function: made once, reused on every call.

A tfutils model is a plain function: each call builds the model anew,
with `tf.compat.v1.get_variable`, `tf.Variable` or Keras layers made
inside it. The engine calls it several times (once eagerly to create the
variables, then traced into the training step, the evaluation step and
the serving signatures), so each call after the first must use the first
call's variables: a variable creator scope hands them back, in the order
they are asked for. TensorFlow 1's `variable_scope(reuse=True)` did this
for tfutils.
"""

import contextlib
import types
from typing import Any, Callable, ContextManager, Iterator

import tensorflow as tf

from tensorfx._errors import ConfigurationError


class VariableStore(tf.Module):
  """Holds the variables a function makes, for every call after the first.

  A `tf.Module`: the variables are tracked, so the builder that keeps the
  store checkpoints and exports them.

  Example:
    >>> store = VariableStore("model_params['func']")
    >>> outputs = store.call(model, inputs=inputs, train=False)  # Creates.
    >>> outputs = store.call(model, inputs=inputs, train=True)   # Reuses.

  Args:
    where: what makes the variables, for errors (`model_params['func']`).
  """

  def __init__(self, where: str) -> None:
    super().__init__(name='model_variables')
    self._where = where
    self.created: list[Any] = []
    # The name each variable was asked for by (before scoping), in order;
    # bookkeeping, kept out of the checkpoint.
    self._calls = types.SimpleNamespace(requested=[], sealed=False)

  def call(
    self, function: Callable[..., Any], *args: Any, **kwargs: Any
  ) -> Any:
    """Calls `function`; its variables are the first call's.

    Raises:
      ConfigurationError: a call after the first asks for a variable the
        first did not make, or for them in another order.
    """
    index = 0

    def creator(next_creator: Callable[..., Any], **options: Any) -> Any:
      nonlocal index
      position = index
      index += 1
      name = options.get('name')
      if position < len(self.created):
        requested = self._calls.requested[position]
        if requested != name:
          raise ConfigurationError(
            f'{self._where} asked for its variables in another order than '
            f'on its first call: variable {position + 1} is '
            f'{name!r} now, {requested!r} then. Make the '
            'same variables, in the same order, on every call (whatever '
            '`train` is).'
          )
        return self.created[position]
      if self._calls.sealed:
        raise ConfigurationError(
          f'{self._where} made a variable ({name!r}) that its first call '
          'did not: make the same variables on every call (whatever '
          '`train` is).'
        )
      # Made outside any function being traced: variables live on.
      with tf.init_scope():
        variable = next_creator(**options)
      self.created.append(variable)
      self._calls.requested.append(name)
      return variable

    with (
      _no_trace_in_collections(),
      _fresh_get_variable_store(),
      _root_variable_scope(),
      tf.variable_creator_scope(creator),
    ):
      result = function(*args, **kwargs)
    self._calls.sealed = True
    return result


@contextlib.contextmanager
def _no_trace_in_collections() -> Iterator[None]:
  """Leaves the graph's collections as they were before the call.

  TensorFlow 1 code (`get_variable`, `tf.compat.v1.layers`) adds its
  variables and losses to the default graph's collections, which eager
  code and every function traced from it share: TensorFlow 1 graph code
  that runs later in the process (tf.Transform's analysis) would find
  them there.
  """
  graph = tf.compat.v1.get_default_graph()
  before = {
    key: list(graph.get_collection(key))
    for key in graph.get_all_collection_keys()
  }
  try:
    yield
  finally:
    for key in graph.get_all_collection_keys():
      graph.get_collection_ref(key)[:] = before.get(key, [])


def _root_variable_scope() -> Any:
  """The root variable scope, creating: each call builds the model anew.

  A mirrored strategy runs replicas after the first under a reusing
  scope; here every call asks for its variables afresh and the creator
  scope, not `get_variable`'s store, hands back the existing ones.
  """
  return tf.compat.v1.variable_scope(
    tf.compat.v1.VariableScope(reuse=False, name=''), auxiliary_name_scope=False
  )


def _fresh_get_variable_store() -> ContextManager[Any]:
  """Each call's `tf.compat.v1.get_variable`s in a store of their own.

  TensorFlow keeps one store of `get_variable` names per graph, shared by
  eager code and the functions traced from it: a second model (or a
  second call) would find the first's names and fail ("already exists").
  A store per call makes each call a fresh TensorFlow 1 graph build, where
  `reuse` within the call works (eagerly too); across calls, the creator
  scope hands back the first call's variables.
  """
  try:
    from tensorflow.python.ops import variable_scope

    store = variable_scope._VariableStore()  # noqa: SLF001  (TensorFlow has no public API for a variable store)
    store._store_eager_variables = True  # noqa: SLF001  (nor for its eager mode)
    return variable_scope.with_variable_store(store)
  except (ImportError, AttributeError):
    return contextlib.nullcontext()
