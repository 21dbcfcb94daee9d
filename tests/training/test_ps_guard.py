"""Under parameter servers the guards see every step's loss.

A closure of several steps runs on a worker; a runaway loss in the middle
of one (not its last step) must still stop the job. The cluster runs in
process (servers on free ports) in a child process: connecting to a
cluster renames the devices of the whole process.
"""

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from conftest import iris_args

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.release]

_SCRIPT = r'''
import json, socket, sys
import tensorflow as tf
from tensorfx import data, training
from tensorfx import HighLossError
from tensorfx.models import nn

def port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

cluster = {'chief': [f'127.0.0.1:{port()}'], 'worker': [f'127.0.0.1:{port()}'],
           'ps': [f'127.0.0.1:{port()}']}
spec = tf.train.ClusterSpec(cluster)
# Workers need spare inter-op threads on a 2-core machine.
config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
servers = [tf.distribute.Server(spec, job_name=job, task_index=0,
                                protocol='grpc', config=config)
           for job in ('worker', 'ps')]


class Spiking(nn.FeedForwardClassification):
  """The loss of the step that starts at global step 15 is huge."""

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    spike = tf.cast(tf.equal(global_steps, 15), loss.dtype) * 1e6
    return loss + spike, optimizer


argv, analysis = json.loads(sys.argv[1])
args, output = nn.FeedForwardClassificationArguments.parse(argv, parse_job=True)
dataset = data.CsvDataSet(args.data_schema, train=args.data_train,
                          eval=args.data_eval, features=args.data_features,
                          metadata=analysis)
chief = training.Configuration(training.TaskSpec('chief', 0), cluster)
try:
  training.ModelTrainer(chief).train(Spiking(args, dataset), output)
except HighLossError as e:
  print(json.dumps({'error': str(e)}))
else:
  print(json.dumps({'error': None}))
'''


def test_a_runaway_loss_inside_a_closure_stops_the_job(tmp_path, iris_analysis):
  argv = iris_args(
    tmp_path,
    '--max-steps',
    '40',
    '--steps-per-closure',
    '10',
    '--thres-loss',
    '1000',
    '--log-interval-steps',
    '20',
    '--hidden-layers:1',
    '8',
    '--seed',
    '1',
  )
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT, json.dumps([argv, iris_analysis])],
    capture_output=True,
    text=True,
    timeout=240,
    check=False,
    cwd=ROOT,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  error = json.loads(result.stdout.strip().splitlines()[-1])['error']
  # Step 16 is the 6th of its closure's 10: before, only the last loss of
  # each closure reached the guard and the job trained on.
  assert error is not None, result.stderr[-3000:]
  assert 'above --thres-loss 1000' in error
  assert 'The training loss is 1e+06' in error
