"""The model summary and training scalars under parameter servers.

The summary names the parameter server of each shard of a partitioned
variable; the gradient norm of the workers' steps reaches TensorBoard. The
cluster runs in process (servers on free ports) in a child process:
connecting to a cluster renames the devices of the whole process.
"""

import glob
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from conftest import ROOT
from conftest import iris_args

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.release]

_SCRIPT = r"""
import json, logging, socket, sys
import tensorflow as tf
from tensorfx import data, training
from tensorfx.models import nn

def port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

cluster = {'chief': [f'127.0.0.1:{port()}'], 'worker': [f'127.0.0.1:{port()}'],
           'ps': [f'127.0.0.1:{port()}', f'127.0.0.1:{port()}']}
spec = tf.train.ClusterSpec(cluster)
# Workers need spare inter-op threads on a 2-core machine.
config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
servers = [tf.distribute.Server(spec, job_name=job, task_index=i,
                                protocol='grpc', config=config)
           for job in ('worker', 'ps') for i in range(len(cluster[job]))]


class Lines(logging.Handler):
  lines = []

  def emit(self, record):
    self.lines.append(record.getMessage())


logging.getLogger('tensorfx').addHandler(Lines())
argv, analysis = json.loads(sys.argv[1])
args, output = nn.FeedForwardClassificationArguments.parse(argv, parse_job=True)
dataset = data.CsvDataSet(args.data_schema, train=args.data_train,
                          eval=args.data_eval, features=args.data_features,
                          metadata=analysis)
chief = training.Configuration(training.TaskSpec('chief', 0), cluster)
training.ModelTrainer(chief).train(nn.FeedForwardClassification(args, dataset),
                                   output)
print(json.dumps(Lines.lines))
"""


def test_summary_and_scalars_under_parameter_servers(tmp_path, iris_analysis):
  output = tmp_path / 'job'
  # A 4x300 kernel (4,800 bytes) is split over both servers at 1 KiB.
  argv = iris_args(
    output,
    '--hidden-layers',
    '300',
    '--max-steps',
    '20',
    '--log-interval-steps',
    '10',
    '--steps-per-closure',
    '5',
    '--min-shard-bytes',
    '1024',
  )
  env = dict(
    os.environ,
    PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''),
    GRPC_FAIL_FAST='use_caller',
  )
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT, json.dumps([argv, iris_analysis])],
    capture_output=True,
    text=True,
    timeout=300,
    env=env,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  lines = json.loads(result.stdout.strip().splitlines()[-1])
  start = lines.index(
    'Model FeedForwardClassification under '
    'ParameterServerStrategyV2: 2 variable groups'
  )
  hidden, out = lines[start + 2].split(), lines[start + 3].split()
  # The kernel's two shards, one on each server, counted as one variable.
  assert hidden[:6] == ['hidden1', '1,500', 'kernel', '4x300,', 'bias', '300']
  assert ' '.join(hidden[6:]) == 'ps:0/CPU:0, ps:1/CPU:0'
  assert out[:6] == ['output', '903', 'kernel', '300x3,', 'bias', '3']
  assert lines[start + 4] == '  total 2,403 parameters (2,403 trainable, 0 not)'
  norms = []
  for path in glob.glob(str(output / 'summaries' / 'train' / 'events.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == 'gradient_norm':
          norms.append((event.step, float(tf.make_ndarray(value.tensor))))
  assert [step for step, _ in sorted(norms)] == [10, 20]
  assert all(norm > 0 for _, norm in norms)
