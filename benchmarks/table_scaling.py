"""Embedding tables at scale on parameter servers: three sides, one grid.

For each configuration (R rows a table, T tables, P parameter servers) a
child process starts one cluster on 127.0.0.1: P parameter servers, each a
process of its own (`python -c`, a `tf.distribute.Server`), so that each
server's memory is its own process's; two workers, servers in the child;
the child the coordinator (a `ParameterServerStrategy` as tensorfx makes
it, a `ClusterCoordinator`). On that cluster it trains three sides in
turns (A B C, B C A, ... as `compare.py` rotates them):

- `tensorfx`: T `tensorfx.embeddings.EmbeddingTable(hashing='exact')`,
  looked up together (`lookup_tables`), trained by `SparseAdagrad`;
- `hand-exact`: exact keys by hand (`exact_tables.ExactEmbeddings`: the
  rows split by the strategy's partitioner, `tf.lookup` tables beside the
  shards), Keras' Adagrad;
- `hashed`: a Keras `Embedding` a table (a variable split by the
  partitioner, `tf.nn.embedding_lookup`), Keras' Adagrad: no index at all.

Every side's step: a batch of 256, one key a table an example, drawn
uniformly from [0, R) by a seeded stateless generator on the worker (the
same keys for each side, step by step); the loss is the mean square of the
sum of the T looked-up vectors against 1. Reported per side: examples/s
(turns of closures of 10 steps, every side as many, enough for the
fastest side's turn to last 1.5 s; after warm-up), the tensors the workers
send a step (the TensorFlow profiler's `_Send` and `_HostSend` events in
this process, the workers'; a closure's loop sends each once more as it
exits, so they are counted per iteration of the loop), and each server's
peak RSS.

The sides share the servers, so memory is measured side by side: before
each phase of a side (its build and warm-up, its profile, each of its
turns) the servers' peak RSS is reset to their current RSS
(`/proc/PID/clear_refs`), and after it read again. A side's memory on a
server is what the server held before any side was built, plus the most
the side held there at any moment: the RSS it gained in its phases so far
plus the peak of the phase above its start.

  python benchmarks/table_scaling.py          # rows 2^16, 2^19, 2^22; tables 1, 8, 26; ps 1, 2
  python benchmarks/table_scaling.py --quick  # rows 2^10, 2^12; 2 tables; ps 1, 2; a round

Configurations whose tables and Adagrad slots, for the three sides
together, exceed `--memory-gib` are skipped, and so are those that do not
finish in `--timeout` seconds; the report names them. Results go to
`benchmarks/results/table_scaling.{json,md}` and the figure to
`benchmarks/table_scaling.png`. No timing is asserted anywhere; the test
suite runs `--quick`.
"""

import argparse
import contextlib
import glob
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))
# 3: the cluster logs an error for each function it garbage-collects on a
# server that already dropped it (harmless, and many).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import compare
import distributed

SIDES = ('tensorfx', 'hand-exact', 'hashed')
LABELS = {
  'tensorfx': 'tensorfx exact keys',
  'hand-exact': 'exact keys by hand',
  'hashed': 'hashed by hand',
}
DIM = 16
BATCH = 256
STEPS_PER_CLOSURE = 10
WARMUP_CLOSURES = 2
PROFILED_CLOSURES = 2
WORKERS = 2
# Adagrad on every side, as distributed.py's tables sections.
RATE = 0.05
SEED = 20261128
# Bytes a row of a side's table holds at least: its floats and Adagrad's
# accumulator of as many.
ROW_BYTES = DIM * 4 * 2
MIB = 1 << 20
FULL = {'rows': [1 << 16, 1 << 19, 1 << 22], 'tables': [1, 8, 26], 'ps': [1, 2]}
QUICK = {'rows': [1 << 10, 1 << 12], 'tables': [2], 'ps': [1, 2]}
_SENT = ('_Send', '_HostSend')

