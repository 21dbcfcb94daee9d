"""The gradient norm under parameter servers: returned by each closure.

A variable made under parameter servers lives on a server, so writing the
norm to one every step would be a remote operation on each step's path.
Each closure returns its last step's norm instead and the chief keeps the
last one it fetched: the same value the step applied, while the global
step still advances once a step. The cluster runs in process (servers on
free ports) in a child process: connecting to a cluster renames the
devices of the whole process. The same cluster shows where a worker's
input starts: at its share of the batches the job has read.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import IRIS
from conftest import ROOT
from ps_cluster_script import in_process_cluster

pytestmark = [
  pytest.mark.cluster,
  pytest.mark.slow,
  pytest.mark.xdist_group('test_gradient_norm_ps'),
]

_SCRIPT = (
  r"""
import json, os, socket, sys
import numpy as np
import tensorflow as tf
from tensorfx import data, training
from tensorfx.models import nn
from tensorfx.training._builderbase import engine_of

iris, analysis = sys.argv[1], sys.argv[2]
num_ps = 1
"""
  + in_process_cluster(1)
  + r"""
dataset = data.CsvDataSet(
    os.path.join(iris, 'schema.yaml'), metadata=analysis,
    features=os.path.join(iris, 'features.yaml'),
    train=os.path.join(iris, 'data', 'train.csv'))
args = nn.FeedForwardClassificationArguments.parse([
    '--no-shuffle', '--seed', '7', '--hidden-layers', '4',
    '--batch-size', '32', '--steps-per-closure', '2'])
builder = nn.FeedForwardClassification(args, dataset)
interface, _, _ = builder.build_graph_interfaces(chief)
engine = engine_of(builder)
# The gradient of the first batch, by hand, on the initial weights.
batch = next(iter(builder.build_input('train', 32, None, False)))
with tf.GradientTape() as tape:
  loss, _ = builder.build_training(
      engine.global_step, batch,
      builder.build_inference(batch, training=True))
expected = tf.linalg.global_norm(
    tape.gradient(loss, builder.trainable_variables))
iterator = iter(interface.dataset)
before = float(interface.gradient_norm.numpy())
_, first_steps = interface.loop(iterator, tf.constant(1, tf.int64))
first = float(interface.gradient_norm.numpy())
_, later_steps = interface.loop(iterator, tf.constant(5, tf.int64))
# Each worker's input skips its share of the batches the job has read, as
# its iterator is made: what a resumed job (or a restarted worker) reads.
local = [b for b in builder.build_input('train', 32, None, False).take(4)]
first_of = tf.function(lambda iterator: next(iterator))
def first_batch():
  remote = engine.run.coordinator.schedule(
      first_of, args=(iter(interface.dataset),))
  return remote.fetch()
def same(a, b):
  return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)
interface.input_read.assign(3)
skipped = first_batch()
print(json.dumps({
    'skipped_reads_batch_3': same(skipped, local[3]),
    'not_batch_0': not same(skipped, local[0]),
    'expected': float(expected), 'before': before, 'first': first,
    'first_steps': first_steps, 'later_steps': later_steps,
    'later': float(interface.gradient_norm.numpy()),
    'global_step': int(engine.global_step.numpy()),
    'on_servers': [v.device for v in builder.trainable_variables],
    'variable': type(interface.gradient_norm).__name__,
}))
"""
)


@pytest.fixture(scope='module')
def run(iris_analysis):
  env = dict(
    os.environ,
    PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''),
    GRPC_FAIL_FAST='use_caller',
  )
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT, IRIS, iris_analysis],
    capture_output=True,
    text=True,
    timeout=300,
    env=env,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_first_closure_returns_the_norm_of_the_gradient_it_applied(run):
  assert run['expected'] > 0
  assert run['before'] == 0.0
  assert run['first'] == pytest.approx(run['expected'], rel=1e-5)


def test_later_closures_report_their_own_last_step(run):
  assert run['later'] > 0
  assert run['later'] != pytest.approx(run['first'], rel=1e-6)


def test_the_global_step_still_advances_once_a_step(run):
  assert (run['first_steps'], run['later_steps']) == (1, 5)
  assert run['global_step'] == 6


def test_a_workers_input_starts_at_the_jobs_position(run):
  # `input_read` (restored from a checkpoint's input_position) set to 3:
  # a new iterator of the one worker starts at the fourth batch.
  assert run['skipped_reads_batch_3'] and run['not_batch_0']


def test_no_norm_variable_is_made_on_the_servers(run):
  # The model's own variables are on the server; the norm is not a
  # variable at all.
  assert all('/job:ps/' in device for device in run['on_servers'])
  assert run['variable'] == 'FetchedNorm'
