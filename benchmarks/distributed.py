"""tensorfx on a local cluster against the same cluster written by hand.

On the reference workload (`ctr_data.py`) and model (`ctr_model.CtrNet`),
each section trains on a real local cluster on 127.0.0.1 (free ports, one
process per task) twice a round: with `tensorfx train --cluster`
(`ctr_trainer.py` as the trainer module) and with hand-written TensorFlow
(`ctr_cluster.py`), and reports examples/s and the ratio, the median of
per-round paired ratios (the two runs adjacent, the order flipping every
round) with its interquartile range, and beside it the CPU seconds every
task's process used over the measured steps (sampled from `/proc`, see
`cpu_split.py`), by job and per thousand examples:

1. `parameter-servers`: `--cluster ps=1,workers=2` against a hand-written
   `ParameterServerStrategy` + `ClusterCoordinator` loop: a chief, one
   parameter server, two workers; the same closures of
   `--steps-per-closure` steps on per-worker datasets, joined every
   window, the same variable partitioning (none on one server, tensorfx's
   `MinSizePartitioner` of 256 KiB on several).
2. `multi-worker`: `--cluster workers=1` (the chief and one worker: two
   replicas) against a hand-written `MultiWorkerMirroredStrategy` loop on
   two processes: the global batch split across the replicas, the data
   sharded by element, a window of steps per `tf.function` call.
3. `tables-hashed` and `tables-exact`: the embedding path on two parameter
   servers (`--cluster ps=2,workers=2`): the 26 embeddings as tensorfx
   `EmbeddingTable`s (hashed, or with exact keys: an index per shard gives
   each id its own row) trained by its sparse Adagrad, against the
   hand-written `tf.Variable`s split over the two servers by the same
   partitioner and looked up by `tf.nn.embedding_lookup` (Keras
   `Embedding`), trained by Keras' Adagrad (which also updates only the
   rows looked up); the dense layers with Adam on both sides.
   `tables-exact` has a third side, rotated with the other two (A B C,
   B C A, ...): exact keys by hand (`exact_tables.py`: a `tf.lookup` hash
   table and a next-row counter beside each shard of the same split
   variables, one lock a server), and reports tensorfx against it and
   against the hashed one, each a paired ratio.

Both sides read the TFRecords through the same kind of pipeline: tensorfx
with `--cache none --no-shuffle` (its tf.Transform hashing and z-scores in
the input pipeline), the hand-written side with `ctr_model.tuned_pipeline`
(the same hashing and z-scores by hand). Rates are measured after the
warm-up steps (tracing, connecting, the first batches).

  python benchmarks/distributed.py            # 200,000 rows, 3 rounds
  python benchmarks/distributed.py --quick    # tiny: 1 round, a few steps

Writes benchmarks/results/distributed.json and distributed.md. Nothing is
asserted about the timings.
"""

import argparse
import functools
import glob
import itertools
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import compare
import cpu_split
import ctr_data
import ctr_model
import tensorflow as tf

SECTIONS = (
  'parameter-servers',
  'multi-worker',
  'tables-hashed',
  'tables-exact',
)
# tensorfx's `--cluster` for each section, and the hand-written cluster's
# jobs (the chief is the coordinator or a replica).
_TENSORFX_CLUSTER = {
  'parameter-servers': 'ps=1,workers=2',
  'multi-worker': 'workers=1',
  'tables-hashed': 'ps=2,workers=2',
  'tables-exact': 'ps=2,workers=2',
}
_HAND_JOBS = {
  'parameter-servers': {'chief': 1, 'ps': 1, 'worker': 2},
  'multi-worker': {'chief': 1, 'worker': 1},
  'tables-hashed': {'chief': 1, 'ps': 2, 'worker': 2},
  'tables-exact': {'chief': 1, 'ps': 2, 'worker': 2},
}
# The hand-written sides each section runs tensorfx against, the like for
# like first: `hand-written` (Keras `Embedding`s where there are tables),
# `hand-exact` (exact keys by hand, `exact_tables.py`).
_REFERENCES = {'tables-exact': ('hand-exact', 'hand-written')}
# The tables sections train the embeddings with Adagrad at this rate on
# both sides (tensorfx: its sparse optimizer; by hand: Keras' Adagrad,
# which also updates only the rows looked up).
_TABLES_RATE = 0.05
_PIDS = re.compile(r'\(pid (\d+)\)')
# A quick run measures about a second of steps.
_SAMPLE_SECONDS = 0.1
# The launcher's line naming its tasks: `ps-0 (pid 123), ..., chief (pid 9)`.
_TASK_PIDS = re.compile(r'([\w-]+) \(pid (\d+)\)')