# A parameter server: serves until its parent (the configuration's child
# process) is gone, so that a child killed at its timeout leaves none.
_SERVER = r"""
import json, os, sys, time
import tensorflow as tf
cluster, index, parent = json.loads(sys.argv[1]), int(sys.argv[2]), os.getppid()
config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name='ps',
                              task_index=index, protocol='grpc', config=config)
print('serving', flush=True)
while os.getppid() == parent:
  time.sleep(1)
"""


def table_bytes(rows: int, tables: int) -> int:
  """The three sides' tables and Adagrad slots, together, in bytes."""
  return len(SIDES) * rows * tables * ROW_BYTES


# The child: one configuration on one cluster.


def _status(pid: int, field: str) -> int:
  """A `/proc/PID/status` field (`VmRSS`, `VmHWM`) in bytes."""
  with open(f'/proc/{pid}/status') as f:
    for line in f:
      if line.startswith(field + ':'):
        return int(line.split()[1]) * 1024
  raise RuntimeError(f'/proc/{pid}/status has no {field}')


class Servers:
  """The parameter-server processes and each side's memory on them."""

  def __init__(self, cluster: dict) -> None:
    self.processes = []
    for i in range(len(cluster['ps'])):
      self.processes.append(
        subprocess.Popen(
          [sys.executable, '-c', _SERVER, json.dumps(cluster), str(i)],
          stdout=subprocess.PIPE,
          env=distributed._env(),
          text=True,
        )
      )
    for process in self.processes:
      if process.stdout.readline().strip() != 'serving':
        raise RuntimeError(
          f'parameter server (pid {process.pid}) exited before serving'
        )
    self.base = self._read('VmRSS')
    self.peak = list(self.base)
    self.held = {side: [0] * len(self.processes) for side in SIDES}
    self.side_peak = {side: [0] * len(self.processes) for side in SIDES}

  def _read(self, field: str) -> list[int]:
    return [_status(p.pid, field) for p in self.processes]

  @contextlib.contextmanager
  def phase(self, side: str):
    """Attributes the servers' growth and peak during the block to `side`."""
    for process in self.processes:
      # 5: the peak RSS (VmHWM) starts again from the current RSS.
      with open(f'/proc/{process.pid}/clear_refs', 'w') as f:
        f.write('5')
    start = self._read('VmRSS')
    yield
    peak, end = self._read('VmHWM'), self._read('VmRSS')
    for p in range(len(self.processes)):
      held = self.held[side]
      self.side_peak[side][p] = max(
        self.side_peak[side][p], held[p] + peak[p] - start[p]
      )
      held[p] += end[p] - start[p]
      self.peak[p] = max(self.peak[p], peak[p])

  def memory(self, side: str) -> dict:
    """MiB per server: the side's peak (from the base) and what it holds."""
    return {
      'peak_rss_mib': [
        (b + s) / MIB for b, s in zip(self.base, self.side_peak[side])
      ],
      'held_mib': [h / MIB for h in self.held[side]],
    }

  def stop(self) -> None:
    distributed._kill([p.pid for p in self.processes])
    for process in self.processes:
      process.wait()
      process.stdout.close()


def _workers(num_ps: int) -> tuple[dict, list]:
  """The cluster's addresses, and its two workers as servers here."""
  import tensorflow as tf

  ports = iter(distributed._free_ports(1 + WORKERS + num_ps))
  cluster = {
    'chief': [f'127.0.0.1:{next(ports)}'],
    'worker': [f'127.0.0.1:{next(ports)}' for _ in range(WORKERS)],
    'ps': [f'127.0.0.1:{next(ports)}' for _ in range(num_ps)],
  }
  # Each worker of this process runs closures and remote operations at
  # once: spare inter-op threads, as a task of its own would have.
  config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
  servers = [
    tf.distribute.Server(
      tf.train.ClusterSpec(cluster),
      job_name='worker',
      task_index=i,
      protocol='grpc',
      config=config,
    )
    for i in range(WORKERS)
  ]
  return cluster, servers


def _loss(vectors):
  import tensorflow as tf

  return tf.reduce_mean(tf.square(tf.add_n(vectors) - 1.0))


