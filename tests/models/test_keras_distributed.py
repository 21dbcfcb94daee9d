"""A model written for Keras fit trains unchanged on every strategy.

The functional iris model of keras_iris.py, through KerasModelBuilder,
with mirrored replicas (two logical CPUs), on two multi-worker mirrored
workers (`tensorfx train --cluster workers=2`) and on a parameter-server
cluster (a chief, two workers and a parameter server on 127.0.0.1); each
exports a model that serves raw instances. Each runs in a child process:
logical devices and cluster connections are set per process.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import yaml

from conftest import IRIS
from conftest import ROOT
from conftest import iris_args
from mirrored_script import PREAMBLE
from ps_cluster_script import in_process_cluster

HERE = os.path.dirname(os.path.abspath(__file__))
INSTANCES = ['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']
LABELS = ['virginica', 'setosa', 'versicolor']

# Trains the unchanged model; prints the strategy and what was learnt.
_TRAIN = textwrap.dedent("""
    import yaml
    import keras_iris

    def train(config, argv, analysis):
      args, output = training.ModelArguments.parse(argv, parse_job=True)
      dataset = data.CsvDataSet(
          args.data_schema, train=args.data_train, eval=args.data_eval,
          features=args.data_features, metadata=analysis)
      builder = keras_iris.FunctionalIris(args, dataset)
      model = training.ModelTrainer(config).train(builder, output)
      with open(os.path.join(output, 'job.yaml')) as f:
        metrics = yaml.safe_load(f)['metrics']
      print(json.dumps({
          'strategy': type(builder.strategy).__name__,
          'replicas': builder.strategy.num_replicas_in_sync,
          'metrics': metrics,
          'labels': [p['label'] for p in model.predict(INSTANCES)],
          'steps': int(builder.global_step.numpy()),
      }))
""").replace('INSTANCES', repr(INSTANCES))

_MIRRORED = (
  PREAMBLE
  + _TRAIN
  + textwrap.dedent("""
    train(Mirrored.local(), json.loads(sys.argv[3]), analysis)
""")
)

_PARAMETER_SERVERS = (
  textwrap.dedent("""
    import json, os, socket, sys
    import tensorflow as tf
    from tensorfx import data, training

    num_ps = 1
""")
  + in_process_cluster(2)
  + _TRAIN
  + textwrap.dedent("""
    argv, analysis = json.loads(sys.argv[1])
    train(chief, argv, analysis)
""")
)


def _run(argv):
  env = dict(
    os.environ,
    PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get('PYTHONPATH', '')]),
    GRPC_FAIL_FAST='use_caller',
  )
  result = subprocess.run(
    [sys.executable, *argv],
    capture_output=True,
    text=True,
    timeout=600,
    env=env,
    check=False,
    cwd=ROOT,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.cluster
def test_a_keras_model_trains_unchanged_on_mirrored_replicas(
  tmp_path, iris_analysis
):
  script = tmp_path / 'mirrored.py'
  script.write_text(_MIRRORED)
  argv = iris_args(
    tmp_path / 'out', '--max-steps', '200', '--batch-size', '32', '--seed', '1'
  )
  found = _run([str(script), IRIS, iris_analysis, json.dumps(argv)])
  assert (found['strategy'], found['replicas']) == ('MirroredStrategy', 2)
  assert found['steps'] == 200
  assert found['metrics']['accuracy'] >= 0.9
  assert found['labels'] == LABELS


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.cluster
def test_a_keras_model_trains_unchanged_on_parameter_servers(
  tmp_path, iris_analysis
):
  argv = iris_args(
    tmp_path / 'out',
    '--max-steps',
    '300',
    '--batch-size',
    '32',
    '--seed',
    '1',
    '--steps-per-closure',
    '10',
  )
  found = _run(['-c', _PARAMETER_SERVERS, json.dumps([argv, iris_analysis])])
  assert found['strategy'] == 'ParameterServerStrategyV2'
  # Workers step asynchronously: at least the steps asked for.
  assert found['steps'] >= 300
  assert found['metrics']['accuracy'] >= 0.85
  assert found['labels'] == LABELS


# A trainer module, as `tensorfx train --module` runs it in every task.
_TRAINER_MODULE = textwrap.dedent("""
    import tensorfx as tfx
    import keras_iris

    args, job = tfx.training.ModelArguments.parse(parse_job=True)
    dataset = tfx.data.CsvDataSet(
        args.data_schema, train=args.data_train, eval=args.data_eval,
        metadata=args.data_metadata, features=args.data_features)
    model = tfx.training.ModelTrainer().train(
        keras_iris.FunctionalIris(args, dataset), job)
    if model is not None:
      print('labels', [p['label'] for p in model.predict(INSTANCES)])
""").replace('INSTANCES', repr(INSTANCES))


@pytest.mark.slow
@pytest.mark.cluster
def test_a_keras_model_trains_unchanged_on_multi_worker_mirrored(
  tmp_path, iris_analysis
):
  trainer = tmp_path / 'keras_trainer.py'
  trainer.write_text(_TRAINER_MODULE)
  output = tmp_path / 'out'
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    str(trainer),
    '--cluster',
    'workers=2',
    *iris_args(
      output,
      '--data-metadata',
      iris_analysis,
      '--max-steps',
      '300',
      '--batch-size',
      '32',
      '--seed',
      '1',
    ),
  ]
  env = dict(
    os.environ,
    TF_CPP_MIN_LOG_LEVEL='3',
    PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get('PYTHONPATH', '')]),
  )
  # Its own session: whatever happens, the launcher and its tasks are
  # killed together at the end.
  process = subprocess.Popen(
    command,
    env=env,
    cwd=ROOT,
    text=True,
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    start_new_session=True,
  )
  try:
    text, _ = process.communicate(timeout=600)
  finally:
    try:
      os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
    process.wait(timeout=30)
  assert process.returncode == 0, text[-4000:]
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['global_step'] == 300
  assert job['metrics']['accuracy'] >= 0.85, job['metrics']
  # The chief predicts raw instances with the exported model.
  assert str(LABELS) in text, text[-4000:]
