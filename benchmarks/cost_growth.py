"""How cost grows: analysis with the rows, training memory with the tables.

Two sections, each run in fresh processes (one per size), one after the
other:

- **analysis**: `tensorfx analyze` of the census sample's schema and
  features over CSV files of growing size (30k, 300k, 3M rows): wall time
  and peak resident memory (RSS) of the analyzing process;
- **tables**: a model of one hashed embedding table (16 floats a row) and a
  dense output, trained 50 steps by the engine's training graph with the
  sparse optimizer (lazy Adam: two slots a row), at capacities from 2^16 to
  2^22 rows: peak RSS, beside the bytes of the table and its slots.

  python benchmarks/cost_growth.py             # 30k..3M rows, 2^16..2^22
  python benchmarks/cost_growth.py --quick     # 3k, 10k rows; 2^10, 2^12

Writes benchmarks/results/cost_growth.{json,md} and the figure
(`--figure`, default benchmarks/results/cost_growth.png), and prints the
tables. No timing is asserted anywhere.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import analysis_memory  # noqa: E402  (beside this file)

DIM = 16
STEPS = 50

_TRAIN = r"""
import resource, sys, time
import tensorflow as tf
import tf_keras
from tensorfx import embeddings, training
from tensorfx.training._builderbase import engine_of

capacity, steps = int(sys.argv[1]), int(sys.argv[2])


