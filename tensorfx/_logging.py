"""tensorfx's logger, and quiet start-up for the libraries under it.

Only the `tensorfx` logger is configured: its level, and a handler of its
own that prints a record only when no handler above it (the root logger's,
say Cloud Logging's or the user's `logging.basicConfig`) would. Records
always propagate. The root logger is never changed.

TensorFlow prints C++ chatter when it is first imported (`oneDNN custom
operations are on`, `Could not find cuda drivers`, `This TensorFlow binary
is optimized ...`, and on a machine without a GPU `failed call to
cuInit`), before any Python logging setting can apply. `import tensorfx`
installs a one-shot import hook: the first `import tensorflow` after it
runs with the process's stderr captured, then the captured text is
written back without those known lines. Everything else, every C++ error
line included, comes through. `TF_CPP_MIN_LOG_LEVEL` is set before that
import, unless the user set it. `--log-level-tensorflow debug` (or info) on
the command line, or `TF_CPP_MIN_LOG_LEVEL` set by the user, turns the
filtering off.

A cluster's tasks print known harmless C++ errors as a run ends (the chief
removing functions that the other tasks already dropped: four lines each,
dozens of them). The local cluster launcher relays each task's output
through the same filter (`NoiseFilter`), which drops such a block whole and
keeps every other line.
"""

import contextlib
import glob
import importlib.abc
import importlib.machinery
import logging
import os
import re
import sys
import tempfile

logger = logging.getLogger('tensorfx')

LEVELS = {
  'debug': logging.DEBUG,
  'info': logging.INFO,
  'warning': logging.WARNING,
  'error': logging.ERROR,
}

# The libraries `--log-level-tensorflow` sets the level of.
LIBRARIES = (
  'tensorflow',
  'absl',
  'apache_beam',
  'tensorflow_transform',
  'tfx_bsl',
)

# --log-level-tensorflow -> TF_CPP_MIN_LOG_LEVEL (0 all, 1 no INFO, 2 no
# WARNING, 3 no ERROR). C++ warnings of a normal run are noise (end of
# sequence, rendezvous aborts); errors always show.
_CPP_LEVELS = {'debug': '0', 'info': '0', 'warning': '2', 'error': '2'}

_FORMAT = logging.Formatter(
  '%(asctime)s %(levelname)s %(message)s', datefmt='%H:%M:%S'
)

# What TensorFlow prints at import that says nothing about the job.
_STARTUP_NOISE = (
  re.compile(
    r'^WARNING: All log messages before absl::InitializeLog\(\) '
    r'is called are written to STDERR$'
  ),
  re.compile(r'^I\d{4} [\d:. ]+\d+ port\.cc:\d+\] oneDNN custom operations'),
  re.compile(
    r'^I\d{4} [\d:. ]+\d+ cudart_stub\.cc:\d+\] Could not find '
    r'cuda drivers'
  ),
  re.compile(
    r'^I\d{4} [\d:. ]+\d+ cpu_feature_guard\.cc:\d+\] This '
    r'TensorFlow binary is optimized'
  ),
  re.compile(
    r'^To enable the following instructions: .*rebuild '
    r'TensorFlow with the appropriate compiler flags\.$'
  ),
)
# Noise only where there is no GPU to find: with NVIDIA devices present a
# failing cuInit is a real error, and shows.
_NO_GPU_NOISE = re.compile(
  r'^E\d{4} [\d:. ]+\d+ cuda_platform\.cc:\d+\] '
  r'failed call to cuInit'
)

