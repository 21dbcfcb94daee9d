"""Embedding tables: sparse against dense updates, hashed against exact keys.

Trains the recommendation sample (`samples/recommend`: raw user and item
ids, 1,048,576-row tables of 16 floats, history sharing the item table)
with `tensorfx train`, and measures training examples/s (the trainer's own
`examples_per_sec` summaries, the first window, which holds tracing,
dropped) and the peak RSS (VmHWM) of every process:

1. single node, hashed tables trained by lazy Adam (`--embedding-optimizer
   lazy-adam`: only the rows a step looked up are read and written);
2. single node, the same tables trained by Keras' Adam (`adam`: every row's
   moments decay each step, a pass over both tables);
3. a local cluster of 2 workers and 2 parameter servers (plus the chief),
   lazy Adam: each table split over the two servers;
4. and 5. as 1. and 3. with exact-key tables (`hashing: exact`: an index
   gives each admitted id a row of its own).

Then, in this process, lookups/s of one table (1,048,576 rows of 16
floats) hashed and with exact keys: training lookups (count, stamp and,
for exact keys, admit each key) and serving lookups, on batches of the
sample's Zipf-distributed ids.

Variants run interleaved (1 2 3 4 5 1 2 ...) and the medians are reported.

  python benchmarks/embeddings.py --rounds 3   # 500,000 interactions, ~25 min
  python benchmarks/embeddings.py --quick      # 40,000 interactions, ~8 min
  python benchmarks/embeddings.py --variants lazy-adam exact  # a subset

Writes benchmarks/results/embeddings.json and embeddings.md and prints the
tables. No timing is asserted anywhere.
"""

import argparse
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SAMPLE = os.path.join(ROOT, 'samples', 'recommend')
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

_PID = re.compile(r'(\S+) \(pid (\d+)\)')


def _peak_rss_mib(pid):
  """The peak resident set size (VmHWM) of a live process, or None."""
  try:
    with open(f'/proc/{pid}/status') as f:
      for line in f:
        if line.startswith('VmHWM:'):
          return int(line.split()[1]) / 1024
  except OSError:
    return None
  return None


class _Watcher:
  """Reads a process's output and polls the peak RSS of it and its tasks."""

  def __init__(self, process, name):
    self.process = process
    self.lines = []
    self.pids = {name: process.pid}
    self.peaks = {}
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.process.stdout:
      self.lines.append(line.rstrip('\n'))
      if 'started' in line and '(pid' in line:
        self.pids.update((n, int(p)) for n, p in _PID.findall(line))

  def wait(self, timeout):
    deadline = time.monotonic() + timeout
    while self.process.poll() is None:
      for name, pid in list(self.pids.items()):
        peak = _peak_rss_mib(pid)
        if peak is not None:
          self.peaks[name] = max(peak, self.peaks.get(name, 0.0))
      if time.monotonic() > deadline:
        self.process.kill()
        raise RuntimeError('timed out:\n' + '\n'.join(self.lines[-40:]))
      time.sleep(0.2)
    self._reader.join(timeout=10)
    return self.process.returncode


def _rates(output, warmup):
  import tensorflow as tf

  found = []
  for path in glob.glob(
    os.path.join(output, 'summaries', 'train', 'events.out.tfevents.*')
  ):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == 'examples_per_sec' and event.step > warmup:
          found.append(float(tf.make_ndarray(value.tensor)))
  return found


# variant -> (label, --embedding-optimizer, on a cluster, exact keys).
VARIANTS = {
  'lazy-adam': ('single node, lazy Adam', 'lazy-adam', False, False),
  'dense-adam': ("single node, Keras' Adam (dense)", 'adam', False, False),
  'cluster': ('2 workers + 2 ps, lazy Adam', 'lazy-adam', True, False),
  'exact': ('single node, lazy Adam, exact keys', 'lazy-adam', False, True),
  'cluster-exact': (
    '2 workers + 2 ps, lazy Adam, exact keys',
    'lazy-adam',
    True,
    True,
  ),
}
# Each variant's hashed counterpart, for the "vs hashed" ratios.
HASHED = {'exact': 'lazy-adam', 'cluster-exact': 'cluster'}


