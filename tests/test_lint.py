"""Lint and format: ruff passes on the code, as pyproject.toml configures it.

The rules (pyproject.toml's [tool.ruff]) are Google style: pyflakes,
pycodestyle, Google docstrings, one import per line, bugbear and pylint's
checks. A justified exception is an inline `# noqa: CODE  (why)`.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_lint')

PATHS = ('tensorfx', 'tests', 'samples', 'benchmarks')


def _ruff(*args):
  command = (
    [shutil.which('ruff')]
    if shutil.which('ruff')
    else [sys.executable, '-m', 'ruff']
  )
  return subprocess.run(
    [*command, *args, *PATHS],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )


@pytest.fixture(scope='module', autouse=True)
def _ruff_installed():
  if not shutil.which('ruff'):
    pytest.importorskip('ruff', reason='ruff is in the test extra')


def test_ruff_check_passes():
  result = _ruff('check', '--no-cache')
  assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def test_code_is_formatted():
  # One formatter (ruff format, configured beside the linter): a change
  # that is not formatted fails here; `ruff format` fixes it.
  result = _ruff('format', '--check', '--no-cache')
  assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def test_no_pylint_pragmas_are_left():
  # ruff is the linter: pylint's pragmas would be dead text.
  pragma = '# pylint' + ': disable'  # Not one itself.
  found = []
  for path in PATHS:
    for directory, _, names in os.walk(os.path.join(ROOT, path)):
      for name in names:
        if name.endswith('.py'):
          with open(os.path.join(directory, name), encoding='utf-8') as f:
            found += [
              f'{name}:{number}'
              for number, line in enumerate(f, 1)
              if pragma in line
            ]
  assert not found, found