def _env(tf_config: dict[str, Any] | None = None) -> dict[str, str]:
  """This checkout's tensorfx first; loopback past any proxy."""
  env = dict(os.environ)
  env['PYTHONPATH'] = os.pathsep.join(
    p for p in (ROOT, env.get('PYTHONPATH')) if p
  )
  env['no_proxy'] = env['NO_PROXY'] = '127.0.0.1,localhost'
  env['GRPC_FAIL_FAST'] = 'use_caller'
  env.pop('TF_CONFIG', None)
  if tf_config is not None:
    env['TF_CONFIG'] = json.dumps(tf_config)
  return env


def _free_ports(count: int) -> list[int]:
  sockets = [socket.socket() for _ in range(count)]
  try:
    for s in sockets:
      s.bind(('127.0.0.1', 0))
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def _kill(pids: list[int]) -> None:
  """SIGKILLs each of these processes (started here) that still runs."""
  for pid in pids:
    try:
      os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
      pass


def _tail(path: str, lines: int = 30) -> str:
  with open(path, errors='replace') as f:
    return ''.join(f.readlines()[-lines:])


def _launched_tasks(log: str) -> dict[str, int]:
  """{task: pid} from the launcher's `started N tasks: ...` line, if logged."""
  try:
    with open(log, errors='replace') as f:
      for line in f:
        if 'started' in line and '(pid ' in line:
          return {name: int(pid) for name, pid in _TASK_PIDS.findall(line)}
  except OSError:
    pass
  return {}


def _cpu(
  sampler: cpu_split.CpuSampler, span: tuple[float, float] | None, rate: float
) -> dict[str, Any]:
  """The cores each task used over the measured span, and their total."""
  split = sampler.split(*span) if span else None
  return {'tasks': split or {}, **cpu_split.summary(split, rate)}


def tensorfx_run(
  section: str, config: dict[str, Any], output: str, timeout: float
) -> dict[str, Any]:
  """`tensorfx train --cluster`: examples/s (wall-clock, in-loop), CPU."""
  window, warmup = config['window'], config['warmup']
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    os.path.join(HERE, 'ctr_trainer.py'),
    '--output',
    output,
    '--cluster',
    _TENSORFX_CLUSTER[section],
    '--ctr-data',
    config['data'],
    '--ctr-rows',
    str(config['rows']),
    '--ctr-shards',
    str(config['shards']),
    '--ctr-analysis',
    config['analysis'],
    '--batch-size',
    str(config['batch']),
    '--max-steps',
    str(warmup + config['steps']),
    '--log-interval-steps',
    str(window),
    '--steps-per-closure',
    str(config['steps_per_closure']),
    '--checkpoint-interval-secs',
    '100000',
    '--cluster-timeout-secs',
    '120',
    '--no-shuffle',
    '--cache',
    'none',
  ]
  if section.startswith('tables-'):
    command += [
      '--ctr-tables',
      section.split('-')[1],
      '--embedding-optimizer',
      'adagrad',
      '--embedding-learning-rate',
      str(_TABLES_RATE),
    ]
  log = output + '.log'
  os.makedirs(os.path.dirname(log), exist_ok=True)
  with open(log, 'w') as out:
    launcher = subprocess.Popen(
      command,
      stdout=out,
      stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL,
      env=_env(),
      cwd=ROOT,
    )
  tasks: dict[str, int] = {}

  def pids() -> dict[str, int]:
    # Read until the launcher has named its tasks.
    if not tasks:
      tasks.update(_launched_tasks(log))
    return {'launcher': launcher.pid, **tasks}

  sampler = cpu_split.CpuSampler(pids, _SAMPLE_SECONDS)
  sampler.start()
  try:
    code = launcher.wait(timeout=timeout)
  except subprocess.TimeoutExpired:
    code = None
  finally:
    sampler.stop()
    if launcher.poll() is None:
      # The launcher stops its tasks on SIGTERM; whatever outlives it is
      # killed by the PIDs it logged.
      launcher.send_signal(signal.SIGTERM)
      try:
        launcher.wait(timeout=30)
      except subprocess.TimeoutExpired:
        _kill([launcher.pid])
        launcher.wait()
    with open(log, errors='replace') as f:
      _kill(
        [
          int(p)
          for line in f
          if line.startswith('[cluster')
          for p in _PIDS.findall(line)
        ]
      )
  if code != 0:
    raise RuntimeError(
      f'tensorfx --cluster {_TENSORFX_CLUSTER[section]} '
      f'{"timed out" if code is None else f"exited {code}"}'
      f':\n{_tail(log)}'
    )
  rate, in_loop, span = _rates(
    os.path.join(output, 'summaries', 'train'), warmup, config['batch']
  )
  if rate is None:
    raise RuntimeError(
      f'no examples_per_sec summaries after step {warmup} '
      f'in {output}:\n{_tail(log)}'
    )
  return {'rate': rate, 'in_loop': in_loop, 'cpu': _cpu(sampler, span, rate)}


