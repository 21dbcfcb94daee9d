"""Gradient accumulation under MirroredStrategy on 2 logical CPU devices.

Two replicas each take half of every global batch of 8; 4 accumulated
minibatches must update the model exactly as one batch of 32 does on one
device, and as one batch of 32 split over the two replicas: the loss is
scaled once (by 1/replicas per replica, the optimizer sums the replicas)
and the accumulated sum once (by 1/steps), never twice.

Logical devices must be configured before TensorFlow initializes its
runtime, so the runs happen in a fresh process.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import IRIS
from conftest import ROOT
from mirrored_script import PREAMBLE

pytestmark = pytest.mark.slow

_SCRIPT = PREAMBLE + textwrap.dedent("""


    def run(config, steps, *flags):
      dataset = data.CsvDataSet(
          os.path.join(iris, 'schema.yaml'), metadata=analysis,
          features=os.path.join(iris, 'features.yaml'),
          train=os.path.join(iris, 'data', 'train.csv'))
      args = nn.FeedForwardClassificationArguments.parse([
          '--no-shuffle', '--seed', '7', '--hidden-layers', '4',
          '--optimizer', 'sgd', '--learning-rate', '0.5', *flags])
      builder = nn.FeedForwardClassification(args, dataset)
      interface, _, _ = builder.build_graph_interfaces(config)
      replicas = builder.strategy.num_replicas_in_sync
      initial = {v.name: v.numpy().tolist()
                 for v in builder.trainable_variables}
      interface.loop(iter(interface.dataset), tf.constant(steps, tf.int64))
      final = {v.name: v.numpy().tolist()
               for v in builder.trainable_variables}
      return {'replicas': replicas, 'initial': initial, 'final': final,
              'step': int(builder.global_step.numpy()),
              'updates': int(builder.optimizer.iterations.numpy())}


    print(json.dumps({
        'accumulated': run(Mirrored.local(), 4, '--batch-size', '8',
                           '--accumulation-steps', '4'),
        'mirrored_large': run(Mirrored.local(), 1, '--batch-size', '32'),
        'single_large': run(training.Configuration.local(), 1,
                            '--batch-size', '32'),
    }))
""")


def test_accumulation_over_two_replicas_equals_one_large_batch(
  tmp_path, iris_analysis
):
  script = tmp_path / 'mirrored.py'
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
  runs = json.loads(result.stdout.strip().splitlines()[-1])
  accumulated = runs['accumulated']
  assert accumulated['replicas'] == 2
  assert runs['mirrored_large']['replicas'] == 2
  assert runs['single_large']['replicas'] == 1
  # Minibatches counted, one update made.
  assert (accumulated['step'], accumulated['updates']) == (4, 1)
  changed = False
  for name, initial in accumulated['initial'].items():
    # The seed gives every run the same start.
    for other in ('mirrored_large', 'single_large'):
      np.testing.assert_array_equal(initial, runs[other]['initial'][name])
    final = np.array(accumulated['final'][name])
    for other in ('mirrored_large', 'single_large'):
      np.testing.assert_allclose(
        final,
        runs[other]['final'][name],
        rtol=1e-5,
        atol=1e-6,
        err_msg=f'{name} vs {other}',
      )
    changed |= not np.allclose(final, initial)
  assert changed
