"""Analysis throughput: the path before TFXIO, the current one, a tf.data floor.

On the census sample's schema and features (z-score, quantile and fixed
buckets, min-max scale, log, six vocabularies, hash, cross, target) over CSV
files of growing size, side by side in one run:

- `before`: the analysis as it was before the RecordBatch (TFXIO) path: the
  package at git revision --before (default: the last commit before it),
  extracted to a temporary directory and run as it was: rows parsed one by
  one in Python, fed to tf.Transform as instance dicts.
- `now`: `DataSet.analyze` as it is, with its default runner options (in
  this process below 256 MiB of data, one worker process per core above).
- `now-mp`: the same with worker processes forced (`multi_processing`, one
  per core), for sizes from 300k rows on.
- `floor`: one plain tf.data pass over the same file computing the same
  statistics (count, min, max, mean, std of the numbers, the value counts of
  every discrete column, the quartiles of hours_per_week): what reading and
  reducing the data costs without Beam or tf.Transform.
- `pandas`: the same statistics from one `pandas.read_csv` of the file
  (`describe`-like aggregates, `value_counts`, `quantile`): what a user
  computes by hand in a notebook. Not run by default (`--variants`).

Each variant runs in a fresh process, the variants of a size one after the
other (rotated between rounds); the time is the analysis call's (imports
excluded, reported apart), the peak RSS the largest of the process and its
worker processes. The load average before each run is recorded: the machine
may be shared.

  python benchmarks/analysis.py                   # 30k, 300k, 3M rows
  python benchmarks/analysis.py --quick           # 30k, 100k rows
  python benchmarks/analysis.py --sizes 300000 --rounds 3
  python benchmarks/analysis.py --sizes 1000000 --variants now,pandas,floor

Writes benchmarks/results/analysis.json and .md and prints the table.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CENSUS = os.path.join(ROOT, 'samples', 'census')
SCHEMA = os.path.join(CENSUS, 'schema.yaml')
FEATURES = os.path.join(CENSUS, 'features.yaml')
# The last commit whose analysis fed tf.Transform instance dicts.
BEFORE = 'd065826'
VARIANTS = ('before', 'now', 'now-mp', 'floor')
# Measured when asked for (--variants): not part of the default run.
EXTRA_VARIANTS = ('pandas',)


# The variants, each run in a child process: they print one JSON line.


def _child(variant, data, output):
  """Runs one variant; `before` imports tensorfx from its PYTHONPATH."""
  if variant != 'before':
    sys.path.insert(0, ROOT)
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  start = time.perf_counter()
  import tensorflow as tf  # noqa: F401  (timed: the import is what is measured)

  from tensorfx import data as tfx_data

  if variant == 'pandas':
    import pandas  # noqa: F401  (timed: the import is what is measured)
  elif variant != 'floor':
    import apache_beam  # noqa: F401  (timed: the import is what is measured)
    import tensorflow_transform.beam  # noqa: F401  (timed: the import is what is measured)
  imports = time.perf_counter() - start
  start = time.perf_counter()
  cpu = _cpu_seconds()
  if variant == 'floor':
    rows = _floor(data)
  elif variant == 'pandas':
    rows = _pandas(data)
  else:
    dataset = tfx_data.CsvDataSet(SCHEMA, features=FEATURES, train=data)
    if variant == 'before':
      metadata = dataset.analyze(output)
    else:
      cores = os.cpu_count() or 1
      options = (
        []
        if variant == 'now'
        else [
          '--direct_running_mode=multi_processing',
          f'--direct_num_workers={cores}',
        ]
      )
      metadata = dataset.analyze(output, pipeline_args=options, reuse=False)
    rows = metadata.instances
  seconds = time.perf_counter() - start
  cpu = _cpu_seconds() - cpu
  peak = max(
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
  )
  print(
    json.dumps(
      {
        'rows': rows,
        'seconds': seconds,
        'imports': imports,
        'cpu_seconds': cpu,
        'peak_rss_mib': peak / 1024,
      }
    )
  )


def _cpu_seconds():
  """CPU time of this process and its ended children (worker processes)."""
  total = 0.0
  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
    usage = resource.getrusage(who)
    total += usage.ru_utime + usage.ru_stime
  return total


def _floor(path):
  """One tf.data pass computing the statistics the analysis computes."""
  import numpy as np
  import tensorflow as tf

  from tensorfx.data import Schema
  from tensorfx.data import _csvrules

  schema = Schema.load(SCHEMA)
  numbers = [f.name for f in schema if f.numeric]
  texts = [f.name for f in schema if not f.numeric]
  decode = tf.autograph.experimental.do_not_convert(
    lambda lines: _csvrules.decode_lines(lines, schema)
  )

  def reduce(batch):
    out = {}
    for name in numbers:
      x = tf.cast(batch[name], tf.float64)
      out[name] = tf.stack(
        [
          tf.cast(tf.size(x), tf.float64),
          tf.reduce_min(x),
          tf.reduce_max(x),
          tf.reduce_sum(x),
          tf.reduce_sum(x * x),
        ]
      )
    for name in texts:
      values, _, counts = tf.unique_with_counts(batch[name])
      out[name] = (values, counts)
    out['hours'] = batch['hours_per_week']
    return out

  data = (
    tf.data.TextLineDataset(path)
    .batch(16384)
    .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    .map(reduce, num_parallel_calls=tf.data.AUTOTUNE)
    .prefetch(tf.data.AUTOTUNE)
  )
  sums = {name: np.array([0.0, np.inf, -np.inf, 0.0, 0.0]) for name in numbers}
  counts = {name: {} for name in texts}
  hours = []
  for out in data:
    for name in numbers:
      n, low, high, total, squares = out[name].numpy()
      acc = sums[name]
      acc[0] += n
      acc[1], acc[2] = min(acc[1], low), max(acc[2], high)
      acc[3] += total
      acc[4] += squares
    for name in texts:
      values, found = out[name]
      table = counts[name]
      for value, count in zip(values.numpy().tolist(), found.numpy().tolist()):
        table[value] = table.get(value, 0) + count
    hours.append(out['hours'].numpy())
  np.quantile(np.concatenate(hours), [0.25, 0.5, 0.75])
  return int(sums[numbers[0]][0])


def _pandas(path):
  """One pandas pass computing the statistics the analysis computes."""
  import pandas as pd

  from tensorfx.data import Schema

  schema = Schema.load(SCHEMA)
  numbers = [f.name for f in schema if f.numeric]
  texts = [f.name for f in schema if not f.numeric]
  frame = pd.read_csv(
    path,
    header=None,
    names=[f.name for f in schema],
    dtype={name: str for name in texts},
  )
  frame[numbers].agg(['count', 'min', 'max', 'mean', 'std'])
  for name in texts:
    frame[name].value_counts()
  frame['hours_per_week'].quantile([0.25, 0.5, 0.75])
  return len(frame)


# The parent.


def _extract_before(revision, directory):
  """The tensorfx package at `revision`, extracted under `directory`."""
  archive = subprocess.run(
    ['git', '-C', ROOT, 'archive', revision, 'tensorfx'],
    capture_output=True,
    check=True,
  )
  os.makedirs(directory, exist_ok=True)
  subprocess.run(
    ['tar', '-x', '-C', directory], input=archive.stdout, check=True
  )
  return directory


def _run(variant, data, output, before_dir):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  if variant == 'before':
    env['PYTHONPATH'] = before_dir
  else:
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
  load = os.getloadavg()[0]
  result = subprocess.run(
    [
      sys.executable,
      os.path.abspath(__file__),
      '--child',
      variant,
      '--data',
      data,
      '--output',
      output,
    ],
    capture_output=True,
    text=True,
    env=env,
    check=False,
    cwd=before_dir if variant == 'before' else ROOT,
  )
  if result.returncode:
    raise RuntimeError(f'{variant} failed: {result.stderr[-3000:]}')
  run = json.loads(result.stdout.strip().splitlines()[-1])
  run.update(variant=variant, load=load)
  return run


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick', action='store_true', help='30k and 100k rows, every variant once'
  )
  parser.add_argument(
    '--sizes',
    type=lambda t: [int(s) for s in t.split(',')],
    help='row counts (default 30000,300000,3000000)',
  )
  parser.add_argument(
    '--rounds',
    type=int,
    default=1,
    help='runs of each variant per size (default 1)',
  )
  parser.add_argument(
    '--variants',
    type=lambda t: t.split(','),
    default=list(VARIANTS),
    help=f'which to run (default {",".join(VARIANTS)}; also '
    f'{",".join(EXTRA_VARIANTS)})',
  )
  parser.add_argument(
    '--before',
    default=BEFORE,
    help=f'the git revision of the path before (default {BEFORE})',
  )
  parser.add_argument(
    '--data', help='where to write the data (default benchmarks/results/data)'
  )
  parser.add_argument(
    '--output', help='where to write the results (default benchmarks/results)'
  )
  parser.add_argument('--child', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.child:
    _child(args.child, args.data, args.output)
    return 0
  sys.path.insert(0, HERE)
  from analysis_memory import write_data

  sizes = args.sizes or (
    [30000, 100000] if args.quick else [30000, 300000, 3000000]
  )
  directory = args.data or os.path.join(HERE, 'results', 'data')
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)
  runs = []
  with tempfile.TemporaryDirectory() as scratch:
    before_dir = _extract_before(args.before, os.path.join(scratch, 'before'))
    for rows in sizes:
      path = write_data(directory, rows)
      variants = [
        v
        for v in args.variants
        if v != 'now-mp' or rows >= 300000 or args.quick
      ]
      for round_ in range(args.rounds):
        shift = round_ % len(variants)
        for variant in variants[shift:] + variants[:shift]:
          output = os.path.join(scratch, f'{variant}-{rows}-{round_}')
          run = _run(variant, path, output, before_dir)
          run.update(size=rows, file_mib=os.path.getsize(path) / 2**20)
          runs.append(run)
          print(
            f'{rows:,} rows, {variant}: {run["seconds"]:.1f} s '
            f'({rows / run["seconds"]:,.0f} rows/s), peak RSS '
            f'{run["peak_rss_mib"]:,.0f} MiB, load {run["load"]:.1f}',
            file=sys.stderr,
            flush=True,
          )
  report = _report(runs, sizes)
  with open(os.path.join(out, 'analysis.json'), 'w') as f:
    json.dump(
      {'runs': runs, 'cores': os.cpu_count(), 'time': time.time()}, f, indent=2
    )
  with open(os.path.join(out, 'analysis.md'), 'w') as f:
    f.write(report)
  print(report)
  return 0


def _median(values):
  values = sorted(values)
  middle = len(values) // 2
  return (
    values[middle]
    if len(values) % 2
    else (values[middle - 1] + values[middle]) / 2
  )


def _report(runs, sizes):
  lines = [
    f'Analysis of the census schema and features, {os.cpu_count()} CPU '
    'cores; medians over the rounds. Time: wall seconds of the analysis '
    'call (imports excluded); CPU: CPU seconds of its process and worker '
    'processes; load: the 1-minute load average before the run (the '
    'machine may be shared).',
    '',
    '| rows | CSV | variant | time | rows/s | vs before | vs floor | '
    'vs pandas | CPU | peak RSS | load |',
    '| ---: | ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
    '| ---: |',
  ]
  for rows in sizes:
    medians = {}
    for variant in VARIANTS + EXTRA_VARIANTS:
      mine = [r for r in runs if r['size'] == rows and r['variant'] == variant]
      if mine:
        cpu = [r['cpu_seconds'] for r in mine if 'cpu_seconds' in r]
        medians[variant] = (
          _median([r['seconds'] for r in mine]),
          max(r['peak_rss_mib'] for r in mine),
          _median([r['load'] for r in mine]),
          mine[0]['file_mib'],
          _median(cpu) if cpu else None,
        )
    for variant, (seconds, peak, load, mib, cpu) in medians.items():
      before = (
        f'{medians["before"][0] / seconds:.1f}x'
        if 'before' in medians and variant != 'before'
        else ''
      )
      floor = (
        f'{seconds / medians["floor"][0]:.1f}x'
        if 'floor' in medians and variant != 'floor'
        else ''
      )
      by_hand = (
        f'{seconds / medians["pandas"][0]:.1f}x'
        if 'pandas' in medians and variant not in ('pandas', 'floor')
        else ''
      )
      cpu = f'{cpu:.1f} s' if cpu is not None else ''
      lines.append(
        f'| {rows:,} | {mib:,.0f} MiB | {variant} | {seconds:.1f} s'
        f' | {rows / seconds:,.0f} | {before} | {floor} | {by_hand} | '
        f'{cpu} | {peak:,.0f} MiB | {load:.1f} |'
      )
  lines += [
    '',
    '"vs before": how many times faster than the path before; '
    '"vs floor", "vs pandas": how many times slower than the tf.data '
    'pass, the pandas pass.',
  ]
  return '\n'.join(lines) + '\n'


if __name__ == '__main__':
  sys.exit(main())
