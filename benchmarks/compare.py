"""tensorfx against hand-written TensorFlow, side by side, in one run.

On the reference workload (`ctr_data.py`: a synthetic click-through
dataset) and model (`ctr_model.py`), it measures, interleaving the variants
(A B C, B C A, C A B, ...: each round starts with the next one) and
reporting medians and ratios; each ratio is the median of per-round
paired ratios (a tensorfx configuration run next to its like-for-like
hand-written loop, the order flipping every round) with its interquartile
range and the number of pairs:

1-5. training examples/s, at batch 1024 and 4096, over several epochs of
     the first shard (measured after the first epoch): tensorfx
     (`ModelTrainer`) in its default configuration, with `--cache none`,
     `--jit-compile`, and both `--jit-compile --cache memory`; Keras `fit`
     naive and tuned; a hand-written `tf.function` loop, the same loop
     with XLA, over data cached in memory, and both; the compute ceiling;
6.   input only: tensorfx's TFRecord reader against the hand-written tuned
     tf.data pipeline;
7.   start-up: `tensorfx --help`, and process start to first training step
     (tensorfx trainer against the hand-written script), wall and CPU
     seconds, at least 5 rounds;
8.   peak RSS of a full pass over the TFRecords, at two dataset sizes;
9.   serving: predictions/s through `prediction.Model.predict` and the raw
     SavedModel signature, batch 1 and 1024.

  python benchmarks/compare.py            # 1,000,000 rows, 8 paired rounds (~45 min on 2 cores)
  python benchmarks/compare.py --quick    # 20,000 rows, a couple of minutes

Writes benchmarks/results/compare.json and compare.md and prints the table.
No timing is asserted anywhere; the targets are reported next to the ratios.
"""

import argparse
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# As the shell had it: importing tensorfx below sets it (see
# tensorfx/__init__.py), and the start-up probes must not inherit that.
_KERAS_CHOICE = os.environ.get('TF_USE_LEGACY_KERAS')

import cpu_split
import ctr_data
import ctr_model
import tensorflow as tf

_FIRST_STEP = re.compile(r'\bstep 1\b')


def _median(values):
  return statistics.median(values) if values else float('nan')


def _rotated(names, round_):
  """`names` starting at a different one each round (A B C, B C A, ...).

  A slow spell of a shared machine, or a cache warmed by whichever variant
  runs before, then falls on each variant in turn.
  """
  start = round_ % len(names)
  return names[start:] + names[:start]


def _scalars(directory, tag):
  """[(step, value)] of a scalar in the event files of `directory`."""
  found = []
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          found.append((event.step, float(tf.make_ndarray(value.tensor))))
  return sorted(found)


def tensorfx_rate(
  files, analysis, output, batch, window, warmup, steps, extra=(), train=None
):
  """examples/s of ModelTrainer after the first `warmup` steps.

  The trainer logs examples/s per window of `window` steps; the windows
  up to `warmup` (tracing, the first epoch that fills a cache) are
  dropped, the others are averaged over time.
  """
  model = ctr_model.tensorfx_train(
    files,
    analysis,
    output,
    batch,
    warmup + steps,
    window,
    extra=extra,
    train=train,
  )
  windows = [
    rate
    for step, rate in _scalars(
      os.path.join(output, 'summaries', 'train'), 'examples_per_sec'
    )
    if step > warmup
  ]
  if not windows:
    raise RuntimeError(f'no examples_per_sec summaries in {output}')
  # Equal windows: the overall rate is the harmonic mean.
  return len(windows) / sum(1 / r for r in windows), model