# What a cluster's tasks print that says nothing about the job (most as
# a run ends).
# Eager contexts release the functions they registered on the other tasks;
# a task that already dropped one answers that it has none: the first line
# of a block, whose next lines are those of `_REMOVAL_BLOCK`. A removal that
# fails for another reason (a task that is gone) still shows.
_REMOVAL = re.compile(
  r'^E\d{4} [\d:. ]+\d+ context\.cc:\d+\] Failed to remove function '
  r"remotely due to Tried to remove non-existent function '"
)
_REMOVAL_BLOCK = (
  re.compile(
    r'^Additional GRPC error information from remote target \S+ while '
    r'calling /tensorflow\.eager\.EagerService/\w+:$'
  ),
  re.compile(
    r'^:\w+:Error received from peer .*Tried to remove non-existent '
    r'function'
  ),
  re.compile(
    r'^This could happen if the remote target has been disconnected from '
    r'the client\.$'
  ),
)
_CLUSTER_NOISE = (
  # A worker (re)started under parameter servers reads the chief's input
  # graph, whose parallel map carries an attribute its kernel registry
  # does not list; TensorFlow ignores it (same binary on both sides).
  re.compile(
    r'^E\d{4} [\d:. ]+\d+ node_def_util\.cc:\d+\] NodeDef mentions '
    r'attribute use_unbounded_threadpool which is not in the op definition'
  ),
  # A server's cache of multi-device functions, cleared at its end.
  re.compile(
    r'^E\d{4} [\d:. ]+\d+ function_handle_cache\.cc:\d+\] Failed to '
    r'clear function handle cache: UNIMPLEMENTED: Releasing a multi-device '
    r'component handle on a remote device is not yet implemented\.$'
  ),
)


class _OwnHandler(logging.StreamHandler):
  """A stderr handler of tensorfx's, in tensorfx's format."""

  def __init__(self):
    super().__init__(sys.stderr)
    self.setFormatter(_FORMAT)

  def emit(self, record):
    self.setStream(sys.stderr)  # Follow sys.stderr if it was replaced.
    super().emit(record)


class _FallbackHandler(_OwnHandler):
  """Prints a tensorfx record only if no other handler above would."""

  def handle(self, record):
    parent = logger.parent
    while parent is not None:
      if any(not isinstance(h, _OwnHandler) for h in parent.handlers):
        return False
      if not parent.propagate:
        break
      parent = parent.parent
    return super().handle(record)


def configure(level='info', library_level='warning'):
  """Shows tensorfx's messages at `level` and the libraries' at theirs.

  Sets the `tensorfx` logger's level and gives it a handler of its own
  that prints only while no handler above it does (records propagate to
  the root logger, which is left as it is); sets the level of TensorFlow's,
  absl's, Beam's, tf.Transform's and tfx-bsl's loggers.

  Example:
    >>> configure('debug', 'error')

  Args:
    level: tensorfx's level name (debug, info, warning, error).
    library_level: the libraries' level name (debug, info, warning,
      error).
  """
  global _library_level  # noqa: PLW0603  (the level the import hook applies later)
  logger.setLevel(LEVELS.get(level, logging.INFO))
  if not any(isinstance(h, _FallbackHandler) for h in logger.handlers):
    logger.addHandler(_FallbackHandler())
  _library_level = library_level
  for name in LIBRARIES:
    logging.getLogger(name).setLevel(LEVELS.get(library_level, logging.WARNING))


_library_level = None


class _RootGuard(_OwnHandler):
  """Stands in for the root logger's handlers while it has none.

  Prints, in tensorfx's format, what would otherwise reach no handler; a
  record that a handler on its way up already printed (TensorFlow's
  logger has its own) is left alone.
  """

  def filter(self, record):
    name = record.name
    while name:
      if any(
        not isinstance(h, _RootGuard) for h in logging.getLogger(name).handlers
      ):
        return False
      name = name.rpartition('.')[0]
    return super().filter(record)


@contextlib.contextmanager
def guard_root():
  """Keeps the root logger's handlers as they were during a block.

  Beam's `PipelineOptions` and `Pipeline`, and absl's logging functions
  (which tf.Transform and tfx-bsl call, e.g. when training reads the
  transform's output to size the cache), run `logging.basicConfig()`,
  which gives the root logger a handler when it has none: afterwards every
  record of the process would print in Python's bare format, tensorfx's
  twice. While the root logger has no handler of the program's own, this
  gives it one of tensorfx's, so those calls do nothing, and removes it
  at the end. A library leaves the root logger as it found it: every
  public entry point that may reach those libraries (training, evaluation,
  export, analysis, prediction) runs inside it; it is also a decorator.

  Example:
    >>> with guard_root():
    ...   pass
  """
  root = logging.getLogger()
  guard = None
  if not root.handlers:
    guard = _RootGuard()
    root.addHandler(guard)
  try:
    yield
  finally:
    if guard is not None:
      root.removeHandler(guard)