def tensorfx_step(strategy, rows: int, tables: int):
  """tensorfx's exact-key tables and their replica step `train(keys)`."""
  import tensorflow as tf

  from tensorfx import embeddings

  with strategy.scope():
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name='step')
    optimizer = embeddings.SparseAdagrad(RATE)
    made = [
      embeddings.EmbeddingTable(
        f'exact{t}',
        dim=DIM,
        capacity=rows,
        hashing='exact',
        step_counter=step,
        optimizer=optimizer,
      )
      for t in range(tables)
    ]
    for table in made:
      table.build()
    shards = [s for table in made for s in table.shards]
    optimizer.build(shards)

  def train(keys):
    with tf.GradientTape() as tape:
      vectors = embeddings.lookup_tables(
        [(table, keys[t]) for t, table in enumerate(made)], training=True
      )
      loss = _loss(vectors)
    optimizer.apply_gradients(zip(tape.gradient(loss, shards), shards))
    step.assign_add(1)

  return train


def hand_exact_step(strategy, rows: int, tables: int):
  """Exact keys by hand (`exact_tables.py`) and their step `train(keys)`."""
  import exact_tables
  import tensorflow as tf
  import tf_keras

  with strategy.scope():
    layer = exact_tables.ExactEmbeddings(
      [rows] * tables, DIM, name='hand_exact'
    )
    layer([tf.zeros([1], tf.int64)] * tables)
    variables = layer.trainable_variables
    optimizer = tf_keras.optimizers.Adagrad(RATE)
    optimizer.build(variables)

  def train(keys):
    with tf.GradientTape() as tape:
      vectors = layer([keys[t] for t in range(tables)], training=True)
      loss = _loss(vectors)
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

  return train


def hashed_step(strategy, rows: int, tables: int):
  """Keras `Embedding`s (split variables) and their step `train(keys)`."""
  import tensorflow as tf
  import tf_keras

  with strategy.scope():
    layers = [
      tf_keras.layers.Embedding(rows, DIM, name=f'hashed{t}')
      for t in range(tables)
    ]
    for layer in layers:
      layer(tf.zeros([1], tf.int64))
    variables = [v for layer in layers for v in layer.trainable_variables]
    optimizer = tf_keras.optimizers.Adagrad(RATE)
    optimizer.build(variables)

  def train(keys):
    with tf.GradientTape() as tape:
      vectors = [layer(keys[t]) for t, layer in enumerate(layers)]
      loss = _loss(vectors)
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

  return train


STEPS = {
  'tensorfx': tensorfx_step,
  'hand-exact': hand_exact_step,
  'hashed': hashed_step,
}


def runner(strategy, coordinator, train, rows: int, tables: int):
  """`run(closures)`: that many closures of 10 steps, scheduled and joined.

  Step n of every side looks up the same keys: `[tables, 256]` drawn
  uniformly from [0, rows) with the seed `(SEED, n)`.
  """
  import tensorflow as tf

  @tf.function
  def closure(first):
    for i in tf.range(STEPS_PER_CLOSURE, dtype=tf.int64):
      keys = tf.random.stateless_uniform(
        [tables, BATCH],
        seed=tf.stack([tf.constant(SEED, tf.int64), first + i]),
        minval=0,
        maxval=rows,
        dtype=tf.int64,
      )
      strategy.run(train, (keys,))

  done = [0]

  def run(closures: int) -> None:
    for _ in range(closures):
      coordinator.schedule(closure, args=(tf.constant(done[0], tf.int64),))
      done[0] += STEPS_PER_CLOSURE
    coordinator.join()

  return run


def tensors_sent(logdir: str) -> int:
  """Tensors this process's tasks (the workers) sent, in a profile."""
  import ps_profile

  return sum(
    name.rsplit(':', 1)[-1] in _SENT
    for path in glob.glob(f'{logdir}/**/*.xplane.pb', recursive=True)
    for name, _ in ps_profile.host_events(path)
  )