# The tensorfx configurations measured, by name: their extra flags. The
# default is what `tensorfx train` does without speed flags (--cache auto
# caches here: training reads the data more than once, and it fits).
TENSORFX = {
  'tensorfx': (),
  'tensorfx-nocache': ('--cache', 'none'),
  'tensorfx-xla': ('--jit-compile', '--cache', 'none'),
  'tensorfx-xla-cache': ('--jit-compile', '--cache', 'memory'),
}
# Hand-written variants a user could write (the naive one is a floor, not
# a contender; the ceiling has no input pipeline).
HAND_WRITTEN = (
  'keras-tuned',
  'loop',
  'loop-xla',
  'loop-cache',
  'loop-xla-cache',
)
# The like-for-like pairs: a tensorfx configuration and the hand-written
# loop using the same technique (cache, XLA).
LIKE_FOR_LIKE = (
  ('tensorfx-nocache', 'loop'),
  ('tensorfx', 'loop-cache'),
  ('tensorfx-xla', 'loop-xla'),
  ('tensorfx-xla-cache', 'loop-xla-cache'),
)


def quartiles(values):
  """(first quartile, median, third quartile) of `values`."""
  if len(values) < 2:
    value = values[0] if values else float('nan')
    return value, value, value
  q1, median, q3 = statistics.quantiles(values, n=4, method='inclusive')
  return q1, median, q3


def spread(ratios):
  """A ratio as the median of paired per-round ratios, with its spread."""
  q1, median, q3 = quartiles(ratios)
  return {
    'median': median,
    'q1': q1,
    'q3': q3,
    'pairs': len(ratios),
    'ratios': ratios,
    'includes_one': q1 <= 1.0 <= q3,
  }


def training(
  files,
  analysis,
  stats,
  batch,
  rounds,
  window,
  warmup,
  steps,
  workdir,
  train_files,
):
  """Sections 1-5 at one batch size.

  Every variant trains on `train_files` for `warmup + steps` steps and is
  measured over the last `steps`, after the first epoch (so caches are
  full and every pipeline reads its data for the second time at least).
  """
  records = train_files
  model_dir = None

  def loop(jit_compile=False, cached=False):
    make = ctr_model.cached_pipeline if cached else ctr_model.tuned_pipeline
    return lambda: ctr_model.function_loop(
      make(records, batch, stats),
      batch,
      warmup,
      steps,
      per_call=window,
      jit_compile=jit_compile,
    )

  variants = {name: None for name in TENSORFX}
  variants.update(
    {
      'keras-naive': lambda: ctr_model.keras_fit(
        ctr_model.naive_pipeline(records, batch, stats), batch, warmup, steps
      ),
      'keras-tuned': lambda: ctr_model.keras_fit(
        ctr_model.tuned_pipeline(records, batch, stats),
        batch,
        warmup,
        steps,
        steps_per_execution=window,
      ),
      'loop': loop(),
      'loop-xla': loop(jit_compile=True),
      'loop-cache': loop(cached=True),
      'loop-xla-cache': loop(jit_compile=True, cached=True),
      'ceiling': lambda: ctr_model.compute_ceiling(
        ctr_model.tuned_pipeline(records, batch, stats),
        batch,
        warmup,
        steps,
        per_call=window,
      ),
    }
  )
  rates = {name: [] for name in variants}
  # Like for like: each tensorfx configuration runs next to the hand-written
  # loop that uses the same technique, the order within the pair flipping
  # from round to round; a slow spell then falls on both sides of a pair.
  units = [pair for pair in LIKE_FOR_LIKE] + [
    (name,)
    for name in variants
    if not any(name in pair for pair in LIKE_FOR_LIKE)
  ]
  for round_ in range(rounds):
    for unit in _rotated(units, round_):
      for name in unit[::-1] if round_ % 2 else unit:
        run = variants[name]
        tf.keras.backend.clear_session()
        if name in TENSORFX:
          output = os.path.join(workdir, f'{name}-{batch}-{round_}')
          rate, model = tensorfx_rate(
            files,
            analysis,
            output,
            batch,
            window,
            warmup,
            steps,
            extra=TENSORFX[name],
            train=records,
          )
          if name == 'tensorfx':
            model_dir = model.path
        else:
          rate = run()
        rates[name].append(rate)
        print(
          f'batch {batch} round {round_ + 1}: {name} {rate:,.0f} examples/s',
          file=sys.stderr,
          flush=True,
        )
  medians = {name: _median(r) for name, r in rates.items()}
  best_name = max(HAND_WRITTEN, key=lambda n: medians[n])
  tensorfx_best = max(TENSORFX, key=lambda n: medians[n])

  def per_round(numerator, denominator):
    return [n / d for n, d in zip(numerator, denominator)]

  best_each_round = [
    max(rates[n][r] for n in HAND_WRITTEN) for r in range(rounds)
  ]
  paired = {
    f'{a} / {b}': spread(per_round(rates[a], rates[b]))
    for a, b in LIKE_FOR_LIKE
  }
  paired['default / best hand-written'] = spread(
    per_round(rates['tensorfx'], best_each_round)
  )
  paired['best tensorfx / best hand-written'] = spread(
    per_round(rates[tensorfx_best], best_each_round)
  )
  paired['default / naive'] = spread(
    per_round(rates['tensorfx'], rates['keras-naive'])
  )
  return {
    'batch': batch,
    'rates': rates,
    'medians': medians,
    'best_hand_written': best_name,
    'best_tensorfx': tensorfx_best,
    # Every ratio is the median of per-round ratios (`paired` has each
    # one's quartiles and count). Targets: default >= 0.95x, best >= 1.0x.
    'vs_best_hand_written': paired['default / best hand-written']['median'],
    'best_vs_best_hand_written': paired['best tensorfx / best hand-written'][
      'median'
    ],
    'like_for_like': {
      f'{a} / {b}': paired[f'{a} / {b}']['median'] for a, b in LIKE_FOR_LIKE
    },
    'vs_naive': paired['default / naive']['median'],
    'paired': paired,
    'vs_ceiling': {n: m / medians['ceiling'] for n, m in medians.items()},
  }, model_dir


