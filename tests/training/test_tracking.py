"""Experiment records in MLflow: embedded SQLite and a real PostgreSQL store."""

import glob
import importlib.util
import json
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
import yaml

from conftest import IRIS
from tensorfx import ConfigurationError
from tensorfx.training import ModelArguments
from tensorfx.training import _settings
from tensorfx.training._run import jobinfo as _jobinfo
from tensorfx.training._run import tracking as _tracking
from test_trainer import _train

mlflow = pytest.importorskip(
  'mlflow',
  reason='MLflow, a dependency of tensorfx, is not installed here',
)
from mlflow.tracking import MlflowClient  # noqa: E402  (after the importorskip that guards it)


def _run_of(uri, experiment):
  client = MlflowClient(tracking_uri=uri)
  found = client.get_experiment_by_name(experiment)
  assert found is not None, f'no experiment {experiment!r} in {uri}'
  runs = client.search_runs([found.experiment_id])
  return client, runs


def _history(client, run, key):
  return [
    (m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)
  ]


@pytest.mark.slow
def test_sqlite_store_records_the_run_and_resumes_it(
  tmp_path, iris_dataset_factory
):
  flags = (
    '--experiment',
    'iris',
    '--log-interval-steps',
    '2',
    '--checkpoint-interval-steps',
    '3',
    '--eval-interval-steps',
    '3',
  )
  _train(tmp_path, iris_dataset_factory(), '--max-steps', '6', *flags)
  uri = 'sqlite:///' + str(tmp_path / 'mlruns.db')
  client, runs = _run_of(uri, 'iris')
  assert len(runs) == 1
  run = runs[0]
  assert run.info.status == 'FINISHED'
  # Parameters: the resolved arguments.
  params = run.data.params
  assert params['max_steps'] == '6'
  assert params['experiment'] == 'iris'
  assert params['hidden_layers'] == '[8]'
  # Training metrics every --log-interval-steps, validation every
  # --eval-interval-steps, each checkpoint written.
  assert [s for s, _ in _history(client, run, 'train/loss')] == [2, 4, 6]
  assert [s for s, _ in _history(client, run, 'eval/loss')] == [3, 6]
  assert [s for s, _ in _history(client, run, 'eval/accuracy')] == [3, 6]
  assert _history(client, run, 'checkpoint') == [(3, 3.0), (6, 6.0)]
  tags = run.data.tags
  assert tags['tensorfx.output'] == str(tmp_path)
  assert tags['tensorfx.action'] == 'train'
  assert tags['tensorfx.status'] == 'completed'
  assert tags['tensorfx.checkpoint.latest'].endswith('checkpoints/ckpt-6')
  assert [
    os.path.basename(p) for p in json.loads(tags['tensorfx.checkpoints'])
  ] == ['ckpt-3', 'ckpt-6']
  assert tags['tensorfx.model'] == str(tmp_path / 'model')
  assert {
    'tensorfx.git.commit',
    'tensorfx.git.dirty',
    'mlflow.source.name',
  } <= set(tags)
  # job.yaml and the run agree.
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['metrics']['loss'] == pytest.approx(run.data.metrics['eval/loss'])

  # The same experiment and output: the checkpoint and the run resume.
  builder, _ = _train(
    tmp_path, iris_dataset_factory(), '--max-steps', '10', *flags
  )
  assert int(builder.optimizer.iterations.numpy()) == 10
  client, runs = _run_of(uri, 'iris')
  assert [r.info.run_id for r in runs] == [run.info.run_id]
  run = runs[0]
  assert run.info.status == 'FINISHED'
  assert [s for s, _ in _history(client, run, 'train/loss')] == [2, 4, 6, 8, 10]
  assert [s for s, _ in _history(client, run, 'checkpoint')] == [3, 6, 9, 10]
  # Parameters keep their first values; the change is recorded.
  assert run.data.params['max_steps'] == '6'
  assert json.loads(run.data.tags['tensorfx.changed_params']) == {
    'max_steps': '10'
  }


