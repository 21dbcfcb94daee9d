"""One parameter-server step, tensorfx beside hand-written, taken apart.

`distributed.py` runs each side as its own cluster of processes, one
after the other, and its rounds swing by 10% or more on a shared 2-core
machine. This script builds both sides on one cluster instead, in this
process (its parameter servers and two workers are servers on free ports
of 127.0.0.1, this process the chief), with the same strategy, data and
model (`ctr_model.CtrNet`, 26 hashed tensorfx tables or Keras `Embedding`
layers), and then:

1. **rates in turns**: windows of steps, tensorfx and hand-written next to
   each other, the order flipping every round; examples/s and CPU seconds
   per 1k examples (this process's CPU is the whole cluster's) as paired
   ratios;
2. **a profile of each side** (the TensorFlow profiler, over the same
   number of steps): every operation the cluster ran, grouped by the part
   of the step it belongs to (input, lookups, admission counts, backward
   pass, optimizers, gradient norm, ...; a tensor sent between tasks is
   counted under the part that made it, as `sent: PART`), as operations
   per step and summed milliseconds per step. The counts are
   exact; the milliseconds are each operation's wall time, which on a
   saturated machine includes time spent waiting for a core.

  python benchmarks/ps_profile.py                      # 26 hashed tables on 2 servers, batch 256
  python benchmarks/ps_profile.py --tables none --ps 1 --batch 1024 --rows 200000 --shards 4
  python benchmarks/ps_profile.py --tables exact       # the same with exact-key tables
  python benchmarks/ps_profile.py --quick              # 4,000 rows, a few steps

Results go to `benchmarks/results/ps_profile.{json,md}`. No timing is
asserted anywhere; the test suite runs `--quick`.
"""

import argparse
import collections
import glob
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))
# 3: the in-process cluster logs an error for each function it garbage-
# collects on a server that already dropped it (harmless, and many).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import compare
import ctr_cluster
import ctr_data
import ctr_model
import distributed
import tensorflow as tf

SIDES = ('tensorfx', 'hand-written')
# The tables' optimizer on both sides, as in distributed.py.
TABLES_RATE = 0.05
STEPS_PER_CLOSURE = 10
# (part, pattern of the operation's name), the first match wins.
PARTS = (
  # Exact keys: each table's distinct keys, then its indexes read and
  # written under its lock (one `CriticalSection` a table).
  (
    'exact keys (lock, index)',
    r'critical_section_execute|ctr/(Unique|UnsortedSegmentSum|GatherV2'
    r'|GreaterEqual|SelectV2|ReadVariableOp)(_\d+)?$',
  ),
  ('admission counts', r'ones_like|ctr/ResourceScatter(Add|Update)|last_seen'),
  ('keys (cast, hash)', r'ctr/(FloorMod|Cast|mod)'),
  ('gradient norm', r'global_norm|^while/body/_\d+/while/Sqrt'),
  ('tables optimizer', r'SparseAdagrad|/Adagrad/'),
  ('dense optimizer', r'/Adam/'),
  ('backward pass', r'gradient_tape'),
  ('lookups', r'embedding_lookup|_embedding/'),
  ('forward MLP and loss', r'ctr/dense|logistic_loss|ctr/concat|Sigmoid'),
  ('loop', r'^while/'),
)
# Names that are not one operation (function calls, gRPC enqueues).
_CALLS = re.compile(r'^\s|partitioned|^\d+$')


def start_cluster(num_ps: int, workers: int = 2) -> tuple[dict, list]:
  """Servers for the workers and parameter servers, in this process."""
  ports = iter(distributed._free_ports(1 + workers + num_ps))
  cluster = {
    'chief': [f'127.0.0.1:{next(ports)}'],
    'worker': [f'127.0.0.1:{next(ports)}' for _ in range(workers)],
    'ps': [f'127.0.0.1:{next(ports)}' for _ in range(num_ps)],
  }
  spec = tf.train.ClusterSpec(cluster)
  # Each server of this process runs closures and remote operations at
  # once: spare inter-op threads, as a task of its own would have.
  config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
  servers = [
    tf.distribute.Server(
      spec, job_name=job, task_index=i, protocol='grpc', config=config
    )
    for job in ('worker', 'ps')
    for i in range(len(cluster[job]))
  ]
  return cluster, servers