def _one_pass(dataset):
  start, count = time.perf_counter(), 0
  for batch in dataset:
    count += int(tf.shape(batch['label'])[0])
  return count / (time.perf_counter() - start), count


def input_only(files, stats, batch, rounds):
  """Section 6: reading + parsing only, no model, no transform."""
  from tensorfx import data

  schema = data.Schema.load(files['schema'])
  pipelines = {
    'tensorfx': lambda: data.ExamplesDataSource(files['tfrecord'], schema).read(
      batch
    ),
    'hand-written': lambda: ctr_model.tuned_pipeline(
      files['tfrecord'], batch, stats, repeat=False, preprocess=False
    ),
  }
  for make in pipelines.values():
    _one_pass(make())  # Warm-up: file cache, thread pools.
  rates = {name: [] for name in pipelines}
  for _ in range(rounds):
    for name, make in pipelines.items():
      rate, count = _one_pass(make())
      rates[name].append(rate)
  medians = {name: _median(r) for name, r in rates.items()}
  return {
    'batch': batch,
    'rows': count,
    'rates': rates,
    'medians': medians,
    'ratio': medians['tensorfx'] / medians['hand-written'],
  }


def _time_to_first_step(command):
  """(wall, CPU) seconds from starting `command` to its `step 1` line.

  The command starts with the environment this script was started with
  (`TF_USE_LEGACY_KERAS` as the shell had it): each probe starts as it
  would from a shell.

  The CPU seconds are read from /proc as the line arrives: close to the
  wall time, they show the start is one busy core, not waiting (on this
  shared machine they swing with the wall time; only the rotation and the
  rounds tame that). The process is killed (by PID) once the line is seen:
  what it does after its first step is not measured.
  """
  environ = {k: v for k, v in os.environ.items() if k != 'TF_USE_LEGACY_KERAS'}
  if _KERAS_CHOICE is not None:
    environ['TF_USE_LEGACY_KERAS'] = _KERAS_CHOICE
  start = time.perf_counter()
  process = subprocess.Popen(
    command,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE,
    text=True,
    cwd=ROOT,
    env=environ,
  )
  seen = cpu = None
  lines = []
  try:
    for line in process.stderr:
      lines.append(line)
      if _FIRST_STEP.search(line):
        seen = time.perf_counter() - start
        cpu = cpu_split.cpu_seconds(process.pid)
        break
  finally:
    process.kill()
    process.wait(timeout=60)
    process.stderr.close()
  if seen is None:
    raise RuntimeError(f'{command[2:4]} failed:\n{"".join(lines[-20:])}')
  return seen, cpu


