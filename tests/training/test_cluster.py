"""The chief's restart in place (a table grows under parameter servers)."""

import os
import sys

import pytest

from tensorfx._errors import TrainingError
from tensorfx.training._cluster import cluster as _cluster


def test_a_script_is_replaced_by_the_same_command(monkeypatch):
  calls = []
  monkeypatch.setattr(os, 'execv', lambda *a: calls.append(a))
  monkeypatch.setattr(
    sys, 'orig_argv', ['python3', '-m', 'tensorfx', 'train', '--output', 'o']
  )
  monkeypatch.delitem(sys.modules, 'ipykernel', raising=False)
  monkeypatch.delattr(sys, 'ps1', raising=False)
  _cluster.restart_in_place()
  assert calls == [
    (
      sys.executable,
      [sys.executable, '-m', 'tensorfx', 'train', '--output', 'o'],
    )
  ]


def test_an_interactive_session_is_told_to_run_again(monkeypatch):
  monkeypatch.setattr(os, 'execv', lambda *a: pytest.fail('replaced'))
  monkeypatch.setitem(sys.modules, 'ipykernel', object())
  with pytest.raises(TrainingError, match='Run the same training again'):
    _cluster.restart_in_place()