def tensorfx_side(cluster, files, analysis, args, workdir):
  """(the strategy, `run(steps)`): tensorfx's own parameter-server loop."""
  from tensorfx import embeddings
  from tensorfx import training

  class Arguments(training.ModelArguments, embeddings.EmbeddingArguments):
    """The model's flags and the tables' optimizer."""

  flags = [
    '--output',
    workdir,
    '--batch-size',
    str(args.batch),
    '--no-shuffle',
    '--cache',
    'none',
    '--steps-per-closure',
    str(STEPS_PER_CLOSURE),
  ]
  if args.tables != 'none':
    flags += [
      '--embedding-optimizer',
      'adagrad',
      '--embedding-learning-rate',
      str(TABLES_RATE),
    ]
  chief = training.Configuration(training.TaskSpec('chief', 0), cluster)
  settings = Arguments.parse(flags)
  strategy = chief.create_device_setter(settings)
  builder = ctr_model.tensorfx_builder_type(
    None if args.tables == 'none' else args.tables
  )(settings, ctr_model.tensorfx_dataset(files, analysis))
  interface, _, _ = builder.build_graph_interfaces(chief)
  iterator = iter(interface.dataset)

  def run(steps: int) -> None:
    interface.loop(iterator, tf.constant(steps, tf.int64))

  return strategy, run


def hand_written_side(strategy, files, args):
  """`run(steps)`: `ctr_cluster.py`'s coordinator loop on the same strategy."""
  coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
  with open(files['stats']) as f:
    stats = json.load(f)
  step = ctr_cluster._model_and_step(
    strategy, None if args.tables == 'none' else TABLES_RATE
  )
  iterator = iter(
    coordinator.create_per_worker_dataset(
      lambda: ctr_model.tuned_pipeline(files['tfrecord'], args.batch, stats)
    )
  )
  return ctr_cluster.coordinator_loop(
    strategy, coordinator, step, iterator, STEPS_PER_CLOSURE
  )


def rates_in_turns(runs, args):
  """Examples/s and CPU ms per example of each side, round by round."""
  rates: dict[str, list[float]] = {side: [] for side in SIDES}
  cpu: dict[str, list[float]] = {side: [] for side in SIDES}
  for round_ in range(args.rounds):
    for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:
      wall, used = time.perf_counter(), time.process_time()
      runs[side](args.steps)
      examples = args.steps * args.batch
      rates[side].append(examples / (time.perf_counter() - wall))
      cpu[side].append(1000 * (time.process_time() - used) / examples)
  return rates, cpu