def startup(files, analysis, args, rounds, workdir):
  """Section 7."""
  help_times = []
  for _ in range(max(rounds, 1 if args.quick else 3)):
    start = time.perf_counter()
    subprocess.run(
      [sys.executable, '-m', 'tensorfx', '--help'],
      check=True,
      stdout=subprocess.DEVNULL,
      cwd=ROOT,
    )
    help_times.append(time.perf_counter() - start)
  imported = subprocess.run(
    [
      sys.executable,
      '-c',
      'import sys\nfrom tensorfx.tools import _main\n'
      '_main.build_parser()\nprint("tensorflow" in sys.modules)',
    ],
    capture_output=True,
    text=True,
    check=True,
    cwd=ROOT,
  ).stdout.strip()
  probe = [sys.executable, os.path.join(HERE, 'ctr_model.py')]
  common = [
    '--data',
    args.data,
    '--rows',
    str(args.rows),
    '--shards',
    str(args.shards),
    '--analysis',
    analysis,
  ]
  first = {'tensorfx': [], 'hand-written': []}
  cpu = {'tensorfx': [], 'hand-written': []}
  for round_ in range(rounds):
    # Each round reverses the order: neither kind always goes first.
    for kind in _rotated(list(first), round_):
      output = os.path.join(workdir, f'startup-{kind}-{round_}')
      wall, used = _time_to_first_step(
        probe + [kind, *common, '--output', output]
      )
      first[kind].append(wall)
      cpu[kind].append(used)
  medians = {k: _median(v) for k, v in first.items()}
  cpu_medians = {k: _median(v) for k, v in cpu.items()}
  return {
    'help_seconds': _median(help_times),
    'help_imports_tensorflow': imported == 'True',
    'first_step_seconds': first,
    'medians': medians,
    'ratio': medians['tensorfx'] / medians['hand-written'],
    'first_step_cpu_seconds': cpu,
    'cpu_medians': cpu_medians,
    'cpu_ratio': (cpu_medians['tensorfx'] / cpu_medians['hand-written']),
  }


_PASS = """
import resource, sys, json
sys.path.insert(0, {here!r})
import tensorflow as tf
import ctr_model
kind, schema, stats, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if kind == 'tensorfx':
  from tensorfx import data
  dataset = data.ExamplesDataSource(files, data.Schema.load(schema)).read(1024)
else:
  dataset = ctr_model.tuned_pipeline(files, 1024, json.load(open(stats)),
                                     repeat=False, preprocess=False)
# The imports' own peak (TensorFlow's libraries) is the same for both.
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
count = 0
for batch in dataset:
  count += int(tf.shape(batch['label'])[0])
print(count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, before)
"""