def _rates(
  directory: str, warmup: int, batch: int
) -> tuple[float | None, float | None, tuple[float, float] | None]:
  """(wall-clock, in-loop) examples/s from the chief's summaries, the span.

  The wall-clock rate runs from the summary written at step `warmup` to
  the last one, as the hand-written side is timed: it includes what the
  trainer does between its loop calls (summaries, callbacks). The in-loop
  rate is the one tensorfx logs, the loop calls only.
  """
  events = []
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == 'examples_per_sec':
          events.append(
            (event.step, event.wall_time, float(tf.make_ndarray(value.tensor)))
          )
  events.sort()
  start = [e for e in events if e[0] == warmup]
  measured = [e for e in events if e[0] > warmup]
  if not start or not measured:
    return None, None, None
  (first, began, _), (last, ended, _) = start[0], measured[-1]
  # Equal windows: the rate over all of them is their harmonic mean.
  in_loop = len(measured) / sum(1 / e[2] for e in measured)
  gaps = [f'{b[0]}: {b[1] - a[1]:.1f}s' for a, b in itertools.pairwise(events)]
  print(
    f'  tensorfx windows, wall seconds to each summary: {gaps}',
    file=sys.stderr,
    flush=True,
  )
  return (last - first) * batch / (ended - began), in_loop, (began, ended)


def hand_written_run(
  section: str,
  config: dict[str, Any],
  output: str,
  timeout: float,
  exact_keys: bool = False,
) -> dict[str, Any]:
  """The hand-written cluster: examples/s (its chief's JSON line), CPU.

  With `exact_keys`, its embeddings are `exact_tables.py`'s.
  """
  jobs = _HAND_JOBS[section]
  ports = iter(_free_ports(sum(jobs.values())))
  cluster = {
    job: [f'127.0.0.1:{next(ports)}' for _ in range(count)]
    for job, count in jobs.items()
  }
  script = [sys.executable, os.path.join(HERE, 'ctr_cluster.py')]
  flags = [
    '--data',
    config['data'],
    '--rows',
    str(config['rows']),
    '--shards',
    str(config['shards']),
    '--batch',
    str(config['batch']),
    '--warmup',
    str(config['warmup']),
    '--steps',
    str(config['steps']),
    '--window',
    str(config['window']),
    '--steps-per-closure',
    str(config['steps_per_closure']),
  ]
  if section.startswith('tables-'):
    flags += ['--adagrad-tables', str(_TABLES_RATE)]
  if exact_keys:
    flags.append('--exact-keys')
  os.makedirs(output, exist_ok=True)
  processes = []
  try:
    # Servers first, the chief last: it connects to everyone else.
    for job in sorted(jobs, key=lambda j: j == 'chief'):
      for index in range(jobs[job]):
        servers = section != 'multi-worker'
        if servers and job != 'chief':
          role = ['serve']
        else:
          role = ['ps' if servers else 'mwm', *flags]
        env = _env({'cluster': cluster, 'task': {'type': job, 'index': index}})
        task = f'{job}-{index}'
        with open(os.path.join(output, f'{task}.log'), 'w') as out:
          processes.append(
            (
              task,
              subprocess.Popen(
                script + role,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=ROOT,
              ),
            )
          )
    chief = processes[-1][1]
    named = {task: p.pid for task, p in processes}
    sampler = cpu_split.CpuSampler(lambda: named, _SAMPLE_SECONDS)
    sampler.start()
    try:
      code = chief.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      code = None
    finally:
      sampler.stop()
  finally:
    _kill([p.pid for _, p in processes])
    for _, p in processes:
      p.wait()
  log = os.path.join(output, 'chief-0.log')
  with open(log, errors='replace') as f:
    lines = [json.loads(line) for line in f if line.startswith('{"rate"')]
  if code != 0 or not lines:
    raise RuntimeError(
      f'the hand-written {section} cluster'
      f'{" with exact keys" if exact_keys else ""} '
      f'{"timed out" if code is None else f"exited {code}"}'
      f':\n{_tail(log)}'
    )
  rate, span = lines[0]['rate'], (lines[0]['began'], lines[0]['ended'])
  return {'rate': rate, 'in_loop': None, 'cpu': _cpu(sampler, span, rate)}