def exact_features(directory):
  """Writes the sample's features.yaml with exact keys in every table there."""
  import yaml

  with open(os.path.join(SAMPLE, 'features.yaml')) as f:
    features = yaml.safe_load(f)
  for feature in features['features']:
    if 'capacity' in feature:
      feature['hashing'] = 'exact'
  path = os.path.join(directory, 'features-exact.yaml')
  with open(path, 'w') as f:
    yaml.safe_dump(features, f, sort_keys=False)
  return path


def train(variant, data, analysis, output, steps, window, batch):
  """Runs one variant; returns examples/s and peak RSS per process."""
  _, optimizer, cluster, exact = VARIANTS[variant]
  # The analysis holds for both: a table's options leave the transform be.
  features = (
    exact_features(os.path.dirname(output)) if exact else 'features.yaml'
  )
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    output,
    '--data-train',
    os.path.join(data, 'train-*.tfrecord.gz'),
    '--data-eval',
    os.path.join(data, 'eval.tfrecord.gz'),
    '--data-schema',
    'schema.yaml',
    '--data-features',
    features,
    '--data-metadata',
    analysis,
    '--hidden-layers:1',
    '64',
    '--hidden-layers:2',
    '32',
    '--batch-size',
    str(batch),
    '--max-steps',
    str(steps),
    '--log-interval-steps',
    str(window),
    '--checkpoint-interval-secs',
    '1000000',
    '--seed',
    '1',
    '--embedding-optimizer',
    optimizer,
  ]
  if cluster:
    command += ['--cluster', 'ps=2,workers=2']
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  started = time.monotonic()
  process = subprocess.Popen(
    command,
    cwd=SAMPLE,
    env=env,
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
    bufsize=1,
    start_new_session=True,
  )
  watcher = _Watcher(process, 'process')
  code = watcher.wait(timeout=3600)
  if code != 0:
    raise RuntimeError(
      f'{variant} failed ({code}):\n' + '\n'.join(watcher.lines[-40:])
    )
  rates = _rates(output, window)
  with open(os.path.join(output, 'job.yaml')) as f:
    import yaml

    job = yaml.safe_load(f)
  peaks = {
    name: round(peak)
    for name, peak in watcher.peaks.items()
    if name != 'process' or not cluster
  }
  return {
    'examples_per_sec': statistics.mean(rates) if rates else None,
    'windows': len(rates),
    'peak_rss_mib': peaks,
    'auc': job.get('metrics', {}).get('auc'),
    'wall_seconds': round(time.monotonic() - started, 1),
  }


def lookup_rates(
  ids=300_000, capacity=1 << 20, dim=16, batch=4096, batches=100, seed=1
):
  """Lookups/s of one table, hashed and with exact keys, in this process.

  Keys are `ids` random 40-bit ids drawn with Zipf weights (as the sample's
  users), `batches` batches of `batch` keys. Each table admits a key at its
  second sighting and evicts after 20,000 steps, as the sample's (no sweep
  falls in the measured passes). Per table: a training pass over the
  batches (count, stamp, admit; exact keys also give rows), a second one
  (steady state: the keys are known), then a serving pass (no counting).
  Each pass is one `tf.function` call looping over the batches.

  Returns:
    {mode: {'train_first', 'train', 'serve': keys/s, 'rows': rows held}}.
  """
  import numpy as np
  import tensorflow as tf

  from tensorfx import embeddings

  rng = np.random.default_rng(seed)
  space = np.unique(rng.integers(1, 1 << 40, size=ids))
  weights = 1.0 / np.arange(1, space.size + 1)
  keys = tf.constant(
    space[
      rng.choice(space.size, size=(batches, batch), p=weights / weights.sum())
    ],
    tf.int64,
  )
  spec = [tf.TensorSpec([None, batch], tf.int64)]
  rates = {}
  for mode in ('mod', 'exact'):
    step = tf.Variable(0, dtype=tf.int64)
    table = embeddings.EmbeddingTable(
      f'lookups_{mode}',
      dim=dim,
      capacity=capacity,
      hashing=mode,
      admit_after=2,
      evict_after_steps=20000,
      step_counter=step,
    )
    table.build()

    def loop(training, table=table, step=step):
      @tf.function(input_signature=spec)
      def run(keys):
        def body(i, total):
          vectors = table.lookup(keys[i], training=training)
          if training:
            step.assign_add(1)
          return i + 1, total + tf.reduce_sum(vectors)

        return tf.while_loop(
          lambda i, _: i < tf.shape(keys)[0],
          body,
          [tf.constant(0), tf.constant(0.0)],
        )[1]

      return run  # noqa: B023  (the def above, not a loop variable)

    train, serve = loop(True), loop(False)
    # Traced on one batch; the rows it admits are the measured passes' too.
    train(keys[:1])
    serve(keys[:1])
    timed = {}
    for name, run in (
      ('train_first', train),
      ('train', train),
      ('serve', serve),
    ):
      started = time.perf_counter()
      float(run(keys))
      timed[name] = round(batches * batch / (time.perf_counter() - started))
    timed['rows'] = int(table.live_rows())
    rates[mode] = timed
  return rates


