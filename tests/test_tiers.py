"""The test tiers: markers declared, cluster tests marked, CI runs all.

The fast tier leaves out the tests marked slow, cluster, install, chaos
or docs; the full suite (README, .ci/run) runs every test.
"""

import ast
import configparser
import os
import re

from conftest import ROOT

TIERS = ('slow', 'cluster', 'install', 'chaos', 'docs')
FAST = 'not (slow or cluster or install or chaos or docs)'
# What starts a local TensorFlow cluster in a test module.
_CLUSTER = re.compile(
  r"'--cluster',|run_local_cluster\(|LocalCluster\(|"
  r'in_process_cluster\(|ChaosRun\(|distribute\.Server\('
)
# Tests that name a cluster but start none.
_NOT_STARTED = {
  # Checks --restart's arguments, refused before anything starts.
  'tests/tools/test_launch.py::test_restart_needs_a_cluster_and_a_count',
}


def _pytest_ini():
  config = configparser.ConfigParser(interpolation=None)
  config.read(os.path.join(ROOT, 'pytest.ini'))
  return config['pytest']


def _read(*parts):
  with open(os.path.join(ROOT, *parts), encoding='utf-8') as f:
    return f.read()


def _test_modules():
  for directory, _, names in os.walk(os.path.join(ROOT, 'tests')):
    for name in sorted(names):
      if name.startswith('test_') and name.endswith('.py'):
        yield os.path.join(directory, name)


def _marks(tree, function=None):
  """The marker names on a module (pytestmark) or on one of its tests."""
  nodes = []
  for node in tree.body:
    if (
      function is None
      and isinstance(node, ast.Assign)
      and any(getattr(t, 'id', '') == 'pytestmark' for t in node.targets)
    ):
      nodes.append(node.value)
    elif isinstance(node, ast.FunctionDef) and node.name == function:
      nodes.extend(node.decorator_list)
  return {
    n.attr
    for value in nodes
    for n in ast.walk(value)
    if isinstance(n, ast.Attribute)
    and isinstance(n.value, ast.Attribute)
    and n.value.attr == 'mark'
  }


def test_the_tiers_markers_are_declared_and_enforced():
  ini = _pytest_ini()
  declared = {
    line.split(':')[0].strip() for line in ini['markers'].strip().splitlines()
  }
  assert set(TIERS) <= declared
  assert '--strict-markers' in ini['addopts']
  assert ini['filterwarnings'].split()[0] == 'error'


def test_every_test_that_starts_a_cluster_is_marked_cluster():
  unmarked = []
  for path in _test_modules():
    source = _read(path)
    tree = ast.parse(source)
    module_marks = _marks(tree)
    for node in tree.body:
      if not isinstance(node, ast.FunctionDef) or not node.name.startswith(
        'test'
      ):
        continue
      body = ast.get_source_segment(source, node)
      # A test's fixtures may start the cluster: count the module's text
      # when the test takes a fixture of the module that does.
      fixtures = {a.arg for a in node.args.args}
      starts = _CLUSTER.search(body) or any(
        isinstance(other, ast.FunctionDef)
        and other.name in fixtures
        and _CLUSTER.search(ast.get_source_segment(source, other))
        for other in tree.body
      )
      name = f'{os.path.relpath(path, ROOT)}::{node.name}'
      if (
        starts
        and name not in _NOT_STARTED
        and 'cluster' not in module_marks | _marks(tree, node.name)
      ):
        unmarked.append(name)
  assert not unmarked, unmarked


def test_modules_with_module_fixtures_stay_on_one_worker():
  # A module-scoped fixture (a training, an analysis, a server) is built
  # on every worker that runs one of its module's tests: without a group,
  # three workers build it three times (the Gematria samples did).
  scoped = re.compile(r"""scope=['"]module['"]""")
  for path in _test_modules():
    text = _read(path)
    if scoped.search(text):
      assert 'xdist_group' in text, os.path.relpath(path, ROOT)
  assert '--dist loadgroup' in _pytest_ini()['addopts']


def test_the_full_suite_runs_everything_and_the_fast_tier_is_documented():
  assert 'python -m pytest tests' in _read('.ci', 'run')
  assert not re.search(r'pytest\s.*-m\s', _read('.ci', 'run'))
  assert 'pip install -e ".[test]" && python -m pytest tests' in _read(
    'README.md'
  )
  for page in (('README.md',), ('docs', 'contributing.md'), ('pytest.ini',)):
    assert f'python -m pytest -m "{FAST}"' in _read(*page), page