def host_events(space_path):
  """(full name, picoseconds) of every host CPU event of a profile file."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2

  space = xplane_pb2.XSpace()
  with open(space_path, 'rb') as f:
    space.ParseFromString(f.read())
  for plane in space.planes:
    if plane.name != '/host:CPU':
      continue
    names = plane.event_metadata
    for line in plane.lines:
      for event in line.events:
        yield names[event.metadata_id].name, event.duration_ps


def _operations(space_path):
  """(name, type, milliseconds) of every operation event of a profile."""
  for full, duration in host_events(space_path):
    if '::' in full or ':' not in full:
      continue
    name, kind = full.rsplit(':', 1)
    if kind == 'Enqueue' or _CALLS.search(name) or _CALLS.search(kind):
      continue
    yield name, kind, duration / 1e9


def part_of(name, kind):
  """The part of the step an operation belongs to."""
  if kind in ('_Send', '_Recv', '_HostSend', '_HostRecv'):
    # Named after the operation whose output is sent.
    return 'sent: ' + part_of(name.rsplit('/', 1)[0], '')
  if not name.startswith('while/'):
    # Outside the training loop: the input pipeline's map functions.
    return 'input'
  for part, pattern in PARTS:
    if re.search(pattern, name):
      return part
  return 'other'


def profile(run, steps, logdir):
  """Operations per step and ms per step of each part of `run`'s steps."""
  shutil.rmtree(logdir, ignore_errors=True)
  tf.profiler.experimental.start(logdir)
  try:
    run(steps)
  finally:
    tf.profiler.experimental.stop()
  counts: collections.Counter[str] = collections.Counter()
  milliseconds: collections.Counter[str] = collections.Counter()
  relu_gradients = 0
  for path in glob.glob(f'{logdir}/**/*.xplane.pb', recursive=True):
    for name, kind, ms in _operations(path):
      part = part_of(name, kind)
      counts[part] += 1
      milliseconds[part] += ms
      relu_gradients += kind == 'ReluGrad'
  # Steps seen: the MLP's three ReLU gradients run once a step each.
  seen = relu_gradients / 3 or steps
  return {
    'steps': seen,
    'operations': {p: n / seen for p, n in counts.items()},
    'ms': {p: ms / seen for p, ms in milliseconds.items()},
  }


