"""Embedding tables: sparse against dense updates, one process against a cluster.

Trains the recommendation sample (`samples/recommend`: raw user and item
ids, 1,048,576-row tables of 16 floats, history sharing the item table)
with `tensorfx train`, and measures training examples/s (the trainer's own
`examples_per_sec` summaries, the first window, which holds tracing,
dropped) and the peak RSS (VmHWM) of every process:

1. single node, tables trained by lazy Adam (`--embedding-optimizer
   lazy-adam`: only the rows a step looked up are read and written);
2. single node, the same tables trained by Keras' Adam (`adam`: every row's
   moments decay each step, a pass over both tables);
3. a local cluster of 2 workers and 2 parameter servers (plus the chief),
   lazy Adam: each table split over the two servers.

Variants run interleaved (1 2 3 1 2 3 ...) and the medians are reported.

  python benchmarks/embeddings.py --rounds 3   # 500,000 interactions, ~15 min
  python benchmarks/embeddings.py --quick      # 40,000 interactions, ~5 min

Writes benchmarks/results/embeddings.json and embeddings.md and prints the
table. No timing is asserted anywhere.
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  found = []
  for path in glob.glob(os.path.join(output, 'summaries', 'train',
                                     'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == 'examples_per_sec' and event.step > warmup:
          found.append(float(tf.make_ndarray(value.tensor)))
  return found


def train(variant, data, analysis, output, steps, window, batch):
  """Runs one variant; returns examples/s and peak RSS per process."""
  command = [
      sys.executable, '-m', 'tensorfx', 'train', '--module', 'trainer',
      '--output', output,
      '--data-train', os.path.join(data, 'train-*.tfrecord.gz'),
      '--data-eval', os.path.join(data, 'eval.tfrecord.gz'),
      '--data-schema', 'schema.yaml', '--data-features', 'features.yaml',
      '--data-metadata', analysis, '--hidden-layers:1', '64',
      '--hidden-layers:2', '32', '--batch-size', str(batch),
      '--max-steps', str(steps), '--log-interval-steps', str(window),
      '--checkpoint-interval-secs', '1000000', '--seed', '1',
      '--embedding-optimizer', 'adam' if variant == 'dense-adam'
      else 'lazy-adam']
  if variant == 'cluster':
    command += ['--cluster', 'ps=2,workers=2']
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
  started = time.monotonic()
  process = subprocess.Popen(command, cwd=SAMPLE, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, bufsize=1, start_new_session=True)
  watcher = _Watcher(process, 'process')
  code = watcher.wait(timeout=3600)
  if code != 0:
    raise RuntimeError(f'{variant} failed ({code}):\n' +
                       '\n'.join(watcher.lines[-40:]))
  rates = _rates(output, window)
  with open(os.path.join(output, 'job.yaml')) as f:
    import yaml  # pylint: disable=g-import-not-at-top
    job = yaml.safe_load(f)
  peaks = {name: round(peak) for name, peak in watcher.peaks.items()
           if name != 'process' or variant != 'cluster'}
  return {'examples_per_sec': statistics.mean(rates) if rates else None,
          'windows': len(rates), 'peak_rss_mib': peaks,
          'auc': job.get('metrics', {}).get('auc'),
          'wall_seconds': round(time.monotonic() - started, 1)}


def markdown(result):
  """The Markdown table of a result."""
  lines = [
      f"Recommendation sample, {result['train']:,} training interactions "
      f"({result['distinct_users']:,} users, {result['distinct_items']:,} "
      f"items seen), two tables of {result['capacity']:,} rows x 16 floats "
      f"(64 MiB each), batch {result['batch']}; {result['cpus']} CPU cores, "
      f"no GPU, TensorFlow {result['tensorflow']}, Python "
      f"{result['python']}; medians of {result['rounds']} interleaved "
      'rounds.', '',
      '| variant | steps | examples/s | vs dense Adam | peak RSS (MiB) | '
      'AUC |', '| --- | ---: | ---: | ---: | --- | ---: |']
  dense = result['medians']['dense-adam']['examples_per_sec']
  names = {'lazy-adam': 'single node, lazy Adam',
           'dense-adam': "single node, Keras' Adam (dense)",
           'cluster': '2 workers + 2 ps, lazy Adam'}
  for variant, label in names.items():
    m = result['medians'][variant]
    rss = ', '.join(f'{k} {v:,}' for k, v in m['peak_rss_mib'].items())
    lines.append(
        f"| {label} | {result['steps'][variant]:,} | "
        f"{m['examples_per_sec']:,.0f} | "
        f"**{m['examples_per_sec'] / dense:.1f}x** | {rss} | "
        f"{m['auc']:.3f} |")
  return '\n'.join(lines) + '\n'


def _median_run(runs):
  rates = [r['examples_per_sec'] for r in runs]
  middle = sorted(runs, key=lambda r: r['examples_per_sec'])[len(runs) // 2]
  peaks = {}
  for r in runs:
    for k, v in r['peak_rss_mib'].items():
      peaks.setdefault(k, []).append(v)
  return {'examples_per_sec': statistics.median(rates),
          'peak_rss_mib': {k: round(statistics.median(v))
                           for k, v in sorted(peaks.items())},
          'auc': middle['auc']}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--quick', action='store_true',
                      help='40,000 interactions, fewer steps, one round')
  parser.add_argument('--rounds', type=int)
  parser.add_argument('--batch', type=int, default=256)
  parser.add_argument('--data', help='where the generated data and its '
                      'analysis go (default benchmarks/results/'
                      'recommend-data[-quick])')
  parser.add_argument('--output', help='where results go (default '
                      'benchmarks/results)')
  args = parser.parse_args(argv)
  quick = args.quick
  rounds = args.rounds or 1
  size = ({'users': 30000, 'items': 20000, 'train': 40000, 'eval': 5000}
          if quick else
          {'users': 300000, 'items': 200000, 'train': 500000, 'eval': 10000})
  # Dense Adam sweeps both tables each step: fewer steps measure it.
  window = 50 if quick else 100
  steps = {'lazy-adam': window * (4 if quick else 10),
           'dense-adam': 20 * (3 if quick else 5),
           'cluster': window * (4 if quick else 10)}
  windows = {'lazy-adam': window, 'dense-adam': 20, 'cluster': window}
  data = args.data or os.path.join(
      HERE, 'results', 'recommend-data' + ('-quick' if quick else ''))
  out = args.output or os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)
  summary_path = os.path.join(data, 'oracle.json')
  if not os.path.exists(summary_path):
    subprocess.run([sys.executable, 'generate.py', '--output', data] +
                   [f'--{k}={v}' for k, v in size.items()], cwd=SAMPLE,
                   check=True)
  with open(summary_path) as f:
    summary = json.load(f)
  analysis = os.path.join(data, 'analysis')
  if not os.path.exists(os.path.join(analysis, 'metadata.json')):
    subprocess.run([sys.executable, '-m', 'tensorfx', 'analyze',
                    '--data-train', os.path.join(data, 'train-*.tfrecord.gz'),
                    '--data-schema', 'schema.yaml', '--data-features',
                    'features.yaml', '--output', analysis], cwd=SAMPLE,
                   check=True)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  runs = {v: [] for v in steps}
  with tempfile.TemporaryDirectory(prefix='tensorfx-embeddings-') as work:
    for round_ in range(rounds):
      for variant in steps:
        output = os.path.join(work, f'{variant}-{round_}')
        run = train(variant, data, analysis, output, steps[variant],
                    windows[variant], args.batch)
        print(variant, json.dumps(run), flush=True)
        runs[variant].append(run)
        shutil.rmtree(output, ignore_errors=True)
  result = {
      'train': summary['train'], 'distinct_users': summary['distinct_users'],
      'distinct_items': summary['distinct_items'],
      'oracle_auc': summary['oracle_auc'], 'capacity': 1 << 20,
      'batch': args.batch, 'rounds': rounds, 'steps': steps,
      'cpus': os.cpu_count(), 'tensorflow': tf.__version__,
      'python': platform.python_version(),
      'time': time.strftime('%Y-%m-%d %H:%M:%S'), 'runs': runs,
      'medians': {v: _median_run(r) for v, r in runs.items()}}
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