@pytest.mark.release
@pytest.mark.slow
def test_another_experiment_on_the_same_store_is_another_run(
  tmp_path, iris_dataset_factory
):
  uri = 'sqlite:///' + str(tmp_path / 'shared.db')
  for name in ('a', 'b'):
    _train(
      tmp_path / name,
      iris_dataset_factory(),
      '--max-steps',
      '2',
      '--tracking-uri',
      uri,
      '--experiment',
      'shared',
    )
  _, runs = _run_of(uri, 'shared')
  assert sorted(r.data.tags['tensorfx.output'] for r in runs) == [
    str(tmp_path / 'a'),
    str(tmp_path / 'b'),
  ]
  assert not (tmp_path / 'a' / 'mlruns.db').exists()


def test_tracking_is_off_unless_asked(tmp_path):
  args = ModelArguments.parse(['--output', str(tmp_path)])
  settings = _settings.TrackingSettings.from_args(args)
  assert not settings.enabled
  tracker = _tracking.create(settings, str(tmp_path))
  assert not tracker.enabled
  tracker.start({}, {})
  tracker.log_train(1, {'loss': 1.0})
  tracker.finish('completed')
  assert not (tmp_path / 'mlruns.db').exists()


def test_asking_for_tracking_without_mlflow_names_the_packages(monkeypatch):
  find_spec = importlib.util.find_spec
  monkeypatch.setattr(
    importlib.util,
    'find_spec',
    lambda name, *a: None if name == 'mlflow' else find_spec(name, *a),
  )
  # By their names on the package index: tensorfx-sdk is not published.
  with pytest.raises(
    ConfigurationError,
    match=r'pip install "mlflow-skinny>=2.10" "sqlalchemy>=2.0" '
    r'"alembic>=1.12"$',
  ):
    ModelArguments.parse(['--experiment', 'iris'])
  # Without the flags nothing needs MLflow.
  assert ModelArguments.parse([]).experiment is None


def test_provenance_outside_git(tmp_path):
  source = {
    'path': str(tmp_path / 'trainer.py'),
    **_jobinfo.git_provenance(str(tmp_path)),
  }
  assert source['commit'] is None
  tags = _tracking._source_tags(source)
  assert tags['tensorfx.git.commit'] == 'none'
  assert 'mlflow.source.git.commit' not in tags


def test_default_store_is_sqlite_in_a_local_output(tmp_path):
  assert _tracking.default_uri(str(tmp_path)) == (
    'sqlite:///' + str(tmp_path / 'mlruns.db')
  )
  with pytest.raises(ConfigurationError, match='needs --tracking-uri'):
    _tracking.default_uri('gs://bucket/job')


def _git(directory, *args):
  subprocess.run(
    ['git', '-C', str(directory), *args],
    check=True,
    capture_output=True,
    text=True,
  )


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')
def test_git_provenance_of_a_trainer_on_a_detached_head(
  tmp_path, iris_analysis
):
  repo = tmp_path / 'repo'
  repo.mkdir()
  shutil.copy(os.path.join(IRIS, 'trainer.py'), repo / 'trainer.py')
  (repo / 'notes.txt').write_text('v1\n')
  _git(repo, 'init', '-q')
  _git(repo, 'add', '.')
  _git(
    repo,
    '-c',
    'user.name=t',
    '-c',
    'user.email=t@e',
    'commit',
    '-q',
    '-m',
    'trainer',
  )
  _git(repo, 'checkout', '-q', '--detach', 'HEAD')
  commit = subprocess.run(
    ['git', '-C', str(repo), 'rev-parse', 'HEAD'],
    capture_output=True,
    text=True,
    check=True,
  ).stdout.strip()
  (repo / 'notes.txt').write_text('v2\n')  # Dirty.
  output = tmp_path / 'job'
  command = [
    sys.executable,
    'trainer.py',
    '--output',
    str(output),
    '--data-train',
    os.path.join(IRIS, 'data', 'train.csv'),
    '--data-eval',
    os.path.join(IRIS, 'data', 'eval.csv'),
    '--data-schema',
    os.path.join(IRIS, 'schema.yaml'),
    '--data-features',
    os.path.join(IRIS, 'features.yaml'),
    '--data-metadata',
    iris_analysis,
    '--max-steps',
    '2',
    '--hidden-layers',
    '4',
    '--experiment',
    'provenance',
  ]
  result = subprocess.run(
    command, cwd=repo, capture_output=True, text=True, timeout=300, check=False
  )
  assert result.returncode == 0, result.stderr[-3000:]
  _, runs = _run_of('sqlite:///' + str(output / 'mlruns.db'), 'provenance')
  tags = runs[0].data.tags
  assert tags['mlflow.source.git.commit'] == commit
  assert tags['tensorfx.git.commit'] == commit
  assert tags['tensorfx.git.dirty'] == 'true'
  assert 'tensorfx.git.branch' not in tags  # Detached.
  assert tags['mlflow.source.name'] == str(repo / 'trainer.py')