@contextlib.contextmanager
def quiet_beam():
  """Runs a Beam pipeline without its warnings or its logging set-up.

  Within `guard_root()`; and unless the libraries' level is debug or info,
  Beam's, tf.Transform's, tfx-bsl's and absl's warnings (advice about input
  formats, runner defaults) are held back to errors for the block.

  Example:
    >>> with quiet_beam():
    ...   pass
  """
  saved = {}
  if _library_level not in ('debug', 'info'):
    for name in ('apache_beam', 'absl', 'tensorflow_transform', 'tfx_bsl'):
      library = logging.getLogger(name)
      saved[name] = library.level
      library.setLevel(max(library.getEffectiveLevel(), logging.ERROR))
  try:
    with guard_root():
      yield
  finally:
    for name, level in saved.items():
      logging.getLogger(name).setLevel(level)


class NoiseFilter:
  r"""Judges TensorFlow's output line by line: known noise, or worth showing.

  Known noise is TensorFlow's start-up chatter and the harmless errors a
  cluster's tasks print as a run ends; a block of several lines is dropped
  whole. One filter reads one stream, in order.

  Example:
    >>> lines = NoiseFilter(gpu_present=False)
    >>> lines.keep('E0000 00:00:1.2 7 op_kernel.cc:1] real trouble')
    True

  Args:
    gpu_present: whether NVIDIA devices exist (then a failing cuInit is
      kept); by default looked up.
  """

  def __init__(self, gpu_present=None):
    self._gpu_present = _gpu_present() if gpu_present is None else gpu_present
    self._in_block = False

  def keep(self, line):
    """Whether `line` (with or without its newline) is shown."""
    bare = line.rstrip('\n')
    if self._in_block:
      if any(p.search(bare) for p in _REMOVAL_BLOCK):
        return False
      self._in_block = False
    if _REMOVAL.search(bare):
      self._in_block = True
      return False
    if any(p.search(bare) for p in _STARTUP_NOISE + _CLUSTER_NOISE):
      return False
    return self._gpu_present or not _NO_GPU_NOISE.search(bare)


def filter_noise(text, gpu_present=None):
  r"""TensorFlow's output without its known noise (see `NoiseFilter`).

  Example:
    >>> filter_noise('I0000 00:00:1.2 7 port.cc:153] oneDNN custom '
    ...              'operations are on.\nE0000 real trouble\n')
    'E0000 real trouble\n'

  Args:
    text: what TensorFlow wrote (to stderr while it was imported, say).
    gpu_present: whether NVIDIA devices exist (then a failing cuInit is
      kept); by default looked up.
  """
  lines = NoiseFilter(gpu_present)
  return ''.join(
    line for line in text.splitlines(keepends=True) if lines.keep(line)
  )


def shows_all_tensorflow_lines(argv=None, environ=None):
  """Whether every line of TensorFlow's is asked for: none is filtered then.

  TensorFlow's debug or info lines are: `--log-level-tensorflow
  debug|info` on the command line, or `TF_CPP_MIN_LOG_LEVEL=0`.

  Args:
    argv: the command line to read `--log-level-tensorflow` from; by
      default `sys.argv`.
    environ: the environment; by default `os.environ`.
  """
  environ = os.environ if environ is None else environ
  return (
    tensorflow_level(argv) in ('debug', 'info')
    or environ.get('TF_CPP_MIN_LOG_LEVEL') == '0'
  )


def _gpu_present():
  visible = os.environ.get('CUDA_VISIBLE_DEVICES')
  if visible is not None and visible.strip() in ('', '-1'):
    return False
  return bool(glob.glob('/dev/nvidia[0-9]*'))


