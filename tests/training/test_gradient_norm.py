"""The gradient norm the training step reports, on one device and mirrored.

The step keeps the global norm of the gradient it applies in a variable
read at log intervals. Under MirroredStrategy (2 logical CPU devices, each
replica half of every batch) it must be the norm of the global batch's
gradient, the one a single device computes for the same batch, not a
replica's. The model summary names each replica's device.

Logical devices must be configured before TensorFlow initializes its
runtime, so the runs happen in a fresh process.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import IRIS
from conftest import ROOT
from mirrored_script import PREAMBLE

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_gradient_norm')]

_SCRIPT = PREAMBLE + textwrap.dedent("""
    from tensorfx.training._builderbase import engine_of
    from tensorfx.training._callbacks import model_summary


    def run(config, *flags):
      dataset = data.CsvDataSet(
          os.path.join(iris, 'schema.yaml'), metadata=analysis,
          features=os.path.join(iris, 'features.yaml'),
          train=os.path.join(iris, 'data', 'train.csv'))
      args = nn.FeedForwardClassificationArguments.parse([
          '--no-shuffle', '--seed', '7', '--hidden-layers', '4',
          '--batch-size', '32', *flags])
      builder = nn.FeedForwardClassification(args, dataset)
      interface, _, _ = builder.build_graph_interfaces(config)
      # The gradient of the first batch, by hand, on the initial weights.
      batch = next(iter(builder.build_input('train', 32, None, False)))
      with tf.GradientTape() as tape:
        loss, _ = builder.build_training(
            builder.global_step, batch,
            builder.build_inference(batch, training=True))
      expected = tf.linalg.global_norm(
          tape.gradient(loss, builder.trainable_variables))
      interface.loop(iter(interface.dataset), tf.constant(1, tf.int64))
      return {'replicas': builder.strategy.num_replicas_in_sync,
              'expected': float(expected),
              'reported': float(interface.gradient_norm.numpy()),
              'summary': model_summary.ModelSummaryCallback.lines(
                  builder, engine_of(builder))}


    print(json.dumps({
        'single': run(training.Configuration.local()),
        'mirrored': run(Mirrored.local()),
        'mirrored_clipped': run(Mirrored.local(), '--clip-norm', '0.01'),
    }))
""")


@pytest.fixture(scope='module')
def runs(tmp_path_factory, iris_analysis):
  script = tmp_path_factory.mktemp('norm') / 'norm.py'
  script.write_text(_SCRIPT)
  env = dict(
    os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', '')
  )
  result = subprocess.run(
    [sys.executable, str(script), IRIS, iris_analysis],
    capture_output=True,
    text=True,
    timeout=600,
    env=env,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-4000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_norm_is_the_global_batch_gradients(runs):
  single, mirrored = runs['single'], runs['mirrored']
  assert (single['replicas'], mirrored['replicas']) == (1, 2)
  assert single['expected'] > 0
  assert single['reported'] == pytest.approx(single['expected'], rel=1e-5)
  # Two replicas, half a batch each: the summed gradient's norm, the same
  # as one device's on the whole batch.
  assert mirrored['reported'] == pytest.approx(single['expected'], rel=1e-5)


def test_the_norm_is_taken_before_clipping(runs):
  assert runs['mirrored_clipped']['reported'] == pytest.approx(
    runs['single']['expected'], rel=1e-5
  )


def test_the_summary_names_each_replicas_device(runs):
  lines = runs['mirrored']['summary']
  assert lines[0] == (
    'Model FeedForwardClassification under MirroredStrategy: 2 variable groups'
  )
  # 4 inputs -> 4 hidden units -> 3 classes, mirrored on both CPUs.
  assert lines[2].split() == [
    'hidden1',
    '20',
    'kernel',
    '4x4,',
    'bias',
    '4',
    'CPU:0,',
    'CPU:1',
  ]
  assert lines[3].split() == [
    'output',
    '15',
    'kernel',
    '4x3,',
    'bias',
    '3',
    'CPU:0,',
    'CPU:1',
  ]
  assert lines[4] == '  total 35 parameters (35 trainable, 0 not)'
