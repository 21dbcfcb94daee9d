"""Type checking: mypy passes on every module of the package.

It sees the lazily imported public names (ModelBuilder, ModelTrainer, ...)
as the classes they are, without importing TensorFlow at run time.
"""

import os
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

pytest.importorskip('mypy', reason='mypy is in the test extra')


def _mypy(*args, cwd=ROOT):
  return subprocess.run(
    [sys.executable, '-m', 'mypy', *args],
    cwd=cwd,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )


def test_mypy_passes_on_every_module():
  # The files and options are pyproject.toml's [tool.mypy]: every module
  # of tensorfx/, with check_untyped_defs.
  result = _mypy()
  assert 'tensorfx' in _mypy_config()['files'], _mypy_config()
  assert result.returncode == 0, result.stdout[-4000:] + result.stderr


def _mypy_config():
  with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
    return tomllib.load(f)['tool']['mypy']


def test_lazy_exports_are_visible_to_type_checkers(tmp_path):
  user = tmp_path / 'user.py'
  user.write_text(
    'import tensorfx as tfx\n'
    'from tensorfx.training import ModelBuilder, ModelTrainer\n'
    'reveal_type(ModelBuilder)\n'
    'reveal_type(tfx.training.ModelTrainer)\n'
    'reveal_type(tfx.embeddings.EmbeddingTable)\n'
    'model = tfx.prediction.Model.load("/tmp/model")\n'
    'reveal_type(model.predict(["1,2"]))\n'
    'tfx.training.NoSuchThing\n'
  )
  result = _mypy(
    '--config-file',
    os.path.join(ROOT, 'pyproject.toml'),
    '--follow-imports=silent',
    str(user),
  )
  out = result.stdout
  assert (
    'def (args: Any, dataset: Any) -> tensorfx.training._builder.ModelBuilder'
    in out
    or 'tensorfx.training._builder.ModelBuilder' in out
  )
  assert 'tensorfx.training._trainer.ModelTrainer' in out
  assert 'tensorfx.embeddings._table.EmbeddingTable' in out
  assert 'list[dict[str, Any]]' in out
  assert 'Module has no attribute "NoSuchThing"' in out, out
