"""Script lines that start an in-process parameter-server cluster.

Connecting to a cluster renames a process's devices, so tests that need
one run a script in a child process: their imports (`socket`,
`tensorflow as tf`, `training` from tensorfx) and `num_ps`, then
`in_process_cluster(workers)`, which defines `cluster` (a chief, the
workers and `num_ps` parameter servers on free ports of 127.0.0.1),
`servers`, `chief` (its `Configuration`) and `strategy`.
"""

_CLUSTER = r"""
def port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

cluster = {'chief': [f'127.0.0.1:{port()}'],
           'worker': [f'127.0.0.1:{port()}' for _ in range(WORKERS)],
           'ps': [f'127.0.0.1:{port()}' for _ in range(num_ps)]}
spec = tf.train.ClusterSpec(cluster)
# Workers need spare inter-op threads on a 2-core machine.
config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
servers = [tf.distribute.Server(spec, job_name=job, task_index=i,
                                protocol='grpc', config=config)
           for job in ('worker', 'ps') for i in range(len(cluster[job]))]
chief = training.Configuration(training.TaskSpec('chief', 0), cluster)
strategy = chief.create_device_setter(training.ModelArguments.default())
"""


def in_process_cluster(workers):
  """The script lines of a cluster with `workers` workers."""
  return _CLUSTER.replace('WORKERS', str(int(workers)))
