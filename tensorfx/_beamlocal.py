"""Beam pipelines run locally without Beam's avoidable per-pipeline costs.

tensorfx's pipelines (the tf.Transform analysis, batch prediction) are
large graphs of small steps, so Beam's fixed costs outweigh the data below
a few hundred thousand rows. Measured on the census sample's analysis
(`benchmarks/analysis.py`, 30,000 rows, 2 cores, a fresh process each):
21.7 CPU seconds as Beam runs it, 11.5 with the two changes below.

- `pipeline()`: Beam's DirectRunner first tries its Prism runner (a Go
  binary it downloads on first use), converting the whole pipeline to its
  proto for it; offline the attempt fails only after that conversion
  (~1,400 transforms for the census features), online it downloads a
  binary. For a batch pipeline the DirectRunner then runs Beam's
  FnApiRunner: `pipeline()` gives that runner directly.
- `faster_beam()`: Beam introspects every DoFn's methods with
  `inspect.signature` whenever it translates a transform or starts a
  bundle (133,000 calls for that analysis, for a few hundred distinct
  methods), and each `PipelineOptions.view_as` parses the flags again with
  a new argparse parser (3,000 calls). Within the block both are
  remembered: a function's signature does not change, and a view of the
  same options shares its values with every other view of them.

Imported lazily: it imports Apache Beam.
"""

import contextlib
import threading
import types
from typing import Any

__all__ = ['faster_beam', 'is_direct', 'pipeline']

# Runner names that mean Beam's DirectRunner.
_DIRECT = ('directrunner', 'direct')
_lock = threading.Lock()
# The open blocks of `faster_beam()`, and Beam's functions they replaced.
_active: dict[str, Any] = {'depth': 0}


def pipeline(options):
  """A `beam.Pipeline` for `options`, on the FnApiRunner if it is local.

  Where the options name the DirectRunner (or no runner), the pipeline
  runs on the runner the DirectRunner picks for a batch pipeline, with
  the same options (in this process, threads or worker processes, as
  `--direct_running_mode` says), without its Prism attempt. Any other
  runner is left to Beam.

  Example:
    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> p = pipeline(PipelineOptions(['--runner=DirectRunner']))
    >>> type(p.runner).__name__
    'FnApiRunner'
  """
  import apache_beam as beam

  if not is_direct(options):
    return beam.Pipeline(options=options)
  from apache_beam.portability.api import beam_provision_api_pb2
  from apache_beam.runners.portability.fn_api_runner import fn_runner
  from apache_beam.runners.portability.portable_runner import JobServiceHandle

  # As the DirectRunner builds it: the options reach the SDK workers.
  encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
  runner = fn_runner.FnApiRunner(
    provision_info=fn_runner.ExtendedProvisionInfo(
      beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
  )
  return beam.Pipeline(runner=runner, options=options)


def is_direct(options):
  """Whether `options` run on Beam's DirectRunner (named, or by default)."""
  from apache_beam.options.pipeline_options import StandardOptions

  name = options.view_as(StandardOptions).runner
  return name is None or str(name).lower() in _DIRECT


@contextlib.contextmanager
def faster_beam():
  """Remembers Beam's signature introspection and option views in a block.

  Wrap the building and the run of a pipeline. Nested and concurrent
  blocks share one memory, dropped when the last block ends; what Beam
  computes is unchanged (the same signature of the same function, a view
  of the same options), only computed once.

  Example:
    >>> with faster_beam():
    ...   pass
  """
  from apache_beam.options import pipeline_options
  from apache_beam.transforms import core

  with _lock:
    _active['depth'] += 1
    if _active['depth'] == 1:
      _install(core, pipeline_options.PipelineOptions)
  try:
    yield
  finally:
    with _lock:
      _active['depth'] -= 1
      if _active['depth'] == 0:
        _uninstall(core, pipeline_options.PipelineOptions)


def _install(core, options_type):
  signatures: dict[Any, tuple[list[str], list[Any]]] = {}
  views: dict[tuple[int, type], tuple[Any, Any]] = {}
  original_signature = core.get_function_args_defaults
  original_view = options_type.view_as

  def get_function_args_defaults(f):
    try:
      key = _signature_key(f)
      found = signatures.get(key)
    except TypeError:  # An unhashable callable: not remembered.
      return original_signature(f)
    if found is None:
      found = signatures[key] = original_signature(f)
    # Lists, as Beam returns them; a caller may change its copy.
    return list(found[0]), list(found[1])

  def view_as(self, cls):
    # Views of one options object share its values (`_all_options`); the
    # object is kept in the entry, so its id is not reused meanwhile.
    key = (id(self), cls)
    if key not in views:
      views[key] = (self, original_view(self, cls))
    return views[key][1]

  _active['signature'] = original_signature
  _active['view'] = original_view
  core.get_function_args_defaults = get_function_args_defaults
  options_type.view_as = view_as


def _signature_key(f):
  """What decides `f`'s argument names and defaults, as a dict key.

  A runner unpickles each DoFn's functions anew for every bundle, so the
  function objects differ while their code is the same: a plain function
  is known by its code (compared by value) and its defaults (by type and
  value, so `1` and `True` differ). Anything else (a wrapper, a partial,
  a callable object) by itself.
  """
  if isinstance(f, types.MethodType):
    # A bound method's arguments are its function's, less the first.
    return ('method', _signature_key(f.__func__))
  if (
    isinstance(f, types.FunctionType)
    and not hasattr(f, '__wrapped__')
    and '__signature__' not in f.__dict__
  ):
    kwdefaults = sorted((f.__kwdefaults__ or {}).items())
    return (
      'function',
      f.__code__,
      tuple((type(d), d) for d in f.__defaults__ or ()),
      tuple((name, type(d), d) for name, d in kwdefaults),
    )
  return f


def _uninstall(core, options_type):
  core.get_function_args_defaults = _active.pop('signature')
  options_type.view_as = _active.pop('view')
