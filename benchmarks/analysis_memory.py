"""Peak memory of `tensorfx analyze` at growing data sizes: it must stay flat.

The analysis streams rows through Beam (DirectRunner in-process, the
default) into tf.Transform's combiners; nothing holds the whole data. This
runs `tensorfx analyze` on the census sample's schema and features over CSV
files of increasing size (each size 4 times the previous), each in a fresh
process, and reports the peak resident memory (RSS) of each run and the
growth from the smallest to the largest: flat means bounded memory.

  python benchmarks/analysis_memory.py            # 100k, 400k, 1.6M rows
  python benchmarks/analysis_memory.py --quick    # 10k, 40k rows

Writes benchmarks/results/analysis_memory.json and .md and prints the table.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

CENSUS = os.path.join(ROOT, 'samples', 'census')


def write_data(directory, rows):
  """A census CSV of `rows` rows (generated once, in chunks, then kept)."""
  from samples.census import generate

  path = os.path.join(directory, f'census-{rows}.csv')
  if os.path.exists(path):
    return path
  os.makedirs(directory, exist_ok=True)
  partial = path + '.partial'
  chunk = 100000
  with open(partial, 'w') as out:
    for start in range(0, rows, chunk):
      part = generate.people(
        min(chunk, rows - start), seed=start, first_id=start + 1
      )
      piece = partial + '.chunk'
      generate.write_csv(piece, part)
      with open(piece) as f:
        out.write(f.read())
      os.remove(piece)
  os.rename(partial, path)
  return path


def analyze(path, output):
  """Runs `tensorfx analyze` in a fresh process; (seconds, peak RSS MiB)."""
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'analyze',
    '--data-train',
    path,
    '--data-schema',
    os.path.join(CENSUS, 'schema.yaml'),
    '--data-features',
    os.path.join(CENSUS, 'features.yaml'),
    '--output',
    output,
  ]
  # ru_maxrss of RUSAGE_CHILDREN is the largest child's: measure one child
  # per process by running each analysis from a fresh helper process.
  probe = (
    'import resource, subprocess, sys, time\n'
    'start = time.perf_counter()\n'
    'subprocess.run(sys.argv[1:], check=True,\n'
    '               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n'
    'print(time.perf_counter() - start,\n'
    '      resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n'
  )
  result = subprocess.run(
    [sys.executable, '-c', probe, *command],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'),
  )
  seconds, kib = result.stdout.split()
  return float(seconds), int(kib) / 1024


def measure(directory, rows, output):
  """Analyzes `rows` census rows into `output`; the run's figures, a dict.

  The CSV file is written into `directory` once and kept.
  """
  path = write_data(directory, rows)
  seconds, peak = analyze(path, output)
  return {
    'rows': rows,
    'file_mib': os.path.getsize(path) / 2**20,
    'seconds': seconds,
    'rows_per_second': rows / seconds,
    'peak_rss_mib': peak,
  }


def table_lines(runs):
  """The Markdown table of `measure`'s runs: header and a row each."""
  lines = [
    '| rows | CSV size | time | rows/s | peak RSS |',
    '| ---: | ---: | ---: | ---: | ---: |',
  ]
  for r in runs:
    lines.append(
      f'| {r["rows"]:,} | {r["file_mib"]:,.0f} MiB | '
      f'{r["seconds"]:.1f} s | {r["rows_per_second"]:,.0f} | '
      f'{r["peak_rss_mib"]:,.0f} MiB |'
    )
  return lines


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument(
    '--quick', action='store_true', help='10k and 40k rows: about a minute'
  )
  parser.add_argument(
    '--sizes',
    type=lambda t: [int(s) for s in t.split(',')],
    help='row counts (default 100000,400000,1600000)',
  )
  parser.add_argument(
    '--data', help='where to write the data (default benchmarks/results/data)'
  )
  args = parser.parse_args(argv)
  sizes = args.sizes or (
    [10000, 40000] if args.quick else [100000, 400000, 1600000]
  )
  directory = args.data or os.path.join(HERE, 'results', 'data')
  out = os.path.join(HERE, 'results')
  runs = []
  for rows in sizes:
    run = measure(directory, rows, os.path.join(out, f'analysis-{rows}'))
    runs.append(run)
    print(
      f'{rows:,} rows ({run["file_mib"]:,.0f} MiB): '
      f'{run["seconds"]:.0f} s, peak RSS {run["peak_rss_mib"]:,.0f} MiB',
      file=sys.stderr,
    )
  growth = runs[-1]['peak_rss_mib'] / runs[0]['peak_rss_mib']
  lines = [
    f'`tensorfx analyze` (census schema and features, DirectRunner), peak '
    f'RSS per run; {os.cpu_count()} CPU cores.',
    '',
    *table_lines(runs),
  ]
  lines += [
    '',
    f'Peak RSS from {sizes[0]:,} to {sizes[-1]:,} rows: '
    f'{growth:.2f}x for {sizes[-1] / sizes[0]:.0f}x the data.',
  ]
  table = '\n'.join(lines) + '\n'
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, 'analysis_memory.json'), 'w') as f:
    json.dump(
      {'runs': runs, 'growth': growth, 'time': time.time()}, f, indent=2
    )
  with open(os.path.join(out, 'analysis_memory.md'), 'w') as f:
    f.write(table)
  print(table)
  return 0


if __name__ == '__main__':
  sys.exit(main())