def turn_closures(runs, servers, args) -> int:
  """Closures a turn: the fastest side's turn lasts `--turn-seconds`.

  Every side runs as many (so each meets the same keys, step by step), at
  least `--closures`, a multiple of the workers: one side's turn of a
  tenth of a second would time the coordinator's join, not the steps.
  """
  fastest = 0.0
  for side in SIDES:
    with servers.phase(side):
      began = time.perf_counter()
      runs[side](args.closures)
      fastest = max(fastest, args.closures / (time.perf_counter() - began))
  wanted = math.ceil(args.turn_seconds * fastest / WORKERS) * WORKERS
  return max(args.closures, wanted)


def configuration(args) -> dict:
  """Runs the three sides of one configuration; their figures."""
  import tensorflow as tf

  from tensorfx import training

  rows, tables, num_ps = args.rows, args.tables, args.ps
  cluster, workers = _workers(num_ps)
  servers = Servers(cluster)
  try:
    chief = training.Configuration(training.TaskSpec('chief', 0), cluster)
    strategy = chief.create_device_setter(training.ModelArguments.default())
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    runs, seconds = {}, {}
    # Built in the first round's order; warmed up (traced, connected, the
    # first keys admitted) before the next side is built.
    for side in SIDES:
      began = time.perf_counter()
      with servers.phase(side):
        train = STEPS[side](strategy, rows, tables)
        runs[side] = runner(strategy, coordinator, train, rows, tables)
        runs[side](WARMUP_CLOSURES)
      seconds[side] = time.perf_counter() - began
    # Profiled before the timed turns, as ps_profile.py does: once timed,
    # the executor stops tracing the operations it found cheap.
    sent = {}
    with tempfile.TemporaryDirectory(prefix='table-scaling-') as logdir:
      for side in SIDES:
        with servers.phase(side):
          tf.profiler.experimental.start(os.path.join(logdir, side))
          try:
            runs[side](PROFILED_CLOSURES)
          finally:
            tf.profiler.experimental.stop()
        # A loop's iterations: its steps and its exit, where each tensor
        # it sends across tasks is sent once more (dead, to end the
        # loop there too).
        iterations = PROFILED_CLOSURES * (STEPS_PER_CLOSURE + 1)
        sent[side] = tensors_sent(os.path.join(logdir, side)) / iterations
    closures = turn_closures(runs, servers, args)
    rates = {side: [] for side in SIDES}
    examples = closures * STEPS_PER_CLOSURE * BATCH
    for round_ in range(args.rounds):
      for side in compare._rotated(list(SIDES), round_):
        with servers.phase(side):
          began = time.perf_counter()
          runs[side](closures)
          rates[side].append(examples / (time.perf_counter() - began))
    result = {
      'closures_per_turn': closures,
      'sides': {
        side: {
          'rates': rates[side],
          'examples_per_s': compare.quartiles(rates[side])[1],
          'tensors_sent_per_step': sent[side],
          'build_and_warmup_s': seconds[side],
          **servers.memory(side),
        }
        for side in SIDES
      },
      'ratios': {
        reference: compare.spread(
          [a / b for a, b in zip(rates['tensorfx'], rates[reference])]
        )
        for reference in SIDES[1:]
      },
      'servers_base_rss_mib': [b / MIB for b in servers.base],
      'servers_peak_rss_mib': [p / MIB for p in servers.peak],
      'coordinator_and_workers_peak_rss_mib': _status(os.getpid(), 'VmHWM')
      / MIB,
    }
  finally:
    servers.stop()
  del workers
  return result


# The parent: the grid, the report and the figure.


