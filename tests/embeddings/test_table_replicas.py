"""Exact-key tables under replicas of one process (MirroredStrategy).

Synchronous replicas agree on an exact table's keys one per process
(MultiWorkerMirroredStrategy, see test_table_mirrored.py); several
replicas in one process are refused with a message saying what to run
instead. Logical devices must be configured before TensorFlow initializes
its runtime, so the check runs in a fresh process.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

_SCRIPT = textwrap.dedent("""
    import tensorflow as tf
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from tensorfx import embeddings
    from tensorfx import ConfigurationError
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    with strategy.scope():
      table = embeddings.EmbeddingTable('items', dim=4, capacity=8,
                                        hashing='exact')
      try:
        table.build()
      except ConfigurationError as e:
        print('REFUSED', e)
""")


def test_exact_keys_with_replicas_in_one_process_are_refused(tmp_path):
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
    cwd=tmp_path,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
  )
  assert result.returncode == 0, result.stderr[-3000:]
  message = result.stdout.split('REFUSED', 1)[1]
  assert "'items'" in message and 'MultiWorkerMirroredStrategy' in message
  assert '2 replicas in this process' in message
