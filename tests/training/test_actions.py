"""Actions: ModelTrainer.evaluate and .export, and --action through train()."""

import json

import numpy as np
import pytest
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from test_trainer import _scalars

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_actions')]

_INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']


def _builder(output, dataset, *flags):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', '--seed', '2', *flags),
    parse_job=True,
  )
  return nn.FeedForwardClassification(args, dataset), job


@pytest.fixture(scope='module')
def trained(tmp_path_factory, iris_dataset_factory):
  """A job trained 6 steps with checkpoints at 3 and 6: (output, Model)."""
  output = tmp_path_factory.mktemp('actions') / 'job'
  builder, job = _builder(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '6',
    '--checkpoint-interval-steps',
    '3',
  )
  return output, training.ModelTrainer().train(builder, job)


def test_evaluate_the_latest_checkpoint(trained, iris_dataset_factory):
  output, _ = trained
  builder, job = _builder(output, iris_dataset_factory())
  summary = training.ModelTrainer().evaluate(builder, job)
  assert summary['step'] == 6
  assert summary['checkpoint'] == str(output / 'checkpoints' / 'ckpt-6')
  record = yaml.safe_load((output / 'job.yaml').read_text())
  assert summary['results']['eval'] == pytest.approx(record['metrics'])
  written = json.loads((output / 'evaluations' / 'ckpt-6.json').read_text())
  assert written == summary
  # Nothing trained: the checkpoints are the same.
  assert int(builder.global_step.numpy()) == 6


def test_evaluate_a_given_checkpoint(trained, iris_dataset_factory):
  output, _ = trained
  builder, job = _builder(output, iris_dataset_factory())
  summary = training.ModelTrainer().evaluate(
    builder, job, str(output / 'checkpoints' / 'ckpt-3')
  )
  assert summary['step'] == 3
  during_training = dict(_scalars(output / 'summaries' / 'eval')['loss'])
  assert summary['results']['eval']['loss'] == pytest.approx(during_training[3])


def test_export_a_checkpoint(trained, iris_dataset_factory, tmp_path):
  output, model = trained
  builder, job = _builder(output, iris_dataset_factory())
  latest = training.ModelTrainer().export(
    builder, job, directory=str(tmp_path / 'latest')
  )
  assert (tmp_path / 'latest' / 'assets.extra' / 'schema.yaml').exists()
  for a, b in zip(latest.predict(_INSTANCES), model.predict(_INSTANCES)):
    np.testing.assert_allclose(a['scores'], b['scores'], rtol=1e-6)
  builder, job = _builder(output, iris_dataset_factory())
  earlier = training.ModelTrainer().export(
    builder,
    job,
    str(output / 'checkpoints' / 'ckpt-3'),
    str(tmp_path / 'earlier'),
  )
  assert any(
    not np.allclose(a['scores'], b['scores'])
    for a, b in zip(earlier.predict(_INSTANCES), model.predict(_INSTANCES))
  )


def test_action_flags_drive_train(
  trained, iris_dataset_factory, tmp_path, capsys
):
  output, model = trained
  builder, job = _builder(
    output,
    iris_dataset_factory(),
    '--action',
    'evaluate',
    '--checkpoint',
    str(output / 'checkpoints'),
  )
  with pytest.raises(SystemExit) as exited:
    training.ModelTrainer().train(builder, job)
  assert exited.value.code == 0
  printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert printed['step'] == 6 and 'accuracy' in printed['results']['eval']
  builder, job = _builder(
    output,
    iris_dataset_factory(),
    '--action',
    'export',
    '--export-dir',
    str(tmp_path / 'model'),
  )
  exported = training.ModelTrainer().train(builder, job)
  assert len(exported.predict(_INSTANCES)) == 3
  assert (tmp_path / 'model' / 'saved_model.pb').exists()
  del model


def test_evaluate_is_recorded_as_its_own_run(trained, iris_dataset_factory):
  pytest.importorskip('mlflow')
  from mlflow.tracking import MlflowClient

  output, _ = trained
  uri = f'sqlite:///{output.parent / "actions.db"}'
  builder, job = _builder(
    output,
    iris_dataset_factory(),
    '--experiment',
    'evaluations',
    '--tracking-uri',
    uri,
  )
  summary = training.ModelTrainer().evaluate(builder, job)
  client = MlflowClient(tracking_uri=uri)
  experiment = client.get_experiment_by_name('evaluations')
  (run,) = client.search_runs([experiment.experiment_id])
  assert run.data.tags['tensorfx.action'] == 'evaluate'
  assert run.data.tags['tensorfx.checkpoint'] == summary['checkpoint']
  assert run.info.status == 'FINISHED'
  history = client.get_metric_history(run.info.run_id, 'eval/loss')
  assert [(m.step, m.value) for m in history] == [
    (6, pytest.approx(summary['results']['eval']['loss']))
  ]


def test_evaluate_needs_a_checkpoint(tmp_path, iris_dataset_factory):
  builder, job = _builder(tmp_path, iris_dataset_factory())
  with pytest.raises(
    ConfigurationError, match='--checkpoint must name a checkpoint'
  ):
    training.ModelTrainer().evaluate(builder, job)
