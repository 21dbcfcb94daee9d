"""`tensorfx tune`: a study config run locally, trial by trial.

Most tests use a small trainer file that imports no TensorFlow: it reports
the tuning metric the way tensorfx's trainer does (`report_metric`, the
hypertune file), as a function of its flags, so the search, the early
stopping, failures and resuming are tested in seconds. The tuning example
of docs/guides/cloud.md runs with the real iris trainer.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import tomllib

from packaging.requirements import Requirement
import pytest

from conftest import IRIS
from conftest import ROOT

# A trainer: metric = quality after `steps` measurements, one per step.
_TRAINER = """
import argparse, os, sys, time
from tensorfx.cloud import report_metric
parser = argparse.ArgumentParser()
parser.add_argument('--output')
parser.add_argument('--x', type=float, default=0.5)
parser.add_argument('--units', type=int, default=1)
parser.add_argument('--activation', default='relu')
parser.add_argument('--size', type=float, default=1)
parser.add_argument('--steps', type=int, default=3)
parser.add_argument('--sleep', type=float, default=0.05)
parser.add_argument('--fail-above', type=float)
args = parser.parse_args()
with open(os.path.join(args.output, 'argv.txt'), 'w') as f:
  f.write(' '.join(sys.argv[1:]))
started = time.time()
if args.fail_above is not None and args.x > args.fail_above:
  sys.exit('x is too large')
quality = args.x + args.units / 100 + (args.activation == 'tanh') + \
    args.size / 1000
for step in range(1, args.steps + 1):
  report_metric('score', quality * step / args.steps, step)
  time.sleep(args.sleep)
with open(os.path.join(args.output, 'times.txt'), 'w') as f:
  f.write(f'{started} {time.time()}')
"""


def _config(tmp_path, text):
  path = tmp_path / 'study.yaml'
  path.write_text(textwrap.dedent(text))
  return str(path)


def _tune(tmp_path, config, *flags, trainer_flags=(), timeout=300):
  trainer = tmp_path / 'fake_trainer.py'
  trainer.write_text(_TRAINER)
  return subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'tune',
      '--config',
      config,
      '--module',
      str(trainer),
      '--output',
      str(tmp_path / 'study'),
      *flags,
      '--',
      *trainer_flags,
    ],
    capture_output=True,
    text=True,
    timeout=timeout,
    check=False,
  )


def _best(result):
  return json.loads(result.stdout.strip().splitlines()[-1])


def _rows(result):
  lines = result.stdout.strip().splitlines()
  if lines and lines[-1].startswith('{'):
    lines = lines[:-1]  # The best trial.
  return [line.split() for line in lines]


_VERTEX_GRID = """
    studySpec:
      metrics: [{metricId: score, goal: MAXIMIZE}]
      algorithm: GRID_SEARCH
      parameters:
      - parameterId: units
        integerValueSpec: {minValue: 2, maxValue: 2}
      - parameterId: activation
        categoricalValueSpec: {values: [relu, tanh]}
      - parameterId: size
        discreteValueSpec: {values: [16, 64]}
    maxTrialCount: 20
    parallelTrialCount: 3