def markdown(result):
  """The Markdown tables of a result."""
  lines = [
    f'Recommendation sample, {result["train"]:,} training interactions '
    f'({result["distinct_users"]:,} users, {result["distinct_items"]:,} '
    f'items seen), two tables of {result["capacity"]:,} rows x 16 floats '
    f'(64 MiB each), batch {result["batch"]}; {result["cpus"]} CPU cores, '
    f'no GPU, TensorFlow {result["tensorflow"]}, Python '
    f'{result["python"]}; medians of {result["rounds"]} interleaved '
    'round(s).',
    '',
    '| variant | steps | examples/s | vs dense Adam | vs hashed | '
    'peak RSS (MiB) | AUC |',
    '| --- | ---: | ---: | ---: | ---: | --- | ---: |',
  ]
  medians = result['medians']
  dense = medians.get('dense-adam', {}).get('examples_per_sec')
  for variant, m in medians.items():
    rss = ', '.join(f'{k} {v:,}' for k, v in m['peak_rss_mib'].items())
    versus_dense = f'**{m["examples_per_sec"] / dense:.1f}x**' if dense else '-'
    hashed = medians.get(HASHED.get(variant), {}).get('examples_per_sec')
    versus_hashed = (
      f'**{m["examples_per_sec"] / hashed:.2f}x**' if hashed else '-'
    )
    lines.append(
      f'| {VARIANTS[variant][0]} | {result["steps"][variant]:,} | '
      f'{m["examples_per_sec"]:,.0f} | {versus_dense} | {versus_hashed} | '
      f'{rss} | {m["auc"]:.3f} |'
    )
  lookups = result.get('lookups')
  if lookups:
    setup = lookups['setup']
    lines += [
      '',
      f'Lookups of one table ({setup["capacity"]:,} rows x '
      f'{setup["dim"]} floats), {setup["batches"]} batches of '
      f'{setup["batch"]:,} keys drawn from {setup["ids"]:,} Zipf-'
      'distributed 40-bit ids, keys/s:',
      '',
      '| keys | training, first pass | training, steady | serving | '
      'rows held |',
      '| --- | ---: | ---: | ---: | ---: |',
    ]
    for mode, label in (('mod', 'hashed (mod)'), ('exact', 'exact')):
      r = lookups[mode]
      lines.append(
        f'| {label} | {r["train_first"]:,} | {r["train"]:,} | '
        f'{r["serve"]:,} | {r["rows"]:,} |'
      )
    h, e = lookups['mod'], lookups['exact']
    lines.append(
      f'| exact / hashed | **{e["train_first"] / h["train_first"]:.2f}x** '
      f'| **{e["train"] / h["train"]:.2f}x** | '
      f'**{e["serve"] / h["serve"]:.2f}x** | |'
    )
  return '\n'.join(lines) + '\n'


