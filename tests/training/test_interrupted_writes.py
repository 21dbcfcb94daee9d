"""Nothing half-written is taken as complete.

Each test runs `tensorfx train` in its own process and kills it (SIGKILL,
through the `TENSORFX_FAULT` hook) in the middle of one of the writes a
job makes: the exported model (locally, and with the marker scheme of
object stores, exercised here on `file://` paths), `job.yaml`, the
analysis, and the evaluator's records and best model. Then it checks what
a reader finds, and that the same command run again completes.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import IRIS
from conftest import IRIS_INSTANCES
from conftest import iris_args
from tensorfx import DataError
from tensorfx import _atomic
from tensorfx import prediction
from tensorfx import training
from tensorfx.models import nn

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_interrupted_writes'),
]

_FLAGS = (
  '--hidden-layers:1',
  '8',
  '--seed',
  '6',
  '--checkpoint-interval-steps',
  '50',
)


def _command(output, *flags):
  return [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--data-train',
    'data/train.csv',
    '--data-eval',
    'data/eval.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    *_FLAGS,
    *flags,
  ]


def _run(command, fault=None, once=None, timeout=300):
  env = dict(os.environ)
  env.pop('TENSORFX_FAULT', None)
  if fault:
    env['TENSORFX_FAULT'] = fault
  if once:
    env['TENSORFX_FAULT_ONCE'] = str(once)
  return subprocess.run(
    command,
    cwd=IRIS,
    env=env,
    capture_output=True,
    text=True,
    timeout=timeout,
    check=False,
  )


def _scores(model):
  return np.array([p['scores'] for p in model.predict(IRIS_INSTANCES)])


@pytest.fixture(scope='module')
def trained(tmp_path_factory, iris_dataset_factory):
  """An iris job trained to step 100, its model exported: (output, scores)."""
  output = tmp_path_factory.mktemp('writes') / 'job'
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, *_FLAGS, '--max-steps', '100'), parse_job=True
  )
  model = training.ModelTrainer().train(
    nn.FeedForwardClassification(args, iris_dataset_factory()), job
  )
  return output, _scores(model)


def test_a_kill_during_export_leaves_the_previous_model(
  trained, tmp_path, iris_analysis
):
  source, before = trained
  output = tmp_path / 'job'
  shutil.copytree(source, output)
  command = _command(
    output, '--data-metadata', iris_analysis, '--max-steps', '150'
  )
  # Killed with the SavedModel written, its schema.yaml not yet.
  result = _run(command, fault='export.model.saved')
  assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
  # The half-written model is beside its place; the previous one serves.
  assert (output / 'model.partial').is_dir()
  np.testing.assert_allclose(
    _scores(prediction.Model.load(str(output / 'model'))), before, rtol=1e-6
  )
  # job.yaml is whole: the run that died was still running.
  assert (
    yaml.safe_load((output / 'job.yaml').read_text())['status'] == 'running'
  )

  result = _run(command)
  assert result.returncode == 0, result.stderr[-2000:]
  assert not (output / 'model.partial').exists()
  after = _scores(prediction.Model.load(str(output / 'model')))
  assert not np.allclose(after, before)
  assert (
    yaml.safe_load((output / 'job.yaml').read_text())['status'] == 'completed'
  )


@pytest.mark.release
def test_object_store_export_killed_is_refused_until_exported_again(
  tmp_path, iris_analysis
):
  # file:// goes through the same code as gs:// (no directory rename): the
  # model is replaced in place, under a marker deleted last.
  output = f'file://{tmp_path}/job'
  command = _command(
    output, '--data-metadata', iris_analysis, '--max-steps', '50'
  )
  result = _run(command, fault='export.model.saved')
  assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
  model_dir = tmp_path / 'job' / 'model'
  assert (model_dir / 'saved_model.pb').exists()
  assert (model_dir / _atomic.MARKER).exists()
  with pytest.raises(
    DataError,
    match=r"The model at '.*/model' is "
    r'incomplete: its export was interrupted .* Export it '
    r'again: tensorfx export --output JOB_DIR\.',
  ):
    prediction.Model.load(f'{output}/model')
  result = subprocess.run(
    [sys.executable, '-m', 'tensorfx', 'predict', '--model', f'{output}/model'],
    input='6.3,3.3,6,2.5\n',
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 1
  assert 'is incomplete: its export was interrupted' in result.stderr

  result = _run(command)
  assert result.returncode == 0, result.stderr[-2000:]
  assert not (model_dir / _atomic.MARKER).exists()
  assert (
    len(prediction.Model.load(f'{output}/model').predict(IRIS_INSTANCES)) == 3
  )


@pytest.mark.release
def test_a_kill_while_job_yaml_is_written_leaves_the_previous_record(
  trained, tmp_path, iris_analysis
):
  source, _ = trained
  output = tmp_path / 'job'
  shutil.copytree(source, output)
  command = _command(
    output, '--data-metadata', iris_analysis, '--max-steps', '150'
  )
  # The second write of the run: `completed`, halfway through.
  result = _run(command, fault='job.yaml:2')
  assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
  record = yaml.safe_load((output / 'job.yaml').read_text())
  assert record['status'] == 'running'
  assert record['arguments']['max_steps'] == 150
  assert [p.name for p in output.glob('job.yaml.tmp-*')]  # The half.
  result = _run(command)
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'Already trained to step 150' in result.stderr
  record = yaml.safe_load((output / 'job.yaml').read_text())
  assert record['status'] == 'completed' and record['global_step'] == 150


@pytest.mark.release
def test_a_kill_before_the_analysis_is_complete_is_not_taken_as_complete(
  tmp_path,
):
  output = tmp_path / 'job'
  command = _command(output, '--max-steps', '20')
  result = _run(command, fault='analysis.metadata')
  assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
  analysis = output / 'analysis'
  assert (analysis / 'transform_fn').is_dir()
  assert not (analysis / 'metadata.json').exists()
  result = _run(command)
  assert result.returncode == 0, result.stderr[-2000:]
  assert f'analyzing the training data into {analysis}' in result.stderr
  assert (
    json.loads((analysis / 'metadata.json').read_text())['instances'] == 120
  )


@pytest.mark.release
def test_a_reanalysis_killed_midway_leaves_no_complete_looking_output(tmp_path):
  from tensorfx import data

  analysis = tmp_path / 'analysis'
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'analyze',
    '--data-train',
    'data/train.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    '--output',
    str(analysis),
  ]
  assert _run(command).returncode == 0
  assert (analysis / 'metadata.json').exists()
  # --force: the same data would reuse the analysis.
  result = _run(command + ['--force'], fault='analysis.metadata')
  assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
  # The old metadata.json went first: the new transform graph beside it is
  # not taken for a complete analysis.
  dataset = data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    metadata=str(analysis),
    features=os.path.join(IRIS, 'features.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
  )
  assert not dataset.analyzed


@pytest.mark.release
@pytest.mark.cluster
def test_kills_in_the_evaluator_writes_are_survived(tmp_path, iris_analysis):
  """The evaluator killed while writing its files carries on.

  Killed while writing evaluated.json, best.json and best_model/ (once
  each); the launcher restarts it and it carries on.
  """
  output = tmp_path / 'job'
  once = tmp_path / 'faults'
  once.mkdir()
  command = _command(
    output,
    '--data-metadata',
    iris_analysis,
    '--max-steps',
    '400',
    '--cluster',
    'evaluator=1',
    '--restart',
    '3',
    '--keep-best-checkpoints',
    '2',
    '--log-interval-steps',
    '100',
  )
  # Each point kills one evaluator process (then the restarted one goes on
  # to the next point): best.json and best_model/ as the first checkpoint
  # is kept, evaluated.json as the second is recorded.
  result = _run(
    command,
    fault='best.json,export.best_model.written,evaluator.state:2',
    once=once,
    timeout=400,
  )
  assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
  # One marker per item: the point and its count.
  assert sorted(p.name for p in once.iterdir()) == [
    'best.json:1',
    'evaluator.state:2',
    'export.best_model.written:1',
  ]
  assert result.stdout.count('restarted evaluator-0') == 3, result.stdout
  evaluated = json.loads(
    (output / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  steps = evaluated['evaluated']
  assert steps == sorted(set(steps)) and steps[-1] == 400
  best = json.loads(
    (output / 'checkpoints' / 'best' / 'best.json').read_text()
  )['best']
  assert len(best) == 2
  assert all(os.path.exists(e['path'] + '.index') for e in best)
  assert not (output / 'best_model.partial').exists()
  model = prediction.Model.load(str(output / 'best_model'))
  assert len(model.predict(IRIS_INSTANCES)) == 3
