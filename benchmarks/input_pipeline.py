"""Input-only throughput: tensorfx's readers against hand-written tf.data.

For each format (CSV, TFRecord, GZIP TFRecord) it reads the same generated
shards (census-like rows: ints, floats, strings) with tensorfx's
`DataSource.read()` and with the tf.data pipeline a careful user would write
by hand, of the same shape: interleave the shards (AUTOTUNE), batch, parse
the batch in one call (`tf.io.decode_csv` with typed defaults,
`tf.io.parse_example`), prefetch. No model, no transform: examples/s of the
input pipeline alone, one full pass each, the two pipelines run in turns
(A B A B ...) after a warm-up pass so both see the same machine; medians
and the ratio tensorfx / hand-written are reported, by wall time and by CPU
time of the process (steadier when other work shares the machine).

  python benchmarks/input_pipeline.py            # 400,000 rows, 7 rounds
  python benchmarks/input_pipeline.py --quick    # 40,000 rows, 5 rounds

Writes benchmarks/results/input_pipeline.json and .md and prints the table.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as tf

from samples.census import generate
from tensorfx import data

SCHEMA = os.path.join(ROOT, 'samples', 'census', 'schema.yaml')


def write_data(directory, rows, shards):
  """Writes `rows` census rows as CSV, TFRecord and GZIP TFRecord shards."""
  directory = os.path.join(directory, f'{rows}-rows-{shards}-shards')
  os.makedirs(directory, exist_ok=True)
  marker = os.path.join(directory, 'complete')
  paths = {
    'csv': [os.path.join(directory, f'part-{i}.csv') for i in range(shards)],
    'tfrecord': [
      os.path.join(directory, f'part-{i}.tfrecord') for i in range(shards)
    ],
    'tfrecord-gzip': [
      os.path.join(directory, f'part-{i}.tfrecord.gz') for i in range(shards)
    ],
  }
  if os.path.exists(marker):
    return paths
  people = generate.people(rows, seed=7)
  for i in range(shards):
    part = people[i::shards]
    generate.write_csv(paths['csv'][i], part)
    serialized = [generate.to_example(r).SerializeToString() for r in part]
    for path, compression in (
      (paths['tfrecord'][i], None),
      (paths['tfrecord-gzip'][i], 'GZIP'),
    ):
      with tf.io.TFRecordWriter(path, compression) as writer:
        for record in serialized:
          writer.write(record)
  open(marker, 'w').close()
  return paths


def tensorfx_pipeline(kind, files, schema, batch_size):
  if kind == 'csv':
    source = data.CsvDataSource(files, schema)
  else:
    source = data.ExamplesDataSource(files, schema)
  return source.read(batch_size)


def hand_written_pipeline(kind, files, schema, batch_size):
  """What a user writes by hand: interleave, batch, parse the batch, prefetch."""
  dtypes = {'integer': tf.int64, 'real': tf.float32, 'discrete': tf.string}
  names = [f.name for f in schema]
  ds = tf.data.Dataset.from_tensor_slices(files)
  if kind == 'csv':
    read = tf.data.TextLineDataset
    defaults = [
      tf.constant(
        [f.default] if f.default is not None else [], dtypes[f.type.value]
      )
      for f in schema
    ]

    def parse(lines):
      return dict(zip(names, tf.io.decode_csv(lines, defaults)))
  else:
    compression = 'GZIP' if kind == 'tfrecord-gzip' else ''

    def read(path):
      return tf.data.TFRecordDataset(path, compression)

    spec = {
      f.name: tf.io.FixedLenFeature([], dtypes[f.type.value]) for f in schema
    }

    def parse(records):
      return tf.io.parse_example(records, spec)

  ds = ds.interleave(
    read,
    cycle_length=min(len(files), 16),
    num_parallel_calls=tf.data.AUTOTUNE,
    deterministic=True,
  )
  ds = ds.batch(batch_size)
  ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return ds.prefetch(tf.data.AUTOTUNE)


def one_pass(dataset):
  """One full pass (every batch pulled to the host).

  Returns:
    `(examples per second, examples per CPU-second of this process, count)`:
    the second is steadier on a machine shared with other work.
  """
  start, cpu = time.perf_counter(), time.process_time()
  count = 0
  for batch in dataset:
    count += int(tf.shape(batch['id'])[0])
  return (
    count / (time.perf_counter() - start),
    count / (time.process_time() - cpu),
    count,
  )


def run(args):
  schema = data.Schema.load(SCHEMA)
  directory = args.data or os.path.join(HERE, 'results', 'data')
  paths = write_data(directory, args.rows, args.shards)
  pipelines = {
    'tensorfx': tensorfx_pipeline,
    'hand-written': hand_written_pipeline,
  }
  results = []
  for kind in args.formats:
    files = paths[kind]
    rates = {name: [] for name in pipelines}
    cpu_rates = {name: [] for name in pipelines}
    counts = {}
    for make in pipelines.values():
      one_pass(make(kind, files, schema, args.batch_size))  # Warm-up.
    for _ in range(args.rounds):
      for name, make in pipelines.items():  # A B A B ...
        rate, cpu_rate, counts[name] = one_pass(
          make(kind, files, schema, args.batch_size)
        )
        rates[name].append(rate)
        cpu_rates[name].append(cpu_rate)
    assert counts['tensorfx'] == counts['hand-written'] == args.rows, counts
    ours = statistics.median(rates['tensorfx'])
    theirs = statistics.median(rates['hand-written'])
    ours_cpu = statistics.median(cpu_rates['tensorfx'])
    theirs_cpu = statistics.median(cpu_rates['hand-written'])
    results.append(
      {
        'format': kind,
        'tensorfx': ours,
        'hand_written': theirs,
        'ratio': ours / theirs,
        'tensorfx_per_cpu_second': ours_cpu,
        'hand_written_per_cpu_second': theirs_cpu,
        'cpu_ratio': ours_cpu / theirs_cpu,
        'runs': rates,
        'cpu_runs': cpu_rates,
      }
    )
    print(
      f'{kind}: tensorfx {ours:,.0f}/s, hand-written {theirs:,.0f}/s, '
      f'ratio {ours / theirs:.2f} (per CPU-second: '
      f'{ours_cpu / theirs_cpu:.2f})',
      file=sys.stderr,
    )
  return results


def markdown(results, args):
  lines = [
    f'Input-only throughput, examples/s (median of {args.rounds} '
    f'interleaved passes over {args.rows:,} rows in {args.shards} shards, '
    f'batch {args.batch_size}); {os.cpu_count()} CPU cores, TensorFlow '
    f'{tf.__version__}, Python {platform.python_version()}.',
    '',
    '| format | tensorfx | hand-written tf.data | ratio | ratio per '
    'CPU-second |',
    '| --- | ---: | ---: | ---: | ---: |',
  ]
  for r in results:
    lines.append(
      f'| {r["format"]} | {r["tensorfx"]:,.0f} | '
      f'{r["hand_written"]:,.0f} | {r["ratio"]:.2f}x | '
      f'{r["cpu_ratio"]:.2f}x |'
    )
  return '\n'.join(lines) + '\n'


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick', action='store_true', help='40,000 rows, 5 rounds: under a minute'
  )
  parser.add_argument('--rows', type=int, help='rows (default 400,000)')
  parser.add_argument('--shards', type=int, default=4)
  parser.add_argument('--batch-size', type=int, default=256)
  parser.add_argument('--rounds', type=int, help='passes per pipeline')
  parser.add_argument(
    '--formats',
    default='csv,tfrecord,tfrecord-gzip',
    type=lambda text: text.split(','),
    help='which formats (default: %(default)s)',
  )
  parser.add_argument(
    '--data', help='where to write the data (default benchmarks/results/data)'
  )
  args = parser.parse_args(argv)
  args.rows = args.rows or (40000 if args.quick else 400000)
  args.rounds = args.rounds or (5 if args.quick else 7)
  results = run(args)
  table = markdown(results, args)
  out = os.path.join(HERE, 'results')
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, 'input_pipeline.json'), 'w') as f:
    json.dump(
      {
        'rows': args.rows,
        'shards': args.shards,
        'batch_size': args.batch_size,
        'rounds': args.rounds,
        'cpus': os.cpu_count(),
        'tensorflow': tf.__version__,
        'results': results,
      },
      f,
      indent=2,
    )
  with open(os.path.join(out, 'input_pipeline.md'), 'w') as f:
    f.write(table)
  print(table)


if __name__ == '__main__':
  main()