class Builder(training.ModelBuilder):
  def build_input(self, source, batch, epochs, shuffle):
    keys = tf.data.Dataset.range(10**9).map(
        lambda i: (i * 7919) % (capacity * 3))
    return keys.map(lambda k: {'keys': k, 'y': tf.cast(k % 2, tf.float32)}
                    ).batch(batch)

  def build_inference(self, inputs, training):
    if not hasattr(self, 'table'):
      self.table = embeddings.EmbeddingTable('t', dim=DIM,
                                             capacity=capacity)
      self.dense = tf_keras.layers.Dense(1)
    return self.dense(self.table.lookup(inputs['keys'],
                                        training=training))[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    return tf.reduce_mean(tf.square(inferences - inputs['y'])), self.optimizer


builder = Builder(training.ModelArguments.parse(
    ['--batch-size', '256', '--seed', '1']), None)
engine = engine_of(builder)
engine.strategy = tf.distribute.get_strategy()
engine.global_step = tf.Variable(0, dtype=tf.int64, trainable=False)
train = builder.build_training_graph()
start = time.perf_counter()
_, ran = train.loop(iter(train.dataset), tf.constant(steps, tf.int64))
print(int(ran), time.perf_counter() - start,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""".replace('DIM,', f'{DIM},')


def train_tables(capacity):
  """Trains the one-table model in a fresh process: (seconds, peak MiB)."""
  result = subprocess.run(
    [sys.executable, '-c', _TRAIN, str(capacity), str(STEPS)],
    capture_output=True,
    text=True,
    check=False,
    env=dict(
      os.environ,
      TF_CPP_MIN_LOG_LEVEL='2',
      PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
    ),
  )
  if result.returncode:
    sys.exit(result.stderr[-3000:])
  ran, seconds, kib = result.stdout.split()[-3:]
  if int(ran) != STEPS:
    sys.exit(f'trained {ran} steps of {STEPS}')
  return float(seconds), int(kib) / 1024


def _markdown(analysis, tables):
  lines = [
    'Analysis (`tensorfx analyze`, census schema and features, '
    'DirectRunner in-process):',
    '',
    *analysis_memory.table_lines(analysis),
  ]
  lines += [
    '',
    f'Training ({STEPS} steps of 256, one hashed table of {DIM} '
    'floats a row, lazy Adam):',
    '',
    '| table rows | table + slots | peak RSS | over the smallest | time |',
    '| ---: | ---: | ---: | ---: | ---: |',
  ]
  for r in tables:
    lines.append(
      f'| 2^{r["log2"]} ({r["capacity"]:,}) | '
      f'{r["table_mib"]:,.1f} MiB | {r["peak_rss_mib"]:,.0f} MiB | '
      f'+{r["peak_rss_mib"] - tables[0]["peak_rss_mib"]:,.0f} MiB '
      f'| {r["seconds"]:.1f} s |'
    )
  return '\n'.join(lines) + '\n'


def _figure(analysis, tables, path):
  import matplotlib

  matplotlib.use('Agg')
  from matplotlib import pyplot

  figure, (left, right) = pyplot.subplots(1, 2, figsize=(10, 3.8))
  rows = [r['rows'] for r in analysis]
  left.plot(rows, [r['seconds'] for r in analysis], 'o-', color='tab:blue')
  left.set(
    xscale='log',
    xlabel='rows analyzed',
    ylabel='seconds (o)',
    title='Analysis',
    ylim=(0, None),
  )
  memory = left.twinx()
  memory.plot(
    rows, [r['peak_rss_mib'] for r in analysis], 's--', color='tab:orange'
  )
  memory.set(ylabel='peak RSS, MiB (s)', ylim=(0, None))
  capacities = [r['capacity'] for r in tables]
  right.plot(
    capacities,
    [r['peak_rss_mib'] for r in tables],
    's--',
    color='tab:orange',
    label='peak RSS',
  )
  right.plot(
    capacities,
    [
      tables[0]['peak_rss_mib'] - tables[0]['table_mib'] + r['table_mib']
      for r in tables
    ],
    ':',
    color='gray',
    label='smallest run + table and slots',
  )
  right.set(
    xscale='log',
    xlabel='table rows',
    ylabel='MiB',
    title='Training memory',
    ylim=(0, None),
  )
  right.set_xscale('log', base=2)
  right.legend(loc='upper left')
  figure.tight_layout()
  figure.savefig(path, dpi=100)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick',
    action='store_true',
    help='3k and 10k rows, tables of 2^10 and 2^12 rows',
  )
  parser.add_argument(
    '--data',
    help='where to write the CSV files (default benchmarks/results/data)',
  )
  parser.add_argument(
    '--output',
    default=os.path.join(HERE, 'results'),
    help='where the results go',
  )
  parser.add_argument(
    '--figure', help='the PNG (default OUTPUT/cost_growth.png)'
  )
  args = parser.parse_args(argv)
  sizes = [3000, 10000] if args.quick else [30000, 300000, 3000000]
  powers = [10, 12] if args.quick else [16, 18, 20, 22]
  directory = args.data or os.path.join(HERE, 'results', 'data')
  os.makedirs(args.output, exist_ok=True)
  analysis = []
  for rows in sizes:
    with tempfile.TemporaryDirectory() as scratch:
      run = analysis_memory.measure(directory, rows, os.path.join(scratch, 'a'))
    analysis.append(run)
    print(
      f'analysis, {rows:,} rows: {run["seconds"]:.1f} s, '
      f'{run["peak_rss_mib"]:,.0f} MiB',
      file=sys.stderr,
    )
  tables = []
  for power in powers:
    capacity = 2**power
    seconds, peak = train_tables(capacity)
    # The rows (with the default row) and lazy Adam's two slots of each.
    table_mib = (capacity + 1) * DIM * 4 * 3 / 2**20
    tables.append(
      {
        'log2': power,
        'capacity': capacity,
        'table_mib': table_mib,
        'seconds': seconds,
        'peak_rss_mib': peak,
      }
    )
    print(f'training, 2^{power} rows: {peak:,.0f} MiB', file=sys.stderr)
  table = _markdown(analysis, tables)
  figure = args.figure or os.path.join(args.output, 'cost_growth.png')
  _figure(analysis, tables, figure)
  with open(os.path.join(args.output, 'cost_growth.json'), 'w') as f:
    json.dump(
      {
        'analysis': analysis,
        'tables': tables,
        'time': time.time(),
        'cpus': os.cpu_count(),
      },
      f,
      indent=2,
    )
  with open(os.path.join(args.output, 'cost_growth.md'), 'w') as f:
    f.write(table)
  print(table)
  print(f'figure: {figure}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
