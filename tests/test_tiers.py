"""The test tiers: markers declared, cluster tests marked, CI runs both.

The standard tier (the README's `python -m pytest tests`) leaves out the
tests marked release; the release tier is `-m release`; the fast tier
leaves out the tests marked slow, cluster, install, chaos or docs, and so
the release tier's too. CI (.ci/run) runs the standard tier, then release.
"""

import ast
import configparser
import functools
import os
import re

from conftest import ROOT

TIERS = ('slow', 'cluster', 'install', 'chaos', 'docs', 'release')
FAST = 'not (slow or cluster or install or chaos or docs)'
# What starts a local TensorFlow cluster in a test module.
_CLUSTER = re.compile(
  r"'--cluster',|run_local_cluster\(|LocalCluster\(|"
  r'in_process_cluster\(|ChaosRun\(|distribute\.Server\('
)
# The standard tier's end-to-end proof of each real part: the test that
# keeps it there (not marked release). Moving one of these to the release
# tier needs another standard test in its place.
STANDARD_PROOF = {
  "tf.Transform analysis on Beam's DirectRunner": (
    'tests/data/test_analysis.py::'
    'test_writes_the_transform_graph_schemas_and_statistics'
  ),
  'a parameter-server cluster of processes (chief, workers, ps, evaluator) '
  'writing its job to gs:// on the loopback server': (
    'tests/cloud/test_gcs_cluster.py::'
    'test_a_parameter_server_cluster_writes_its_job_to_gs'
  ),
  'MultiWorkerMirrored with two worker processes, a Keras model': (
    'tests/models/test_keras_distributed.py::'
    'test_a_keras_model_trains_unchanged_on_multi_worker_mirrored'
  ),
  'a Vertex request built by the real client': (
    'tests/cloud/test_cloud_submit.py::'
    'test_submit_stages_the_package_and_creates_the_job'
  ),
  'the iris sample, as the README runs it': (
    'tests/samples/test_iris.py::test_iris_sample_trains_and_predicts'
  ),
  'the census sample': (
    'tests/samples/test_small_runs.py::'
    'test_census_generates_trains_and_predicts_with_its_key'
  ),
  "the original tensorfx's census sample": (
    'tests/samples/test_small_runs.py::'
    'test_original_census_runs_its_run_sh_and_reads_empty_cells'
  ),
  "the original tensorfx's iris sample": (
    'tests/samples/test_original_iris.py::'
    'test_tfx_predict_writes_a_json_line_per_instance'
  ),
  'the recommendation sample': (
    'tests/embeddings/test_table_training.py::'
    'test_the_exported_sample_serves_raw_ids'
  ),
  "the Gematria sample through Gematria's command line": (
    'tests/samples/test_small_runs.py::'
    'test_gematria_trains_and_predicts_through_gematrias_command_line'
  ),
  'the Gematria-style sample': (
    'tests/samples/test_small_runs.py::'
    'test_gematria_style_trains_and_predicts_as_its_readme_says'
  ),
  'the Keras builder': (
    'tests/models/test_keras.py::'
    'test_a_functional_fit_model_trains_and_serves_raw_instances'
  ),
  'train_from_params': (
    'tests/training/test_params.py::test_the_exported_model_takes_raw_instances'
  ),
  'embedding tables on parameter servers': (
    'tests/embeddings/test_table_sharding.py::'
    'test_the_table_is_split_across_parameter_servers'
  ),
  'tuning': (
    'tests/tuning/test_tune.py::'
    'test_a_legacy_study_searches_every_type_and_scale'
  ),
  'sliced evaluation': (
    'tests/training/test_slices.py::test_evaluate_reports_slices_that_add_up'
  ),
  'Beam prediction': (
    'tests/prediction/test_beam.py::'
    'test_tfrecord_output_and_a_bad_record_fails_by_default'
  ),
  'a killed-and-resumed run': (
    'tests/training/test_interrupted_writes.py::'
    'test_a_kill_during_export_leaves_the_previous_model'
  ),
}
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


@functools.cache
def _tests():
  """Every test function: ('path::name', module source, tree, node, marks).

  The marks are the module's (pytestmark) and the function's own. Parsed
  once for all the checks below.
  """
  found = []
  for path in _test_modules():
    source = _read(path)
    tree = ast.parse(source)
    module_marks = _marks(tree)
    for node in tree.body:
      if isinstance(node, ast.FunctionDef) and node.name.startswith('test'):
        name = f'{os.path.relpath(path, ROOT)}::{node.name}'
        marks = module_marks | _marks(tree, node.name)
        found.append((name, source, tree, node, marks))
  return tuple(found)


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
  for name, source, tree, node, marks in _tests():
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
    if starts and name not in _NOT_STARTED and 'cluster' not in marks:
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


def test_ci_runs_the_readme_command_then_the_release_tier():
  ci = _read('.ci', 'run')
  readme_command = 'pip install -e ".[test]" && python -m pytest tests'
  assert readme_command in _read('README.md')
  assert readme_command in ci.splitlines()
  assert ci.index(readme_command) < ci.index(
    'python -m pytest tests -m release'
  )
  assert '-m "not release"' in _pytest_ini()['addopts']
  assert '--durations=25' in _pytest_ini()['addopts']
  for page in (('README.md',), ('docs', 'contributing.md'), ('pytest.ini',)):
    assert f'python -m pytest -m "{FAST}"' in _read(*page), page
  assert 'python -m pytest tests -m release' in _read('docs', 'contributing.md')


def test_every_release_test_is_left_out_of_the_fast_tier_too():
  # The fast tier's -m replaces the standard tier's "not release", so a
  # release test must carry one of the fast tier's own exclusions.
  fast_excluded = set(TIERS) - {'release'}
  loose = [
    name
    for name, _, _, _, marks in _tests()
    if 'release' in marks and not marks & fast_excluded
  ]
  assert not loose, loose


def test_installs_chaos_and_benchmark_smoke_runs_are_in_the_release_tier():
  standard = [
    name
    for name, _, _, _, marks in _tests()
    if (marks & {'install', 'chaos'} or '_quick.py::' in name)
    and 'release' not in marks
  ]
  assert not standard, standard


def test_the_standard_tier_proves_every_real_part_end_to_end():
  standard = {
    name for name, _, _, _, marks in _tests() if 'release' not in marks
  }
  missing = [
    (part, test)
    for part, test in STANDARD_PROOF.items()
    if test not in standard
  ]
  assert not missing, missing