def memory(files, rounds):
  """Section 8: peak RSS of a full pass, at a quarter and all of the data."""
  quarter = files['tfrecord'][: max(1, len(files['tfrecord']) // 4)]
  script = _PASS.format(here=HERE)
  results = {}
  for label, shard_files in (('quarter', quarter), ('all', files['tfrecord'])):
    peaks = {'tensorfx': [], 'hand-written': []}
    growths = {'tensorfx': [], 'hand-written': []}
    rows = None
    for _ in range(max(1, rounds - 1)):
      for kind in peaks:  # noqa: PLC0206  (appends to two dicts under one key)
        out = subprocess.run(
          [
            sys.executable,
            '-c',
            script,
            kind,
            files['schema'],
            files['stats'],
            *shard_files,
          ],
          capture_output=True,
          text=True,
          check=True,
        ).stdout.split()
        rows = int(out[0])
        peaks[kind].append(int(out[1]) / 1024)
        growths[kind].append((int(out[1]) - int(out[2])) / 1024)
    medians = {k: _median(v) for k, v in peaks.items()}
    results[label] = {
      'rows': rows,
      'peak_rss_mib': medians,
      'pass_growth_mib': {k: _median(v) for k, v in growths.items()},
      'ratio': medians['tensorfx'] / medians['hand-written'],
    }
  results['growth'] = {
    k: results['all']['peak_rss_mib'][k] / results['quarter']['peak_rss_mib'][k]
    for k in ('tensorfx', 'hand-written')
  }
  return results


def serving(model_dir, files, rounds):
  """Section 9: predictions/s, prediction.Model against the raw signature."""
  from tensorfx import prediction

  with open(files['csv'][0]) as f:
    lines = [line.rstrip('\n') for _, line in zip(range(1024), f)]
  model = prediction.Model.load(model_dir)
  signature = tf.saved_model.load(model_dir).signatures['serving_default']
  results = {}
  for batch, reps in ((1, 200), (1024, 20)):
    instances = lines[:batch]
    calls = {
      'tensorfx': lambda instances=instances: model.predict(instances),
      'raw-signature': lambda instances=instances: {
        k: v.numpy() for k, v in signature(csv=tf.constant(instances)).items()
      },
    }
    for call in calls.values():
      call()
    rates = {name: [] for name in calls}
    for _ in range(rounds):
      for name, call in calls.items():
        start = time.perf_counter()
        for _ in range(reps):
          call()
        rates[name].append(reps * batch / (time.perf_counter() - start))
    medians = {k: _median(v) for k, v in rates.items()}
    results[str(batch)] = {
      'rates': rates,
      'medians': medians,
      'ratio': medians['tensorfx'] / medians['raw-signature'],
    }
  return results


_TRAINING_COLUMNS = (
  ('tensorfx', 'tensorfx default'),
  ('tensorfx-nocache', '--cache none'),
  ('tensorfx-xla', '--jit-compile --cache none'),
  ('tensorfx-xla-cache', '--jit-compile --cache memory'),
  ('keras-naive', 'Keras fit naive'),
  ('keras-tuned', 'Keras fit tuned'),
  ('loop', 'loop'),
  ('loop-xla', 'loop XLA'),
  ('loop-cache', 'loop cached'),
  ('loop-xla-cache', 'loop XLA cached'),
  ('ceiling', 'compute ceiling'),
)


def _training_markdown(result):
  lines = [
    '**Training** (examples/s; in brackets the ratio to the compute '
    f'ceiling; {result.get("train_rows", 0):,} rows an epoch, '
    'measured after the first)',
    '',
    '| variant | '
    + ' | '.join(f'batch {t["batch"]}' for t in result['training'])
    + ' |',
    '| --- |' + ' ---: |' * len(result['training']),
  ]
  for name, label in _TRAINING_COLUMNS:
    cells = [
      f'{t["medians"][name]:,.0f} ({t["vs_ceiling"][name]:.2f})'
      for t in result['training']
    ]
    lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
  lines += [
    '',
    '**Training ratios** (each the median of per-round paired '
    'ratios; in brackets the interquartile range and the number of '
    'pairs; * where that range includes 1.0: no difference shown)',
    '',
  ]
  names = list(result['training'][0]['paired'])
  lines += [
    '| ratio | '
    + ' | '.join(f'batch {t["batch"]}' for t in result['training'])
    + ' |',
    '| --- |' + ' ---: |' * len(result['training']),
  ]
  for name in names:
    cells = []
    for t in result['training']:
      p = t['paired'][name]
      cells.append(
        f'**{p["median"]:.2f}x** ({p["q1"]:.2f}-{p["q3"]:.2f}, '
        f'n={p["pairs"]}){" *" if p["includes_one"] else ""}'
      )
    lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
  return lines


def markdown(result):
  """The Markdown tables of a result (of the sections it has)."""
  load = result.get('load', {})
  lines = [
    f'Reference workload: {result["rows"]:,} rows in {result["shards"]} '
    f'TFRecord shards; {result["cpus"]} CPU cores, TensorFlow '
    f'{result["tensorflow"]}, Python {result["python"]}; medians of '
    f'{result["rounds"]} interleaved rounds; load average '
    f'{load.get("start", "?")} at the start, {load.get("end", "?")} at '
    'the end.',
    '',
  ]
  if result.get('training'):
    lines += _training_markdown(result)
  if 'input' in result:
    i = result['input']
    lines += [
      '',
      f'**Input only** (TFRecord, parse, batch {i["batch"]}; examples/s)',
      '',
      '| tensorfx | hand-written tuned | ratio |',
      '| ---: | ---: | ---: |',
      f'| {i["medians"]["tensorfx"]:,.0f} | '
      f'{i["medians"]["hand-written"]:,.0f} | '
      f'**{i["ratio"]:.2f}x** |',
    ]
  if 'startup' in result:
    s = result['startup']
    lines += [
      '',
      '**Start-up** (seconds; process start to the first '
      'training step, wall and CPU)',
      '',
      '| `tensorfx --help` | imports TensorFlow | first step: '
      'tensorfx | first step: hand-written | ratio |',
      '| ---: | :---: | ---: | ---: | ---: |',
      f'| {s["help_seconds"]:.2f} | '
      f'{"yes" if s["help_imports_tensorflow"] else "no"} | '
      f'{s["medians"]["tensorfx"]:.1f} wall, '
      f'{s["cpu_medians"]["tensorfx"]:.1f} CPU | '
      f'{s["medians"]["hand-written"]:.1f} wall, '
      f'{s["cpu_medians"]["hand-written"]:.1f} CPU | '
      f'**{s["ratio"]:.2f}x** wall, **{s["cpu_ratio"]:.2f}x** CPU |',
    ]
  if 'memory' in result:
    mem = result['memory']
    lines += [
      '',
      '**Peak RSS of a full pass** (MiB; in brackets, how much '
      'the pass raised the peak left by the imports)',
      '',
      '| rows | tensorfx | hand-written | ratio |',
      '| ---: | ---: | ---: | ---: |',
    ]
    for label in ('quarter', 'all'):
      r = mem[label]
      g = r.get('pass_growth_mib', {})
      lines.append(
        f'| {r["rows"]:,} | {r["peak_rss_mib"]["tensorfx"]:,.0f} '
        f'(+{g.get("tensorfx", 0):,.0f}) | '
        f'{r["peak_rss_mib"]["hand-written"]:,.0f} '
        f'(+{g.get("hand-written", 0):,.0f}) | '
        f'**{r["ratio"]:.2f}x** |'
      )
    g = mem['growth']
    lines.append(
      f'| growth (all / quarter) | {g["tensorfx"]:.2f}x | '
      f'{g["hand-written"]:.2f}x | |'
    )
  if 'serving' in result:
    lines += [
      '',
      '**Serving** (predictions/s, CSV instances)',
      '',
      '| batch | prediction.Model.predict | raw signature | ratio |',
      '| ---: | ---: | ---: | ---: |',
    ]
    for batch, r in result['serving'].items():
      lines.append(
        f'| {batch} | {r["medians"]["tensorfx"]:,.0f} | '
        f'{r["medians"]["raw-signature"]:,.0f} | '
        f'**{r["ratio"]:.2f}x** |'
      )
  return '\n'.join(lines) + '\n'


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick', action='store_true', help='20,000 rows, batch 1024, one round'
  )
  parser.add_argument('--rows', type=int)
  parser.add_argument('--shards', type=int, default=8)
  parser.add_argument(
    '--train-shards',
    type=int,
    default=1,
    help='shards the training section trains on, for '
    'several epochs (default: %(default)s)',
  )
  parser.add_argument(
    '--batches', type=lambda t: [int(b) for b in t.split(',')]
  )
  parser.add_argument('--rounds', type=int)
  parser.add_argument(
    '--steps',
    type=int,
    help='measured steps per run at batch 1024 (at a '
    'larger batch, fewer: divided by half the batch ratio)',
  )
  parser.add_argument(
    '--sections',
    default='training,input,startup,memory,serving',
    type=lambda t: t.split(','),
  )
  parser.add_argument(
    '--data',
    help='where the generated data goes (default benchmarks/results/data)',
  )
  parser.add_argument(
    '--output', help='where results go (default benchmarks/results)'
  )
  args = parser.parse_args(argv)
  args.rows = args.rows or (20000 if args.quick else 1000000)
  args.shards = 4 if args.quick and args.shards == 8 else args.shards
  args.batches = args.batches or ([1024] if args.quick else [1024, 4096])
  args.rounds = args.rounds or (1 if args.quick else 8)
  args.steps = args.steps or (20 if args.quick else 100)
  args.data = args.data or os.path.join(HERE, 'results', 'data')
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)

  # Fewest rounds of the short sections: one in --quick, three otherwise.
  floor = 1 if args.quick else 3
  # The machine may be shared: its load is reported beside the figures.
  load_start = _load()
  files = ctr_data.generate(args.data, args.rows, args.shards)
  with open(files['stats']) as f:
    stats = json.load(f)
  analysis = ctr_model.analyze(
    files, os.path.join(os.path.dirname(files['schema']), 'analysis')
  )
  result = {
    'rows': args.rows,
    'shards': args.shards,
    'rounds': args.rounds,
    'cpus': os.cpu_count(),
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'training': [],
    'time': time.strftime('%Y-%m-%d %H:%M:%S'),
  }
  with tempfile.TemporaryDirectory(prefix='tensorfx-bench-') as workdir:
    model_dir = None
    if 'training' in args.sections:
      train_files = files['tfrecord'][: args.train_shards]
      train_rows = args.rows * len(train_files) // args.shards
      result['train_rows'] = train_rows
      for batch in args.batches:
        # Fewer, larger steps at larger batches; one call per window. A
        # larger batch also runs more examples/s, so the measured steps
        # shrink by half the batch ratio only: each run is measured for
        # about as long at every batch size (at 4096, 2 windows measured
        # swing by +-10% on a shared machine; 8 by a few percent).
        scale = max(1, batch // 1024)
        window = max(5, (10 if args.quick else 50) // scale)
        steps = max(window, args.steps // max(1, scale // 2) // window * window)
        # Measured from the first window that starts after the first
        # epoch (caches filled; the first window also traces).
        epoch_steps = -(-train_rows // batch)
        warmup = window * (-(-epoch_steps // window) + 1)
        section, model_dir = training(
          files,
          analysis,
          stats,
          batch,
          args.rounds,
          window,
          warmup,
          steps,
          workdir,
          train_files,
        )
        section.update(
          window=window, warmup=warmup, steps=steps, epoch_steps=epoch_steps
        )
        result['training'].append(section)
        _write(out, result)
    if 'input' in args.sections:
      result['input'] = input_only(files, stats, 1024, max(args.rounds, floor))
      _write(out, result)
    if 'startup' in args.sections:
      # Short probes, noisy on a shared machine: at least 5 rounds (2 in
      # --quick, which shows the section runs, not its figure).
      result['startup'] = startup(
        files, analysis, args, max(args.rounds, 2 if args.quick else 5), workdir
      )
      _write(out, result)
    if 'memory' in args.sections:
      result['memory'] = memory(files, args.rounds)
      _write(out, result)
    if 'serving' in args.sections:
      if model_dir is None:
        # Without the training section, a short training makes the model.
        model_dir = ctr_model.tensorfx_train(
          files,
          analysis,
          os.path.join(workdir, 'serving-model'),
          1024,
          20,
          10,
          train=files['tfrecord'][:1],
        ).path
      result['serving'] = serving(model_dir, files, max(args.rounds, floor))
  result['load'] = {'start': load_start, 'end': _load()}
  print(_write(out, result))
  return 0


def _write(out, result):
  """Writes compare.json and compare.md; returns the table.

  Written after each section: a section that fails later loses nothing
  measured before it.
  """
  with open(os.path.join(out, 'compare.json'), 'w') as f:
    json.dump(result, f, indent=2)
  table = markdown(result)
  with open(os.path.join(out, 'compare.md'), 'w') as f:
    f.write(table)
  return table


def _load():
  """The 1, 5 and 15 minute load averages (`uptime`'s), as text."""
  return ', '.join(f'{value:.2f}' for value in os.getloadavg())


if __name__ == '__main__':
  sys.exit(main())
