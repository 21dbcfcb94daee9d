"""The Gematria sample's modules, imported without shadowing anyone's.

The sample's `trainer.py` is a module named `trainer`, as the iris
sample's and a user's are: imported plainly, it would be every later
`--module trainer` in the test process. It is loaded here under a name of
its own, and the search path is put back as it was.
"""

import functools
import importlib.util
import os
import sys

from conftest import ROOT

SAMPLE = os.path.join(ROOT, 'samples', 'gematria')


@functools.cache
def module(name):
  """The sample's module `name` (`trainer`, `gematria_protos`, ...)."""
  saved = list(sys.path)
  sys.path.insert(0, SAMPLE)  # Its imports of its own modules.
  try:
    spec = importlib.util.spec_from_file_location(
      f'gematria_sample_{name}', os.path.join(SAMPLE, f'{name}.py')
    )
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded
  finally:
    sys.path[:] = saved