def tensorflow_level(argv=None):
  """The `--log-level-tensorflow` value on a command line, or None."""
  argv = sys.argv if argv is None else argv
  for index, arg in enumerate(argv):
    if arg == '--log-level-tensorflow' and index + 1 < len(argv):
      return argv[index + 1].lower()
    if arg.startswith('--log-level-tensorflow='):
      return arg.split('=', 1)[1].lower()
  return None


class _QuietLoader(importlib.abc.Loader):
  """Imports TensorFlow with stderr captured, then writes back the rest."""

  def __init__(self, loader):
    self._loader = loader

  def __getattr__(self, name):
    return getattr(self._loader, name)

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module):
    # The module keeps TensorFlow's own loader, as without the hook.
    module.__loader__ = module.__spec__.loader = self._loader
    stderr = sys.stderr
    try:
      stderr.flush()
      saved = os.dup(2)
    except (OSError, ValueError):  # No usable stderr: nothing to quiet.
      self._loader.exec_module(module)
      return
    with tempfile.TemporaryFile(mode='w+b') as captured:
      os.dup2(captured.fileno(), 2)
      failed = True
      try:
        self._loader.exec_module(module)
        # The CUDA platform is probed at the first device query; do it now,
        # inside the capture (listing devices before configuring them is
        # TensorFlow's documented order).
        module.config.list_physical_devices()
        failed = False
      finally:
        stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        captured.seek(0)
        text = captured.read().decode('utf-8', 'replace')
        stderr.write(text if failed else filter_noise(text))
        stderr.flush()


class _TensorFlowImportHook(importlib.abc.MetaPathFinder):
  """Quiets the first `import tensorflow`, then removes itself."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != 'tensorflow':
      return None
    uninstall_import_hook()
    for finder in sys.meta_path:
      find = getattr(finder, 'find_spec', None)
      spec = find(fullname, path, target) if find else None
      if spec is not None:
        break
    else:
      return None
    if spec.loader is None or not hasattr(spec.loader, 'exec_module'):
      return spec
    spec.loader = _QuietLoader(spec.loader)
    return spec


_hook = None
_set_level = None  # The TF_CPP_MIN_LOG_LEVEL tensorfx set, if it did.


def install_import_hook(argv=None, environ=None):
  """Makes the first `import tensorflow` quiet (see the module docstring).

  Sets `TF_CPP_MIN_LOG_LEVEL` from `--log-level-tensorflow` (2 by default:
  C++ errors only) unless it is set. Installs nothing when TensorFlow is
  already imported, or when TensorFlow's debug or info messages are asked
  for (`--log-level-tensorflow debug|info`, `TF_CPP_MIN_LOG_LEVEL=0`).

  Args:
    argv: the command line to read `--log-level-tensorflow` from; by
      default `sys.argv`.
    environ: the environment; by default `os.environ`.
  """
  global _hook, _set_level  # noqa: PLW0603  (one hook per process)
  environ = os.environ if environ is None else environ
  if 'tensorflow' in sys.modules:
    return
  level = tensorflow_level(argv)
  if 'TF_CPP_MIN_LOG_LEVEL' not in environ or _set_level:
    # Ours to set (again: the command line may ask for more than sys.argv).
    _set_level = environ['TF_CPP_MIN_LOG_LEVEL'] = _CPP_LEVELS.get(level, '2')
  if shows_all_tensorflow_lines(argv, environ):
    uninstall_import_hook()
  elif _hook is None:
    _hook = _TensorFlowImportHook()
    sys.meta_path.insert(0, _hook)


def uninstall_import_hook():
  """Removes the hook if the first `import tensorflow` has not used it."""
  global _hook  # noqa: PLW0603  (one hook per process)
  if _hook is not None and _hook in sys.meta_path:
    sys.meta_path.remove(_hook)
  _hook = None


def counted(count: int, noun: str) -> str:
  """`count` and `noun`, plural unless there is one.

  Example:
    >>> counted(1, 'bad record'), counted(3, 'variable group')
    ('1 bad record', '3 variable groups')
  """
  return f'{count} {noun}' if count == 1 else f'{count} {noun}s'