def markdown(result):
  config = result['config']
  model = (
    'Keras embeddings'
    if config['tables'] == 'none'
    else f'26 tensorfx tables ({config["tables"]})'
  )
  lines = [
    f'One in-process cluster on 127.0.0.1 ({config["ps"]} parameter '
    f'server(s), 2 workers): {config["rows"]:,} rows in {config["shards"]} '
    f'TFRecord shards, batch {config["batch"]}, '
    f'{model}; '
    f'{result["rounds"]} rounds of {config["steps"]} steps a side; '
    f'{result["cpus"]} CPU cores, TensorFlow {result["tensorflow"]}, '
    f'Python {result["python"]}.',
    '',
    '| | tensorfx | hand-written | ratio (IQR, pairs) |',
    '| --- | ---: | ---: | ---: |',
  ]
  for key, label, fmt in (
    ('rates', 'examples/s', '{:,.0f}'),
    ('cpu', 'CPU ms / example', '{:.3f}'),
  ):
    medians = result['medians'][key]
    ratio = result['ratios'][key]
    lines.append(
      f'| {label} | {fmt.format(medians["tensorfx"])} | '
      f'{fmt.format(medians["hand-written"])} | **{ratio["median"]:.2f}x** '
      f'({ratio["q1"]:.2f}-{ratio["q3"]:.2f}, n={ratio["pairs"]})'
      f'{" *" if ratio["includes_one"] else ""} |'
    )
  lines += [
    '',
    'Ratios are tensorfx / hand-written for examples/s and hand-written / '
    'tensorfx for CPU per example (above 1.0 is tensorfx ahead); * the '
    'interquartile range includes 1.0.',
    '',
    '| part of the step | operations / step tensorfx | hand-written | '
    'difference | ms / step tensorfx | hand-written |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ]
  profiles = result['profile']
  ours, theirs = profiles['tensorfx'], profiles['hand-written']
  parts = sorted(
    set(ours['operations']) | set(theirs['operations']),
    key=lambda p: (
      -(ours['operations'].get(p, 0) - theirs['operations'].get(p, 0))
    ),
  )
  totals = [0.0, 0.0, 0.0, 0.0]
  for part in parts:
    row = [
      ours['operations'].get(part, 0.0),
      theirs['operations'].get(part, 0.0),
      ours['ms'].get(part, 0.0),
      theirs['ms'].get(part, 0.0),
    ]
    totals = [t + v for t, v in zip(totals, row)]
    lines.append(
      f'| {part} | {row[0]:.1f} | {row[1]:.1f} | {row[0] - row[1]:+.1f} | '
      f'{row[2]:.1f} | {row[3]:.1f} |'
    )
  lines.append(
    f'| **all** | {totals[0]:.1f} | {totals[1]:.1f} | '
    f'{totals[0] - totals[1]:+.1f} | {totals[2]:.1f} | {totals[3]:.1f} |'
  )
  lines += [
    '',
    f'Profiled over {config["steps"]} steps a side (steps seen: '
    f'{ours["steps"]:.0f} and {theirs["steps"]:.0f}). Operations of every '
    'task (the servers, the workers, their input pipelines); the '
    'milliseconds are summed wall time of the operations, waiting for a '
    'core included.',
  ]
  return '\n'.join(lines) + '\n'


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick', action='store_true', help='4,000 rows, batch 64, 10 steps'
  )
  parser.add_argument(
    '--tables', choices=['hashed', 'exact', 'none'], default='hashed'
  )
  parser.add_argument('--ps', type=int, default=2, help='parameter servers')
  parser.add_argument('--rows', type=int)
  parser.add_argument('--shards', type=int)
  parser.add_argument('--batch', type=int)
  parser.add_argument('--steps', type=int, help='steps a side per round')
  parser.add_argument('--rounds', type=int)
  parser.add_argument('--data', help='default benchmarks/results/data')
  parser.add_argument('--output', help='default benchmarks/results')
  args = parser.parse_args(argv)
  args.rows = args.rows or (4000 if args.quick else 40000)
  args.shards = args.shards or 2
  args.batch = args.batch or (64 if args.quick else 256)
  args.steps = args.steps or (10 if args.quick else 100)
  args.rounds = args.rounds or (1 if args.quick else 8)
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)

  files = ctr_data.generate(
    args.data or os.path.join(HERE, 'results', 'data'), args.rows, args.shards
  )
  analysis = ctr_model.analyze(
    files, os.path.join(os.path.dirname(files['schema']), 'analysis')
  )
  cluster, servers = start_cluster(args.ps)
  with tempfile.TemporaryDirectory(prefix='tensorfx-ps-profile-') as workdir:
    strategy, tensorfx_run = tensorfx_side(
      cluster, files, analysis, args, os.path.join(workdir, 'job')
    )
    runs = {
      'tensorfx': tensorfx_run,
      'hand-written': hand_written_side(strategy, files, args),
    }
    # Warm-up: tracing, connecting, the pipelines' first buffers.
    for run in runs.values():
      run(2 * STEPS_PER_CLOSURE)
    # Profiled first: once it has timed them, TensorFlow's executor runs
    # the operations it found cheap without tracing them, and the counts
    # would fall short.
    profiles = {
      side: profile(runs[side], args.steps, os.path.join(workdir, side))
      for side in SIDES
    }
    rates, cpu = rates_in_turns(runs, args)
  del servers
  result = {
    'config': {
      'tables': args.tables,
      'ps': args.ps,
      'rows': args.rows,
      'shards': args.shards,
      'batch': args.batch,
      'steps': args.steps,
    },
    'rounds': args.rounds,
    'cpus': os.cpu_count(),
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'time': time.strftime('%Y-%m-%d %H:%M:%S'),
    'rates': rates,
    'cpu': cpu,
    'medians': {
      'rates': {s: compare.quartiles(rates[s])[1] for s in SIDES},
      'cpu': {s: compare.quartiles(cpu[s])[1] for s in SIDES},
    },
    'ratios': {
      'rates': compare.spread(
        [a / b for a, b in zip(rates['tensorfx'], rates['hand-written'])]
      ),
      'cpu': compare.spread(
        [b / a for a, b in zip(cpu['tensorfx'], cpu['hand-written'])]
      ),
    },
    'profile': profiles,
  }
  with open(os.path.join(out, 'ps_profile.json'), 'w') as f:
    json.dump(result, f, indent=1)
  text = markdown(result)
  with open(os.path.join(out, 'ps_profile.md'), 'w') as f:
    f.write(text)
  print(text)
  # The servers of this process do not stop; nothing is left to wait for.
  sys.stdout.flush()
  os._exit(0)


if __name__ == '__main__':
  sys.exit(main())