def _median_run(runs):
  rates = [r['examples_per_sec'] for r in runs]
  middle = sorted(runs, key=lambda r: r['examples_per_sec'])[len(runs) // 2]
  peaks = {}
  for r in runs:
    for k, v in r['peak_rss_mib'].items():
      peaks.setdefault(k, []).append(v)
  return {
    'examples_per_sec': statistics.median(rates),
    'peak_rss_mib': {
      k: round(statistics.median(v)) for k, v in sorted(peaks.items())
    },
    'auc': middle['auc'],
  }


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick',
    action='store_true',
    help='40,000 interactions, fewer steps, one round',
  )
  parser.add_argument('--rounds', type=int)
  parser.add_argument('--batch', type=int, default=256)
  parser.add_argument(
    '--variants',
    nargs='+',
    choices=list(VARIANTS),
    default=list(VARIANTS),
    help='the training variants to run (default: all)',
  )
  parser.add_argument(
    '--no-lookups', action='store_true', help='skip the lookups/s measurement'
  )
  parser.add_argument(
    '--data',
    help='where the generated data and its '
    'analysis go (default benchmarks/results/'
    'recommend-data[-quick])',
  )
  parser.add_argument(
    '--output', help='where results go (default benchmarks/results)'
  )
  args = parser.parse_args(argv)
  quick = args.quick
  rounds = args.rounds or 1
  size = (
    {'users': 30000, 'items': 20000, 'train': 40000, 'eval': 5000}
    if quick
    else {'users': 300000, 'items': 200000, 'train': 500000, 'eval': 10000}
  )
  # Dense Adam sweeps both tables each step: fewer steps measure it.
  window = 50 if quick else 100
  sparse_steps = window * (4 if quick else 10)
  all_steps = {
    'lazy-adam': sparse_steps,
    'dense-adam': 20 * (3 if quick else 5),
    'cluster': sparse_steps,
    'exact': sparse_steps,
    'cluster-exact': sparse_steps,
  }
  steps = {v: all_steps[v] for v in VARIANTS if v in args.variants}
  windows = {v: 20 if v == 'dense-adam' else window for v in steps}
  data = args.data or os.path.join(
    HERE, 'results', 'recommend-data' + ('-quick' if quick else '')
  )
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)
  summary_path = os.path.join(data, 'oracle.json')
  if not os.path.exists(summary_path):
    subprocess.run(
      [sys.executable, 'generate.py', '--output', data]
      + [f'--{k}={v}' for k, v in size.items()],
      cwd=SAMPLE,
      check=True,
    )
  with open(summary_path) as f:
    summary = json.load(f)
  analysis = os.path.join(data, 'analysis')
  if not os.path.exists(os.path.join(analysis, 'metadata.json')):
    subprocess.run(
      [
        sys.executable,
        '-m',
        'tensorfx',
        'analyze',
        '--data-train',
        os.path.join(data, 'train-*.tfrecord.gz'),
        '--data-schema',
        'schema.yaml',
        '--data-features',
        'features.yaml',
        '--output',
        analysis,
      ],
      cwd=SAMPLE,
      check=True,
    )
  import tensorflow as tf

  runs = {v: [] for v in steps}
  with tempfile.TemporaryDirectory(prefix='tensorfx-embeddings-') as work:
    for round_ in range(rounds):
      for variant in steps:  # noqa: PLC0206  (the key names the output too)
        output = os.path.join(work, f'{variant}-{round_}')
        run = train(
          variant,
          data,
          analysis,
          output,
          steps[variant],
          windows[variant],
          args.batch,
        )
        print(variant, json.dumps(run), flush=True)
        runs[variant].append(run)
        shutil.rmtree(output, ignore_errors=True)
  lookups = None
  if not args.no_lookups:
    setup = {
      'ids': 300_000,
      'capacity': 1 << 20,
      'dim': 16,
      'batch': 4096,
      'batches': 30 if quick else 100,
    }
    lookups = dict(lookup_rates(**setup), setup=setup)
    print('lookups', json.dumps(lookups), flush=True)
  result = {
    'train': summary['train'],
    'distinct_users': summary['distinct_users'],
    'distinct_items': summary['distinct_items'],
    'oracle_auc': summary['oracle_auc'],
    'capacity': 1 << 20,
    'batch': args.batch,
    'rounds': rounds,
    'steps': steps,
    'cpus': os.cpu_count(),
    'tensorflow': tf.__version__,
    'python': platform.python_version(),
    'time': time.strftime('%Y-%m-%d %H:%M:%S'),
    'runs': runs,
    'medians': {v: _median_run(r) for v, r in runs.items()},
    'lookups': lookups,
  }
  name = 'embeddings-quick' if quick else 'embeddings'
  with open(os.path.join(out, f'{name}.json'), 'w') as f:
    json.dump(result, f, indent=2)
  table = markdown(result)
  with open(os.path.join(out, f'{name}.md'), 'w') as f:
    f.write(table)
  print(table)
  return 0


if __name__ == '__main__':
  sys.exit(main())