"""


@pytest.mark.slow
def test_a_vertex_grid_search_tries_every_point_once(tmp_path):
  result = _tune(tmp_path, _config(tmp_path, _VERTEX_GRID), '--seed', '3')
  assert result.returncode == 0, result.stderr[-3000:]
  rows = _rows(result)
  assert rows[0] == ['trial', 'state', 'score', 'units', 'activation', 'size']
  trials = rows[1:]
  # maxTrialCount 20, but the grid has 1 * 2 * 2 points.
  assert len(trials) == 4
  assert {tuple(r[3:]) for r in trials} == {
    (u, a, s) for u in '2' for a in ('relu', 'tanh') for s in ('16', '64')
  }
  best = _best(result)
  assert best['parameters'] == {'units': 2, 'activation': 'tanh', 'size': 64}
  assert best['metric'] == 'score'
  assert best['value'] == pytest.approx(0.5 + 0.02 + 1 + 0.064)
  # Each trial got its parameters as Vertex AI passes them, after the
  # fixed arguments, in its own directory.
  argv = (tmp_path / 'study' / str(best['trial']) / 'argv.txt').read_text()
  assert argv.endswith('--units=2 --activation=tanh --size=64')
  record = json.loads((tmp_path / 'study' / 'study.json').read_text())
  assert len(record['trials']) == 4
  assert record['best'] == best['trial']
  # Never more than parallelTrialCount (3) trials at a time.
  spans = [
    tuple(
      map(
        float, (tmp_path / 'study' / str(t) / 'times.txt').read_text().split()
      )
    )
    for t in range(1, 5)
  ]
  assert (
    max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans) <= 3
  )


@pytest.mark.slow
def test_a_legacy_study_searches_every_type_and_scale(tmp_path):
  config = _config(
    tmp_path,
    """
      trainingInput:
        hyperparameters:
          goal: MINIMIZE
          hyperparameterMetricTag: score
          maxTrials: 4
          maxParallelTrials: 2
          algorithm: RANDOM_SEARCH
          params:
          - {parameterName: x, type: DOUBLE, minValue: 0.01, maxValue: 1,
             scaleType: UNIT_REVERSE_LOG_SCALE}
          - {parameterName: units, type: INTEGER, minValue: 1, maxValue: 64,
             scaleType: UNIT_LOG_SCALE}
          - {parameterName: activation, type: CATEGORICAL,
             categoricalValues: [relu, tanh]}
          - {parameterName: size, type: DISCRETE, discreteValues: [8, 2.5]}
  """,
  )
  result = _tune(tmp_path, config, '--seed', '1')
  assert result.returncode == 0, result.stderr[-3000:]
  trials = _rows(result)[1:]
  assert len(trials) == 4 and all(r[1] == 'COMPLETE' for r in trials)
  record = json.loads((tmp_path / 'study' / 'study.json').read_text())
  for trial in record['trials']:
    p = trial['parameters']
    assert 0.01 <= p['x'] <= 1 and 1 <= p['units'] <= 64
    assert isinstance(p['units'], int)
    assert p['activation'] in ('relu', 'tanh') and p['size'] in (8, 2.5)
  best = _best(result)
  assert best['value'] == min(t['value'] for t in record['trials'])


@pytest.mark.release
@pytest.mark.slow
def test_the_median_rule_stops_trials_worse_than_the_median(tmp_path):
  # Trials run one at a time; after two complete, a trial whose score at a
  # step is below their median at that step is stopped.
  config = _config(
    tmp_path,
    """
      studySpec:
        metrics: [{metricId: score, goal: MAXIMIZE}]
        algorithm: GRID_SEARCH
        medianAutomatedStoppingSpec: {}
        parameters:
        - parameterId: x
          discreteValueSpec: {values: [0.1, 0.5, 0.9]}
      maxTrialCount: 3
      parallelTrialCount: 1
  """,
  )
  result = _tune(
    tmp_path,
    config,
    '--seed',
    '0',
    trainer_flags=['--steps', '30', '--sleep', '0.1'],
  )
  assert result.returncode == 0, result.stderr[-3000:]
  trials = {float(r[3]): r[1] for r in _rows(result)[1:]}
  order = [float(r[3]) for r in _rows(result)[1:]]
  # Whichever x came last: stopped if below the median of the first two.
  first_two, last = sorted(order[:2]), order[2]
  expected = (
    'STOPPED' if last < (first_two[0] + first_two[1]) / 2 else 'COMPLETE'
  )
  assert trials[last] == expected
  assert all(trials[x] == 'COMPLETE' for x in order[:2])
  if expected == 'STOPPED':
    # Stopped early: fewer measurements than the 30 steps.
    lines = (tmp_path / 'study' / '3' / 'hypertune.metrics').read_text()
    assert len(lines.splitlines()) < 30


@pytest.mark.release
@pytest.mark.slow
def test_failed_trials_stop_the_study_past_max_failed(tmp_path):
  config = _config(
    tmp_path,
    """
      trainingInput:
        hyperparameters:
          goal: MAXIMIZE
          hyperparameterMetricTag: score
          maxTrials: 6
          maxFailedTrials: 2
          algorithm: GRID_SEARCH
          params:
          - {parameterName: x, type: DISCRETE,
             discreteValues: [0.6, 0.7, 0.8, 0.9]}
  """,
  )
  result = _tune(tmp_path, config, trainer_flags=['--fail-above', '0.1'])
  assert result.returncode == 1
  assert '2 trial(s) failed' in result.stderr
  assert 'trial.log' in result.stderr
  states = [r[1] for r in _rows(result)[1:]]
  assert states == ['FAILED', 'FAILED']
  log = (tmp_path / 'study' / '1' / 'trial.log').read_text()
  assert 'x is too large' in log


@pytest.mark.release
@pytest.mark.slow
def test_a_stopped_study_resumes(tmp_path):
  config = _config(
    tmp_path,
    """
      trainingInput:
        hyperparameters:
          goal: MAXIMIZE
          hyperparameterMetricTag: score
          maxTrials: 3
          algorithm: RANDOM_SEARCH
          params:
          - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}
  """,
  )
  trainer = tmp_path / 'fake_trainer.py'
  trainer.write_text(_TRAINER)
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'tune',
    '--config',
    config,
    '--module',
    str(trainer),
    '--output',
    str(tmp_path / 'study'),
    '--',
    '--steps',
    '400',
    '--sleep',
    '0.05',
  ]
  process = subprocess.Popen(
    command,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    start_new_session=True,
  )
  metrics = tmp_path / 'study' / '1' / 'hypertune.metrics'
  deadline = time.monotonic() + 60
  while not metrics.exists() and time.monotonic() < deadline:
    time.sleep(0.2)
  process.send_signal(signal.SIGTERM)  # It stops its trial and exits.
  process.communicate(timeout=120)
  assert process.returncode != 0
  assert metrics.exists()
  # Run again: trial 1 reruns in its directory, then 2 and 3.
  result = subprocess.run(
    command[:-5] + ['--', '--steps', '2'],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert sorted(int(r[0]) for r in _rows(result)[1:]) == [1, 2, 3]
  assert sorted(os.listdir(tmp_path / 'study')) == [
    '1',
    '2',
    '3',
    'study.db',
    'study.json',
  ] or {'1', '2', '3', 'study.db', 'study.json'} <= set(
    os.listdir(tmp_path / 'study')
  )
  # A different study in the same directory is refused.
  other = _config(tmp_path, _VERTEX_GRID)
  result = _tune(tmp_path, other)
  assert result.returncode == 1
  assert 'holds another study' in result.stderr


def test_grid_search_needs_listed_values(tmp_path):
  config = _config(
    tmp_path,
    """
      studySpec:
        metrics: [{metricId: score, goal: MAXIMIZE}]
        algorithm: GRID_SEARCH
        parameters:
        - parameterId: x
          doubleValueSpec: {minValue: 0, maxValue: 1}
      maxTrialCount: 3
  """,
  )
  result = _tune(tmp_path, config)
  assert result.returncode == 1
  assert (
    "GRID_SEARCH cannot search the DOUBLE hyperparameter 'x'" in result.stderr
  )


def test_no_study_and_trainer_output_are_refused(tmp_path):
  config = _config(
    tmp_path,
    """
      workerPoolSpecs:
      - machineSpec: {machineType: n1-standard-4}
        replicaCount: 1
        pythonPackageSpec: {executorImageUri: img, packageUris: [p],
                            pythonModule: m}
  """,
  )
  result = _tune(tmp_path, config)
  assert result.returncode == 1 and 'has no study' in result.stderr
  config = _config(tmp_path, _VERTEX_GRID)
  result = _tune(tmp_path, config, trainer_flags=['--output', '/x'])
  assert result.returncode == 1
  assert 'do not pass --output' in result.stderr


@pytest.mark.release
@pytest.mark.slow
def test_the_cloud_guide_study_runs_locally(tmp_path, iris_analysis):
  """docs/guides/cloud.md's tuning example: 4 trials, 2 at a time."""
  config = tmp_path / 'hptuning.yaml'
  config.write_text(
    textwrap.dedent("""
      trainingInput:
        scaleTier: BASIC
        hyperparameters:
          goal: MAXIMIZE
          hyperparameterMetricTag: accuracy
          maxTrials: 8
          maxParallelTrials: 2
          params:
          - parameterName: learning-rate
            type: DOUBLE
            minValue: 0.001
            maxValue: 0.3
            scaleType: UNIT_LOG_SCALE
          - parameterName: hidden-layers:1
            type: INTEGER
            minValue: 4
            maxValue: 32
            scaleType: UNIT_LINEAR_SCALE
  """)
  )
  output = tmp_path / 'tune'
  result = subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'tune',
      '--config',
      str(config),
      '--module',
      'trainer',
      '--output',
      str(output),
      '--trials',
      '4',
      '--parallel',
      '2',
      '--seed',
      '1',
      '--',
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      iris_analysis,
      '--hidden-layers:2',
      '10',
      '--max-steps',
      '40',
    ],
    cwd=IRIS,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  rows = _rows(result)
  assert rows[0] == [
    'trial',
    'state',
    'accuracy',
    'learning-rate',
    'hidden-layers:1',
  ]
  assert sorted(int(r[0]) for r in rows[1:]) == [1, 2, 3, 4]
  best = _best(result)
  values = [float(r[2]) for r in rows[1:]]
  assert best['value'] == pytest.approx(max(values), rel=1e-5)
  assert set(best['parameters']) == {'learning-rate', 'hidden-layers:1'}
  # Each trial is a normal run: a model, and the hidden-layers it was given.
  for trial in range(1, 5):
    assert (output / str(trial) / 'model' / 'saved_model.pb').exists()
  job = (output / str(best['trial']) / 'job.yaml').read_text()
  assert f'hidden-layers:1={best["parameters"]["hidden-layers:1"]}' in job
  # TensorBoard's HParams view: the experiment and one session per trial.
  import tensorflow as tf

  sessions = 0
  for trial in range(1, 5):
    for path in tf.io.gfile.glob(str(output / str(trial) / 'events.*')):
      for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
          if value.metadata.plugin_data.plugin_name == 'hparams':
            sessions += 1
  assert sessions >= 4