# PostgreSQL: a real server, started for the test (../shared/FACTS.md).


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@pytest.fixture
def postgres_uri():
  """A PostgreSQL server on a free port; its URI. Stopped afterwards."""
  binaries = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'))
  initdb = binaries[-1] if binaries else shutil.which('initdb')
  if not initdb:
    pytest.skip('The PostgreSQL server (initdb, pg_ctl) is not installed.')
  pg_ctl = os.path.join(os.path.dirname(initdb), 'pg_ctl')
  prefix = []
  if os.geteuid() == 0:
    # PostgreSQL refuses to run as root.
    try:
      postgres = pwd.getpwnam('postgres')
    except KeyError:
      pytest.skip(
        'Running as root without a postgres user to run the '
        'PostgreSQL server as.'
      )
    if not shutil.which('runuser'):
      pytest.skip('Running as root without runuser to start PostgreSQL.')
    prefix = ['runuser', '-u', 'postgres', '--']
  # Under /tmp itself: pytest's tmp_path parents are private to root.
  root = tempfile.mkdtemp(prefix='tensorfx-postgres-', dir='/tmp')
  os.chmod(root, 0o755)
  if prefix:
    os.chown(root, postgres.pw_uid, postgres.pw_gid)
  data, log = os.path.join(root, 'data'), os.path.join(root, 'server.log')
  port = _free_port()
  subprocess.run(
    [*prefix, initdb, '-D', data, '-U', 'postgres', '--auth=trust'],
    check=True,
    capture_output=True,
    timeout=120,
  )
  started = subprocess.run(
    [
      *prefix,
      pg_ctl,
      '-D',
      data,
      '-o',
      f'-p {port} -k {root} -c listen_addresses=127.0.0.1',
      '-l',
      log,
      '-w',
      'start',
    ],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  try:
    assert started.returncode == 0, (
      started.stderr + pathlib.Path(log).read_text()
    )
    yield f'postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres'
  finally:
    subprocess.run(
      [*prefix, pg_ctl, '-D', data, '-m', 'fast', 'stop'],
      capture_output=True,
      timeout=120,
      check=False,
    )
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_postgresql_store(tmp_path, iris_dataset_factory, postgres_uri):
  _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '4',
    '--log-interval-steps',
    '2',
    '--tracking-uri',
    postgres_uri,
    '--experiment',
    'iris-pg',
  )
  client, runs = _run_of(postgres_uri, 'iris-pg')
  assert len(runs) == 1
  run = runs[0]
  assert run.info.status == 'FINISHED'
  assert run.data.params['max_steps'] == '4'
  assert [s for s, _ in _history(client, run, 'train/loss')] == [2, 4]
  assert [s for s, _ in _history(client, run, 'eval/loss')] == [4]
  assert run.data.tags['tensorfx.checkpoint.latest'].endswith('ckpt-4')
  # The URI is the store: nothing embedded in the output.
  assert not (tmp_path / 'mlruns.db').exists()
  # Resumed on the same store.
  _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '6',
    '--log-interval-steps',
    '2',
    '--tracking-uri',
    postgres_uri,
    '--experiment',
    'iris-pg',
  )
  client, runs = _run_of(postgres_uri, 'iris-pg')
  assert [r.info.run_id for r in runs] == [run.info.run_id]
  assert [s for s, _ in _history(client, runs[0], 'train/loss')] == [2, 4, 6]