def section_result(
  section: str,
  config: dict[str, Any],
  rounds: int,
  workdir: str,
  timeout: float,
) -> dict[str, Any]:
  """tensorfx and each hand-written reference, `rounds` times, in turns."""
  references = _REFERENCES.get(section, ('hand-written',))
  runs = {
    'tensorfx': tensorfx_run,
    'hand-written': hand_written_run,
    'hand-exact': functools.partial(hand_written_run, exact_keys=True),
  }
  sides = ('tensorfx', *references)
  rates: dict[str, list[float]] = {name: [] for name in sides}
  cpu: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
  in_loop: list[float] = []
  for round_ in range(rounds):
    # Each round starts at another side (A B C, B C A, ...): none always
    # runs first; with two, the order flips.
    for name in compare._rotated(list(sides), round_):
      output = os.path.join(workdir, f'{section}-{name}-{round_}')
      run = runs[name](section, config, output, timeout)
      rates[name].append(run['rate'])
      cpu[name].append(run['cpu'])
      if run['in_loop'] is not None:
        in_loop.append(run['in_loop'])
      print(
        f'{section} round {round_ + 1}: {name} {run["rate"]:,.0f} examples/s'
        + _cpu_line(run['cpu']),
        file=sys.stderr,
        flush=True,
      )
  return {
    'cluster': _TENSORFX_CLUSTER[section],
    'references': list(references),
    'rates': rates,
    'medians': {n: compare._median(r) for n, r in rates.items()},
    # tensorfx / each reference, paired by round.
    'ratios': {
      name: compare.spread(
        [t / h for t, h in zip(rates['tensorfx'], rates[name])]
      )
      for name in references
    },
    # What tensorfx logs: its loop calls only, not what runs between.
    'tensorfx_in_loop': compare._median(in_loop),
    'cpu': cpu,
    'cpu_ratios': {
      name: _cpu_ratio(cpu['tensorfx'], cpu[name]) for name in references
    },
  }


def _cpu_line(cpu: dict[str, Any]) -> str:
  """`, 1.95 cores, 0.41 CPU s / 1k examples (chief 0.02, ...)`, or ''."""
  if 'cores' not in cpu:
    return ''
  roles = ', '.join(f'{k} {v:.2f}' for k, v in _by_job(cpu['tasks']).items())
  return (
    f', {cpu["cores"]:.2f} cores, {cpu["cpu_seconds_per_1k"]:.3f} CPU s '
    f'/ 1k examples ({roles})'
  )


def _by_job(tasks: dict[str, float]) -> dict[str, float]:
  """Cores by job (`worker-0`, `worker-1` -> `worker`), in a fixed order."""
  jobs: dict[str, float] = {}
  for task, cores in tasks.items():
    # `chief-0` (by hand) and `chief` (tensorfx's launcher) are one job.
    job = task.rsplit('-', 1)[0] if task[-1:].isdigit() else task
    jobs[job] = jobs.get(job, 0.0) + cores
  order = ('launcher', 'chief', 'ps', 'worker')
  return dict(
    sorted(jobs.items(), key=lambda item: (order + (item[0],)).index(item[0]))
  )