def test_a_plain_install_tunes_optuna_is_a_dependency():
  with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
    project = tomllib.load(f)['project']
  required = {
    Requirement(d).name.lower(): Requirement(d) for d in project['dependencies']
  }
  # `tensorfx tune` is a main command: `pip install` of the package alone
  # brings its search and its SQLite record (SQLAlchemy, Alembic).
  assert {'optuna', 'sqlalchemy', 'alembic'} <= set(required)
  import optuna

  assert required['optuna'].specifier.contains(optuna.__version__)
  # No extra stands for it any more.
  assert 'tune' not in project['optional-dependencies']


def test_without_optuna_the_error_says_what_to_install(monkeypatch, tmp_path):
  from tensorfx import ConfigurationError
  from tensorfx.cloud import ParameterSpec
  from tensorfx.cloud import StudySpec
  from tensorfx.tuning import tune

  monkeypatch.setitem(sys.modules, 'optuna', None)  # import optuna fails
  study = StudySpec(
    'score',
    'MAXIMIZE',
    (ParameterSpec('x', 'DOUBLE', 0, 1),),
    max_trial_count=1,
    parallel_trial_count=1,
  )
  # Optuna is a dependency; an environment without it gets it by its own
  # name (tensorfx-sdk is not on the package index).
  with pytest.raises(
    ConfigurationError,
    match=r'is not installed here: pip install "optuna>=3.6"$',
  ):
    tune(study, 'trainer', str(tmp_path))