def _run_child(rows, tables, num_ps, args, workdir) -> dict:
  """One configuration in a child process of its own (a fresh cluster)."""
  output = os.path.join(workdir, f'{rows}-{tables}-{num_ps}.json')
  log = os.path.join(workdir, f'{rows}-{tables}-{num_ps}.log')
  command = [
    sys.executable,
    os.path.abspath(__file__),
    '--child',
    output,
    '--rows',
    str(rows),
    '--tables',
    str(tables),
    '--ps',
    str(num_ps),
    '--rounds',
    str(args.rounds),
    '--closures',
    str(args.closures),
    '--turn-seconds',
    str(args.turn_seconds),
  ]
  began = time.perf_counter()
  with open(log, 'w') as stderr:
    # A session of its own: a child killed at its timeout takes its
    # parameter servers with it.
    child = subprocess.Popen(
      command,
      stdout=stderr,
      stderr=subprocess.STDOUT,
      env=distributed._env(),
      start_new_session=True,
    )
    try:
      code = child.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
      os.killpg(child.pid, signal.SIGKILL)
      child.wait()
      return {'status': f'did not finish in {args.timeout} s'}
  seconds = time.perf_counter() - began
  if code != 0 or not os.path.exists(output):
    # Reported, and the grid goes on: one configuration out of memory
    # leaves the others' figures.
    tail = distributed._tail(log, 40)
    print(tail, file=sys.stderr)
    last = (tail.strip().splitlines() or ['no output'])[-1]
    return {'status': f'failed (exit {code}): {last[:200]}'}
  with open(output) as f:
    result = json.load(f)
  result.update(status='ran', seconds=seconds)
  return result


def _power(rows: int) -> str:
  exponent = rows.bit_length() - 1
  return f'2^{exponent}' if rows == 1 << exponent else f'{rows:,}'


def _mib(value: float) -> str:
  return f'{value:,.0f}' if value >= 10 else f'{value:.1f}'


def _per_server(values) -> str:
  return ' / '.join(_mib(v) for v in values)


def _ratio(r) -> str:
  return (
    f'**{r["median"]:.2f}x** ({r["q1"]:.2f}-{r["q3"]:.2f}, n={r["pairs"]})'
    f'{" *" if r["includes_one"] else ""}'
  )