def _cpu_ratio(
  tensorfx: list[dict[str, Any]], reference: list[dict[str, Any]]
) -> dict[str, Any] | None:
  """Paired reference / tensorfx CPU per example (>1: tensorfx cheaper).

  Oriented as the rate ratio is: on a machine whose cores the cluster
  saturates, the two agree, and this one moves less from run to run.
  """
  pairs = [
    h['cpu_seconds_per_1k'] / t['cpu_seconds_per_1k']
    for t, h in zip(tensorfx, reference)
    if t.get('cpu_seconds_per_1k') and h.get('cpu_seconds_per_1k')
  ]
  return compare.spread(pairs) if pairs else None


def _against(section: str, reference: str) -> str:
  """The markdown's name of a hand-written reference."""
  if reference == 'hand-exact':
    return 'by hand, exact keys (`tf.lookup`)'
  if section.startswith('tables-'):
    return 'by hand, hashed (Keras `Embedding`)'
  return 'by hand'


def _ratio_cell(r: dict[str, Any]) -> str:
  """`**0.84x** (0.82-0.86, n=3)`, `*` when the range includes 1.0."""
  return (
    f'**{r["median"]:.2f}x** ({r["q1"]:.2f}-{r["q3"]:.2f}, '
    f'n={r["pairs"]}){" *" if r["includes_one"] else ""}'
  )


def markdown(result: dict[str, Any]) -> str:
  """The table of a result."""
  c = result['config']
  lines = [
    (
      f'Local clusters on 127.0.0.1: {c["rows"]:,} rows in {c["shards"]} '
      f'TFRecord shards, batch {c["batch"]}, {c["steps"]} steps measured '
      f'after {c["warmup"]} (windows of {c["window"]}, closures of '
      f'{c["steps_per_closure"]}); {result["cpus"]} CPU cores, TensorFlow '
      f'{result["tensorflow"]}, Python {result["python"]}; '
      f'{result["rounds"]} rounds; load average '
      f'{result["load"].get("start", "?")} at the start, '
      f'{result["load"].get("end", "?")} at the end.'
    ),
    '',
    (
      '| section | tensorfx `--cluster` | against | examples/s tensorfx | '
      'examples/s hand-written | ratio (IQR, pairs) | tensorfx as it logs '
      'it |'
    ),
    '| --- | --- | --- | ---: | ---: | ---: | ---: |',
  ]
  for section, s in result['sections'].items():
    for reference, ratio in s['ratios'].items():
      lines.append(
        f'| {section} | `{s["cluster"]}` | {_against(section, reference)} | '
        f'{s["medians"]["tensorfx"]:,.0f} | '
        f'{s["medians"][reference]:,.0f} | {_ratio_cell(ratio)} | '
        f'{s["tensorfx_in_loop"]:,.0f} |'
      )
  lines += [
    '',
    (
      'Examples/s are wall-clock from the end of the warm-up to '
      'the last step on every side; the last column is the rate '
      'tensorfx logs (its loop calls only). A ratio is tensorfx / the '
      'reference named, paired by round. * the interquartile '
      'range includes 1.0: no difference shown.'
    ),
  ]
  cpu = _cpu_table(result['sections'])
  return '\n'.join(lines + cpu) + '\n'


