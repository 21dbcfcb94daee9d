"""XLA for the training and evaluation steps (`--jit-compile`).

What is compiled is the model's arithmetic: the training step's forward
pass, loss and gradients (`tf.function(jit_compile=True)`), and the
evaluation step's forward pass (its outputs, often strings, the loss and
the metrics' updates are cheap, and run outside). The input pipeline and
its tf.Transform layer are not (they run in tf.data), and neither are the
optimizers' updates: dense and sparse (embedding tables') updates and the
replicas' gradient sums run as ordinary TensorFlow after the compiled part,
so `tf.IndexedSlices` updates and collectives stay out of the cluster.

XLA takes numeric tensors of a fixed shape. A step's inputs are passed to
the compiled function when they are dense, numeric and fixed in every
dimension but the batch; the others (strings, sparse or ragged values,
lists whose length varies) are left outside, and a step that uses one of
them is not compiled. Before anything is traced for training, the step is
lowered to XLA once on an example batch: when that fails (an op without
an XLA kernel, e.g. the string hashing of `tensorfx.embeddings` tables,
or such an input), the step runs without XLA and a warning names the
reason; training never fails in the middle of an XLA compilation.
"""

import collections.abc
import re

import tensorflow as tf

from tensorfx._logging import logger

# The first line of XLA's "unsupported operations" message names the op.
_UNSUPPORTED = re.compile(
  r'Detected unsupported operations[^:]*:\s*(.*?)(?:\(No registered|$)', re.S
)
_RAISED = re.compile(r'^\w+(Error|Exception): ')


class Step:
  """A step function, compiled with XLA when asked for and possible.

  Example:
    >>> step = Step(forward_pass, 'evaluation step', enabled=True)
    >>> step.check(element_spec)   # eagerly, once: compiles, or warns
    >>> step(batch)                # in the traced loop

  Args:
    fn: `fn(inputs) -> outputs`, a structure of tensors (None and
      `tf.IndexedSlices` allowed), compiled without autograph: the engine's
      steps convert the hooks they call themselves (`_autograph.hook`).
    what: the step's name in messages ('training step').
    enabled: whether `--jit-compile` asked for XLA.
    reason: a reason not to compile at all (e.g. parameter servers).
  """

  def __init__(self, fn, what, enabled, reason=None):
    self._fn = fn
    self._what = what
    self.compiled = False
    self.reason = None
    if enabled and reason:
      self._fallback(reason)
    self._enabled = bool(enabled and not reason)

  def check(self, element_spec, strategy=None):
    """Lowers the step to XLA on an example batch; falls back if it fails.

    Eager, before the step is traced into a loop (tracing is only Python
    and graph building: no variable changes). Idempotent.

    Args:
      element_spec: the element spec of the step's dataset.
      strategy: the strategy whose replicas run the step (the check runs
        in replica context, where their variables can be read).

    Returns:
      Whether the step will run compiled.
    """
    if not self._enabled or self.compiled or self.reason:
      return self.compiled
    if strategy is not None and strategy.num_replicas_in_sync > 1:
      # Replicas run one after the other here: the first decides.
      strategy.run(lambda: (self._check(element_spec), tf.constant(0))[1])
      return self.compiled
    return self._check(element_spec)

  def _check(self, element_spec):
    if self.compiled or self.reason:
      return self.compiled
    inputs = example_inputs(element_spec)
    fixed, rest = _split(inputs)
    function = tf.function(
      lambda args: self._fn(_merge(args, rest)),
      jit_compile=True,
      autograph=False,
    )
    try:
      concrete = function.get_concrete_function(fixed)
      captured = {id(t) for t in concrete.captured_inputs}
      used = sorted(
        name
        for name, value in rest.items()
        if any(
          id(t) in captured
          for t in tf.nest.flatten(value, expand_composites=True)
        )
      )
      if used:
        self._fallback(
          f'it uses inputs XLA cannot take (strings, or values whose size '
          f'varies per batch): {", ".join(map(repr, used))}'
        )
        return False
      function.experimental_get_compiler_ir(fixed)(stage='hlo')
    except (ValueError, TypeError, tf.errors.OpError) as e:
      self._fallback(_describe(e))
      return False
    self.compiled = True
    logger.info('--jit-compile: the %s is compiled with XLA', self._what)
    return True

  def __call__(self, inputs):
    if not self.compiled:
      return self._fn(inputs)
    fixed, rest = _split(inputs)
    # Made at each trace of the caller: the inputs left outside are that
    # trace's tensors, captured.
    function = tf.function(
      lambda args: self._fn(_merge(args, rest)),
      jit_compile=True,
      autograph=False,
    )
    return function(fixed)

  def _fallback(self, reason):
    self.reason = reason
    logger.warning(
      '--jit-compile: the %s runs without XLA: %s. (Pass '
      '--no-jit-compile to silence this.)',
      self._what,
      reason,
    )


def example_inputs(element_spec):
  """A batch of one zero (or empty) value per feature of `element_spec`."""

  def example(spec):
    if isinstance(spec, tf.SparseTensorSpec):
      shape = [1 if d is None else d for d in spec.shape.as_list()]
      return tf.SparseTensor(
        tf.zeros([0, len(shape)], tf.int64), tf.zeros([0], spec.dtype), shape
      )
    if isinstance(spec, tf.RaggedTensorSpec):
      return tf.RaggedTensor.from_row_lengths(
        tf.zeros([0], spec.dtype), tf.zeros([1], tf.int64)
      )
    shape = [1 if d is None else d for d in spec.shape.as_list()]
    if spec.dtype == tf.string:
      return tf.fill(shape, '')
    return tf.zeros(shape, spec.dtype)

  return tf.nest.map_structure(example, element_spec)


def _fixed(value):
  """Whether XLA can take `value` as an argument without recompiling."""
  if not isinstance(value, tf.Tensor) or value.dtype == tf.string:
    return False
  dims = value.shape.as_list() if value.shape.rank is not None else None
  return dims is not None and all(d is not None for d in dims[1:])


def _split(inputs):
  """(the inputs XLA takes as arguments, the others), by feature name."""
  if not isinstance(inputs, collections.abc.Mapping):
    return inputs, {}
  fixed = {k: v for k, v in inputs.items() if _fixed(v)}
  rest = {k: v for k, v in inputs.items() if k not in fixed}
  return fixed, rest


def _merge(fixed, rest):
  if not rest:
    return fixed
  merged = dict(fixed)
  merged.update(rest)
  return merged


def _describe(error):
  """The reason XLA refused a step, in a line."""
  message = getattr(error, 'message', None) or str(error)
  found = _UNSUPPORTED.search(message)
  if found:
    return f'XLA has no kernel for {found.group(1).strip()}'
  lines = [line.strip() for line in message.splitlines() if line.strip()]
  # Autograph wraps the error: "in user code: ... ValueError: what".
  raised = [line for line in lines if _RAISED.match(line)]
  return (
    raised[-1] if raised else lines[0] if lines else type(error).__name__
  )[:300]