def markdown(result: dict) -> str:
  config = result['config']
  ran = [c for c in result['configurations'] if c['status'] == 'ran']
  lines = [
    f'Batch {BATCH}, {DIM} floats a row, one key a table an example drawn '
    f'uniformly from [0, rows); {WORKERS} workers; closures of '
    f"{STEPS_PER_CLOSURE} steps. A side's turn: at least "
    f"{config['closures']} closures, as many as make the fastest side's "
    f'last {config["turn_seconds"]:g} s ("steps a turn"); '
    f'{config["rounds"]} turns a side, after {WARMUP_CLOSURES} warm-up '
    'closures and one turn. '
    f'{result["cpus"]} CPU cores, TensorFlow {result["tensorflow"]}, Python '
    f'{result["python"]}; load average {result["load"]["start"]} at the '
    f'start, {result["load"]["end"]} at the end; {result["minutes"]:.1f} '
    'minutes.',
    '',
    '| rows | tables | ps | steps a turn | examples/s tensorfx | '
    'exact by hand | hashed | tensorfx / exact by hand (IQR, pairs) | '
    'tensorfx / hashed | build and warm-up s |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ]
  for c in ran:
    s = c['sides']
    lines.append(
      f'| {_power(c["rows"])} | {c["tables"]} | {c["ps"]} | '
      f'{c["closures_per_turn"] * STEPS_PER_CLOSURE:,} | '
      + ' | '.join(f'{s[side]["examples_per_s"]:,.0f}' for side in SIDES)
      + f' | {_ratio(c["ratios"]["hand-exact"])} | '
      f'{_ratio(c["ratios"]["hashed"])} | '
      + ' / '.join(f'{s[side]["build_and_warmup_s"]:.0f}' for side in SIDES)
      + ' |'
    )
  lines += [
    '',
    "Ratios are tensorfx / the reference, the median of the rounds' "
    'paired ratios; * the interquartile range includes 1.0. Build and '
    "warm-up: each side's variables made, then its first "
    f"{WARMUP_CLOSURES} closures (tracing, each worker's first run of "
    'the function, the first keys), tensorfx / by hand / hashed.',
    '',
    '| rows | tables | ps | tensors sent / step tensorfx | exact by hand | '
    'hashed | peak RSS a server (MiB) tensorfx | exact by hand | hashed | '
    'servers alone | tables and slots a server |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
    '| ---: |',
  ]
  for c in ran:
    s = c['sides']
    lines.append(
      f'| {_power(c["rows"])} | {c["tables"]} | {c["ps"]} | '
      + ' | '.join(f'{s[side]["tensors_sent_per_step"]:,.1f}' for side in SIDES)
      + ' | '
      + ' | '.join(_per_server(s[side]['peak_rss_mib']) for side in SIDES)
      + f' | {_per_server(c["servers_base_rss_mib"])} | '
      f'{_mib(c["rows"] * c["tables"] * ROW_BYTES / c["ps"] / MIB)} |'
    )
  lines += [
    '',
    'Tensors sent: `_Send` and `_HostSend` events of the two workers a '
    'step (the profiler, over '
    f"{PROFILED_CLOSURES * STEPS_PER_CLOSURE} steps and their loops' "
    'exits). Peak RSS: each '
    "server (ps 0 / ps 1) with this side alone, estimated from the side's "
    'own growth and peaks on the shared servers; "servers alone" is a '
    'server before any table was built; "tables and slots" the floats of '
    "one side's rows and Adagrad accumulators a server holds.",
  ]
  skipped = [c for c in result['configurations'] if c['status'] != 'ran']
  if skipped:
    lines += ['', 'Not run:', '']
    lines += [
      f'- {_power(c["rows"])} rows, {c["tables"]} tables, ps={c["ps"]}: '
      f'{c["status"]}.'
      for c in skipped
    ]
  return '\n'.join(lines) + '\n'


def figure(result: dict, path: str) -> None:
  """Examples/s against rows, a line a side, a panel a (tables, ps)."""
  import matplotlib

  matplotlib.use('Agg')
  from matplotlib import pyplot
  from matplotlib import ticker

  config = result['config']
  tables, servers = config['tables'], config['ps']
  plot, panels = pyplot.subplots(
    len(tables),
    len(servers),
    figsize=(4.2 * len(servers), 2.9 * len(tables)),
    squeeze=False,
    sharex=True,
    # A row of panels: the same tables on 1 and on 2 servers.
    sharey='row',
  )
  ran = [c for c in result['configurations'] if c['status'] == 'ran']
  for i, t in enumerate(tables):
    for j, p in enumerate(servers):
      panel = panels[i][j]
      cell = [c for c in ran if c['tables'] == t and c['ps'] == p]
      for side, style in zip(SIDES, ('o-', 's--', '^:')):
        panel.plot(
          [c['rows'] for c in cell],
          [c['sides'][side]['examples_per_s'] for c in cell],
          style,
          label=LABELS[side],
        )
      panel.set_xscale('log', base=2)
      panel.yaxis.set_major_formatter(ticker.StrMethodFormatter('{x:,.0f}'))
      panel.set_xticks(config['rows'])
      panel.set(
        title=f'{t} table{"s" if t > 1 else ""}, ps={p}', ylim=(0, None)
      )
      # Where a configuration was skipped or did not finish.
      for c in result['configurations']:
        if c['status'] != 'ran' and (c['tables'], c['ps']) == (t, p):
          panel.text(
            c['rows'],
            0.05,
            'not run',
            ha='right',
            transform=panel.get_xaxis_transform(),
          )
      if j == 0:
        panel.set_ylabel('examples/s')
      if i == len(tables) - 1:
        panel.set_xlabel('rows a table')
  panels[0][0].legend(loc='best', fontsize='small')
  plot.tight_layout()
  plot.savefig(path, dpi=100)
  pyplot.close(plot)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick',
    action='store_true',
    help='2^10 and 2^12 rows, 2 tables, 1 and 2 servers, 1 round',
  )
  parser.add_argument('--rows', type=int, nargs='+', help='rows a table')
  parser.add_argument('--tables', type=int, nargs='+', help='tables')
  parser.add_argument('--ps', type=int, nargs='+', help='parameter servers')
  parser.add_argument('--rounds', type=int, help='default 3 (quick: 1)')
  parser.add_argument(
    '--closures',
    type=int,
    help='at least this many closures of 10 steps a turn (default 4; quick: 2)',
  )
  parser.add_argument(
    '--turn-seconds',
    type=float,
    help="the fastest side's turn, more closures if need be (default 1.5; "
    'quick: 0.2)',
  )
  parser.add_argument(
    '--memory-gib',
    type=float,
    default=6.0,
    help="skip configurations whose three sides' tables and Adagrad "
    'slots exceed this (default 6)',
  )
  parser.add_argument(
    '--timeout',
    type=int,
    default=420,
    help='seconds a configuration may take (default 420)',
  )
  parser.add_argument('--output', help='default benchmarks/results')
  parser.add_argument('--figure', help='default benchmarks/table_scaling.png')
  parser.add_argument('--child', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  grid = QUICK if args.quick else FULL
  args.rounds = args.rounds or (1 if args.quick else 3)
  args.closures = args.closures or (2 if args.quick else 4)
  if args.turn_seconds is None:
    args.turn_seconds = 0.2 if args.quick else 1.5
  if args.turn_seconds < 0:
    parser.error('--turn-seconds must be at least 0')
  for name in ('rounds', 'closures', 'timeout'):
    if getattr(args, name) < 1:
      parser.error(f'--{name} must be at least 1')
  if args.child:
    # One value each, given by the parent.
    args.rows, args.tables, args.ps = args.rows[0], args.tables[0], args.ps[0]
    result = configuration(args)
    with open(args.child, 'w') as f:
      json.dump(result, f)
    # The worker servers of this process do not stop; nothing is left to
    # wait for.
    sys.stdout.flush()
    os._exit(0)
  for name in ('rows', 'tables', 'ps'):
    values = getattr(args, name) or grid[name]
    if min(values) < 1:
      parser.error(f'--{name} must be at least 1, got {min(values)}')
    setattr(args, name, sorted(set(values)))
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)
  path = args.figure or os.path.join(HERE, 'table_scaling.png')

  import tensorflow as tf

  load_start = compare._load()
  began = time.perf_counter()
  configurations = []
  workdir = tempfile.mkdtemp(prefix='table-scaling-')
  try:
    for num_ps in args.ps:
      for tables in args.tables:
        for rows in args.rows:
          entry = {'rows': rows, 'tables': tables, 'ps': num_ps}
          need = table_bytes(rows, tables)
          if need > args.memory_gib * (1 << 30):
            entry['status'] = (
              f"skipped: the three sides' tables and slots take "
              f'{need / (1 << 30):.1f} GiB, over --memory-gib '
              f'{args.memory_gib:g}'
            )
          else:
            print(f'rows={rows} tables={tables} ps={num_ps} ...', flush=True)
            entry.update(_run_child(rows, tables, num_ps, args, workdir))
          configurations.append(entry)
  finally:
    shutil.rmtree(workdir, ignore_errors=True)
  result = {
    'config': {
      'rows': args.rows,
      'tables': args.tables,
      'ps': args.ps,
      'rounds': args.rounds,
      'closures': args.closures,
      'turn_seconds': args.turn_seconds,
      'steps_per_closure': STEPS_PER_CLOSURE,
      'batch': BATCH,
      'dim': DIM,
      'workers': WORKERS,
      'memory_gib': args.memory_gib,
    },
    'cpus': os.cpu_count(),
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'time': time.strftime('%Y-%m-%d %H:%M:%S'),
    'minutes': (time.perf_counter() - began) / 60,
    'load': {'start': load_start, 'end': compare._load()},
    'configurations': configurations,
  }
  with open(os.path.join(out, 'table_scaling.json'), 'w') as f:
    json.dump(result, f, indent=1)
  text = markdown(result)
  with open(os.path.join(out, 'table_scaling.md'), 'w') as f:
    f.write(text)
  figure(result, path)
  print(text)
  return int(any(c['status'].startswith('failed') for c in configurations))


if __name__ == '__main__':
  sys.exit(main())