def _cpu_table(sections: dict[str, Any]) -> list[str]:
  """CPU per example and cores by job over the measured steps ([] if none)."""
  rows = []
  for section, s in sections.items():
    cells = {}
    for side in s['cpu']:
      runs = [r for r in s['cpu'][side] if 'cores' in r]
      if not runs:
        continue
      per_1k = compare._median([r['cpu_seconds_per_1k'] for r in runs])
      jobs: dict[str, list[float]] = {}
      for r in runs:
        for job, cores in _by_job(r['tasks']).items():
          jobs.setdefault(job, []).append(cores)
      split = ', '.join(
        f'{job} {compare._median(v):.2f}' for job, v in jobs.items()
      )
      cells[side] = (f'{per_1k:.3f}', split)
    for reference, ratio in s['cpu_ratios'].items():
      if not ratio:
        continue
      ours, theirs = cells['tensorfx'], cells[reference]
      rows.append(
        f'| {section} | {_against(section, reference)} | {ours[0]} | '
        f'{theirs[0]} | {_ratio_cell(ratio)} | {ours[1]} | {theirs[1]} |'
      )
  if not rows:
    return []
  return [
    '',
    (
      '| section | against | CPU s / 1k examples tensorfx | hand-written | '
      'CPU ratio (IQR, pairs) | cores by job, tensorfx | hand-written |'
    ),
    '| --- | --- | ---: | ---: | ---: | --- | --- |',
    *rows,
    '',
    (
      "CPU seconds of every task's process (`/proc`) over the measured "
      'steps; the CPU ratio is hand-written / tensorfx per example, '
      'oriented as the rate ratio is. Where the cluster saturates the '
      "machine's cores, the rate follows CPU work per example, and this "
      'ratio moves less from run to run.'
    ),
  ]


def _write(out: str, result: dict[str, Any]) -> str:
  """distributed.json and .md, after each section; returns the table."""
  with open(os.path.join(out, 'distributed.json'), 'w') as f:
    json.dump(result, f, indent=2)
  table = markdown(result)
  with open(os.path.join(out, 'distributed.md'), 'w') as f:
    f.write(table)
  return table


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick',
    action='store_true',
    help='4,000 rows, batch 128, 10 steps measured, one round',
  )
  parser.add_argument('--rows', type=int)
  parser.add_argument('--shards', type=int)
  parser.add_argument('--batch', type=int)
  parser.add_argument('--steps', type=int, help='steps measured per run')
  parser.add_argument('--rounds', type=int)
  parser.add_argument('--steps-per-closure', type=int, default=10)
  parser.add_argument(
    '--sections', default=','.join(SECTIONS), type=lambda t: t.split(',')
  )
  parser.add_argument(
    '--timeout',
    type=float,
    help='seconds one cluster run may take (default 600, 300 with --quick)',
  )
  parser.add_argument(
    '--data',
    help='where the generated data goes (default benchmarks/results/data)',
  )
  parser.add_argument(
    '--output', help='where results go (default benchmarks/results)'
  )
  args = parser.parse_args(argv)
  unknown = sorted(set(args.sections) - set(SECTIONS))
  if unknown:
    parser.error(
      f'--sections: unknown {", ".join(unknown)}; choose from '
      f'{", ".join(SECTIONS)}'
    )
  rows = args.rows or (4000 if args.quick else 200000)
  shards = args.shards or (2 if args.quick else 4)
  batch = args.batch or (128 if args.quick else 1024)
  steps = args.steps or (10 if args.quick else 200)
  window = min(steps, 10 if args.quick else 50)
  steps = max(window, steps // window * window)
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)

  load_start = compare._load()
  files = ctr_data.generate(
    args.data or os.path.join(HERE, 'results', 'data'), rows, shards
  )
  analysis = ctr_model.analyze(
    files, os.path.join(os.path.dirname(files['schema']), 'analysis')
  )
  config = {
    'data': os.path.dirname(os.path.dirname(files['schema'])),
    'rows': rows,
    'shards': shards,
    'analysis': analysis,
    'batch': batch,
    'steps': steps,
    'window': window,
    # Warm-up: tracing, connecting, the first closures (tensorfx's second
    # window still ran 5 times its later ones in a quick run).
    'warmup': 2 * window,
    'steps_per_closure': args.steps_per_closure,
  }
  result: dict[str, Any] = {
    'config': config,
    'rounds': args.rounds or (1 if args.quick else 3),
    'cpus': os.cpu_count(),
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'sections': {},
    'time': time.strftime('%Y-%m-%d %H:%M:%S'),
    'load': {'start': load_start},
  }
  timeout = args.timeout or (300 if args.quick else 600)
  with tempfile.TemporaryDirectory(prefix='tensorfx-distributed-') as workdir:
    for section in args.sections:
      result['sections'][section] = section_result(
        section, config, result['rounds'], workdir, timeout
      )
      result['load']['end'] = compare._load()
      _write(out, result)
  print(_write(out, result))
  return 0


if __name__ == '__main__':
  sys.exit(main())
