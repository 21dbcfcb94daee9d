"""The package's layers: no import cycle, no import from a lower layer up.

Read from the source (the import statements), so a new module is checked
without being imported. A module's own package `__init__` is not an edge
(Python imports it first anyway); function-level imports count for the
layers (they run), module-level ones for cycles (they are what can fail at
import time).
"""

import ast
import os

from conftest import ROOT

PACKAGE = os.path.join(ROOT, 'tensorfx')

# Lowest first. A package may import its own layer and the ones below; the
# private top-level modules (`tensorfx._errors`, `_atomic`, ...) are the
# base every layer may use.
LAYERS = (
  ('data',),
  ('embeddings',),
  ('prediction',),
  ('training',),
  ('models', 'tfutils'),
  ('cloud',),
  ('tuning',),
  ('tools',),
)
# The one upward reference, on purpose: `tensorfx.training` keeps
# `train_from_params`/`test_from_params` under their published names and
# imports them from the tfutils package on first use.
UPWARD_ALLOWED = {('tensorfx/training/__init__.py', 'tfutils')}


def _modules():
  for directory, _, names in os.walk(PACKAGE):
    for name in names:
      if name.endswith('.py'):
        path = os.path.join(directory, name)
        relative = os.path.relpath(path, ROOT)
        parts = relative[:-3].split(os.sep)
        if parts[-1] == '__init__':
          parts.pop()
        yield relative, '.'.join(parts), path


def _module_names():
  return {name for _, name, _ in _modules()}


def _imports(path, known, module_level_only):
  """The tensorfx modules `path` imports (resolved to modules)."""
  with open(path, encoding='utf-8') as f:
    tree = ast.parse(f.read())
  nodes = tree.body if module_level_only else list(ast.walk(tree))
  found = set()
  for node in nodes:
    if isinstance(node, ast.ImportFrom) and node.module:
      if not node.module.startswith('tensorfx'):
        continue
      for alias in node.names:
        child = f'{node.module}.{alias.name}'
        found.add(child if child in known else node.module)
    elif isinstance(node, ast.Import):
      found.update(a.name for a in node.names if a.name.startswith('tensorfx'))
  return found


def _layer(module):
  parts = module.split('.')
  if len(parts) < 2 or parts[1].startswith('_') or parts[1] == '__main__':
    return -1  # The base modules and the package itself.
  for rank, names in enumerate(LAYERS):
    if parts[1] in names:
      return rank
  raise AssertionError(f'{module} is in no layer: add its package to LAYERS')


def test_no_package_imports_a_higher_layer():
  known = _module_names()
  upward = []
  for relative, module, path in _modules():
    if module in ('tensorfx', 'tensorfx.__main__'):
      continue  # The facade and `python -m tensorfx` sit above every layer.
    for target in _imports(path, known, module_level_only=False):
      higher = _layer(target) > _layer(module)
      if higher and (relative, target.split('.')[1]) not in UPWARD_ALLOWED:
        upward.append(f'{relative} imports {target}')
  assert not upward, '\n'.join(sorted(upward))


def test_module_level_imports_have_no_cycle():
  known = _module_names()
  paths = {module: path for _, module, path in _modules()}
  graph = {
    module: {
      t
      for t in _imports(path, known, module_level_only=True)
      if t in known and t != module and not module.startswith(t + '.')
    }
    for module, path in paths.items()
  }
  # A package __init__ that re-exports its submodules is imported by them
  # first; that is not a cycle Python trips on, so the parent edges of a
  # package's own modules are dropped above. Depth-first search for a back
  # edge:
  state = {}
  cycles = []

  def visit(module, stack):
    state[module] = 'open'
    stack.append(module)
    for target in sorted(graph[module]):
      if state.get(target) == 'open':
        cycles.append(' -> '.join(stack[stack.index(target) :] + [target]))
      elif target not in state:
        visit(target, stack)
    stack.pop()
    state[module] = 'done'

  for module in sorted(graph):
    if module not in state:
      visit(module, [])
  assert not cycles, '\n'.join(cycles)


def test_the_layers_name_every_package():
  packages = {
    name
    for name in os.listdir(PACKAGE)
    if os.path.isdir(os.path.join(PACKAGE, name))
    and not name.startswith(('_', '.'))
  }
  layered = {name for names in LAYERS for name in names}
  assert packages == layered
