"""Variables sharded across parameter servers (in-process cluster).

The cluster runs in a child process: connecting to a cluster renames the
devices of the whole process, which would break later tests in this one.
"""

import json
import subprocess
import sys

import pytest

from ps_cluster_script import in_process_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

_SCRIPT = (
  r"""
import json, socket
import tensorflow as tf
from tensorfx import training

num_ps = 2
"""
  + in_process_cluster(1)
  + r"""
with strategy.scope():
  table = tf.Variable(tf.random.uniform([4096, 64]), name='table')
  small = tf.Variable(tf.zeros([10]), name='small')
print(json.dumps({
    'strategy': type(strategy).__name__,
    'shards': [[s.device, s.shape[0]] for s in table.variables],
    'small': len(getattr(small, 'variables', [small])),
}))
"""
)


def test_large_variables_are_split_across_parameter_servers():
  result = subprocess.run(
    [sys.executable, '-c', _SCRIPT],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  found = json.loads(result.stdout.strip().splitlines()[-1])
  assert found['strategy'] == 'ParameterServerStrategyV2'
  # 1 MiB is above the 256 KiB minimum shard: one shard per server.
  assert sorted(d for d, _ in found['shards']) == [
    '/job:ps/replica:0/task:0/device:CPU:0',
    '/job:ps/replica:0/task:1/device:CPU:0',
  ]
  assert sum(rows for _, rows in found['shards']) == 4096
  assert found['small'] == 1
