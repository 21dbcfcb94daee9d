"""What exact resume costs: step time, checkpoints, and the resume itself.

Every checkpoint of synchronous training carries the input's position
(`input_position`, the batches read), and a resumed run reads those
batches again before it trains (`tensorfx/training/_run/input_position.py`).
What that adds to a job, part by part, measured in one process on the
engine's own objects (a whole job's examples/s swing by 20% on a shared
2-core machine, far more than the differences looked for):

- step: `ModelTrainer`'s step function (`run._step_function`: the
  training loop's calls) with the position counting the batches read
  (`on`) and without (`off`, the engine before exact resume), over one
  iterator, in rotated turns with a second `off` (on, off, off again;
  off, off again, on; ...), `--window` steps a call; the ratios are on /
  off examples per wall second and per CPU second of the process, per
  round (above 1.0: faster with it; the CPU ratio holds steadier on a
  machine other jobs load), and off again / off, what noise alone gives;
- checkpoint: `Checkpoints.save` of the model, optimizer and step with
  the position and without, in turns: bytes, and wall and CPU seconds,
  on / off (above 1.0: slower with it);
- resume: the seconds to the first batch of a new pipeline
  (`build_input`, an empty cache as in a new process) that skips one
  epoch's batches, and two epochs', against one that skips none;
- the alternative, tf.data's iterator checkpoint of the same new pipeline
  halfway through its second epoch: bytes, save and restore seconds.

Workloads: the iris sample (120 rows, batch 16) and a synthetic CSV of the
same schema (`--rows`, 200,000 by default, batch 64), each with `--cache
auto` (which caches both) and `--cache none`; `--seed 1`, shuffled.

  python benchmarks/exact_resume.py               # 12 rounds (about 25 minutes)
  python benchmarks/exact_resume.py --quick       # 20,000 rows, 4 rounds

No timing is asserted anywhere.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('CUDA_VISIBLE_DEVICES', '')

import tensorflow as tf

from tensorfx import data
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training import _builderbase
from tensorfx.training import _state as engine_state
from tensorfx.training._checkpoints import checkpoints as _checkpoints
from tensorfx.training._run import input_position
from tensorfx.training._run import run as _run

IRIS = os.path.join(ROOT, 'samples', 'iris')
_SPECIES = ('setosa', 'versicolor', 'virginica')


def write_csv(path, rows, seed=0):
  """`rows` iris-like records (the sample's schema), for a larger workload."""
  if os.path.exists(path):
    return path
  rng = random.Random(seed)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path + '.tmp', 'w') as f:
    for _ in range(rows):
      kind = rng.randrange(3)
      f.write(
        f'{_SPECIES[kind]},{4.5 + kind + rng.random():.1f},'
        f'{2 + 2 * rng.random():.1f},{1 + 2 * kind + rng.random():.1f},'
        f'{0.1 + 0.8 * kind + 0.5 * rng.random():.1f}\n'
      )
  os.rename(path + '.tmp', path)
  return path


def dataset_of(train, analysis):
  """The iris schema's `CsvDataSet` of `train`, analyzed once."""

  def make(**options):
    return data.CsvDataSet(
      os.path.join(IRIS, 'schema.yaml'),
      features=os.path.join(IRIS, 'features.yaml'),
      train=train,
      **options,
    )

  if not os.path.exists(os.path.join(analysis, 'metadata.json')):
    make().analyze(analysis)
  return make(metadata=analysis)


def build(dataset, batch, cache, output):
  """The builder and its training interface, as `ModelTrainer` builds them."""
  args, _ = nn.FeedForwardClassificationArguments.parse(
    [
      '--output',
      output,
      '--batch-size',
      str(batch),
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
      '--seed',
      '1',
      '--cache',
      cache,
    ],
    parse_job=True,
  )
  builder = nn.FeedForwardClassification(args, dataset)
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  return builder, interface


def _timed(fn):
  """`(result, wall seconds, this process's CPU seconds)` of `fn()`."""
  wall, cpu = time.perf_counter(), time.process_time()
  result = fn()
  return result, time.perf_counter() - wall, time.process_time() - cpu


class _NotCounted:
  """The engine before exact resume: no position counts the batches."""

  def advance(self, batches):
    del batches


def step_figures(interface, window, rounds, warm):
  """Examples per wall and per CPU second, with the position and without."""
  iterator = iter(interface.dataset)
  limit = float('inf')
  steps = {
    'on': _run._step_function(
      interface, iterator, limit, input_position.InputPosition()
    ),
    'off': _run._step_function(interface, iterator, limit, _NotCounted()),
    # The same as `off`: off again / off is the ratio noise alone gives.
    'off again': _run._step_function(interface, iterator, limit, _NotCounted()),
  }
  steps['on'](warm)
  rates = {mode: [] for mode in steps}
  cpu_rates = {mode: [] for mode in steps}
  modes = list(steps)
  for round_ in range(rounds):
    start = round_ % len(modes)
    for mode in modes[start:] + modes[:start]:
      result, wall, cpu = _timed(lambda mode=mode: steps[mode](window))
      examples = result.ran * interface.batch_size
      rates[mode].append(examples / wall)
      cpu_rates[mode].append(examples / cpu)
  return rates, cpu_rates


def checkpoint_figures(builder, interface, directory, rounds):
  """Bytes and seconds of `Checkpoints.save`, with the position and without."""
  model = engine_state.checkpointed(builder, _builderbase.engine_of(builder))
  position = input_position.InputPosition()
  position.advance(1234)
  savers = {
    'on': _checkpoints.Checkpoints(
      os.path.join(directory, 'on'),
      interface.global_step,
      max_to_keep=2,
      model=model,
      input_position=position,
      optional=[input_position.NAME],
    ),
    'off': _checkpoints.Checkpoints(
      os.path.join(directory, 'off'),
      interface.global_step,
      max_to_keep=2,
      model=model,
    ),
  }
  seconds = {'on': [], 'off': []}
  cpu_seconds = {'on': [], 'off': []}
  paths = {}
  for round_ in range(rounds + 1):
    interface.global_step.assign_add(1)
    for mode in ('on', 'off') if round_ % 2 == 0 else ('off', 'on'):
      paths[mode], wall, cpu = _timed(savers[mode].save)
      if round_:  # The first save traces TensorFlow's save function.
        seconds[mode].append(wall)
        cpu_seconds[mode].append(cpu)
  sizes = {mode: _bytes(path) for mode, path in paths.items()}
  return seconds, cpu_seconds, sizes


def resume_figures(builder, batch, epoch_batches, rounds):
  """Seconds to a new pipeline's first batch after skipping 0, 1, 2 epochs.

  Each pipeline is built before the clock starts (its cache empty, as in
  a new process); medians of `rounds` rotated rounds.
  """
  skips = {f'skip {n} epochs': n * epoch_batches for n in (0, 1, 2)}
  seconds = {name: [] for name in skips}
  names = list(skips)
  for round_ in range(rounds):
    start = round_ % len(names)
    for name in names[start:] + names[:start]:
      dataset = builder.build_input('train', batch, None, True)
      dataset = dataset.skip(skips[name])
      began = time.perf_counter()
      next(iter(dataset))
      seconds[name].append(time.perf_counter() - began)
  return {name: statistics.median(values) for name, values in seconds.items()}


def iterator_checkpoint(builder, batch, read, directory):
  """tf.data's own iterator checkpoint of a new pipeline, `read` batches in."""
  options = tf.data.Options()
  # The tf.Transform graph's tables are constants: nothing to save.
  options.experimental_external_state_policy = (
    tf.data.experimental.ExternalStatePolicy.IGNORE
  )

  def pipeline():
    return builder.build_input('train', batch, None, True).with_options(options)

  iterator = iter(pipeline())
  for _ in range(read):
    next(iterator)
  checkpoint = tf.train.Checkpoint(iterator=iterator)
  began = time.perf_counter()
  path = checkpoint.write(os.path.join(directory, 'iterator'))
  save = time.perf_counter() - began
  again = iter(pipeline())
  began = time.perf_counter()
  tf.train.Checkpoint(iterator=again).read(path).assert_consumed()
  next(again)
  restore = time.perf_counter() - began
  return {'bytes': _bytes(path), 'save_s': save, 'restore_s': restore}


def _bytes(prefix):
  directory, name = os.path.split(prefix)
  return sum(
    os.path.getsize(os.path.join(directory, f))
    for f in os.listdir(directory)
    if f.startswith(name + '.')
  )


def _ratios(on, off):
  """Median and quartiles of the per-pair ratios on / off, and n."""
  ratios = [a / b for a, b in zip(on, off)]
  q1, median, q3 = statistics.quantiles(ratios, n=4, method='inclusive')
  return {'median': median, 'q1': q1, 'q3': q3, 'n': len(ratios)}


def measure(name, dataset, rows, batch, cache, args, directory):
  builder, interface = build(dataset, batch, cache, directory)
  epoch_batches = -(-rows // batch)
  # Past two epochs before measuring: the cache (if any) filled, the
  # loop traced.
  rates, cpu_rates = step_figures(
    interface, args.window, args.rounds, 2 * epoch_batches + args.window
  )
  seconds, cpu_seconds, sizes = checkpoint_figures(
    builder, interface, os.path.join(directory, 'checkpoints'), args.rounds
  )
  return {
    'workload': name,
    'examples_per_s': {m: statistics.median(v) for m, v in rates.items()},
    'step_ratio': _ratios(rates['on'], rates['off']),
    'step_cpu_ratio': _ratios(cpu_rates['on'], cpu_rates['off']),
    'noise_ratio': _ratios(rates['off again'], rates['off']),
    'noise_cpu_ratio': _ratios(cpu_rates['off again'], cpu_rates['off']),
    'save_s': {m: statistics.median(v) for m, v in seconds.items()},
    'save_ratio': _ratios(seconds['on'], seconds['off']),
    'save_cpu_ratio': _ratios(cpu_seconds['on'], cpu_seconds['off']),
    'checkpoint_bytes': sizes,
    'epoch_batches': epoch_batches,
    'resume_s': resume_figures(
      builder, batch, epoch_batches, max(3, args.rounds // 4)
    ),
    'iterator_checkpoint': iterator_checkpoint(
      builder, batch, epoch_batches * 3 // 2, directory
    ),
  }


def _print(figure):
  def ratio(r):
    star = '*' if r['q1'] <= 1.0 <= r['q3'] else ''
    return (
      f'{r["median"]:.3f}x{star} (IQR {r["q1"]:.3f}-{r["q3"]:.3f}, n={r["n"]})'
    )

  rates, saves = figure['examples_per_s'], figure['save_s']
  sizes, resume = figure['checkpoint_bytes'], figure['resume_s']
  alternative = figure['iterator_checkpoint']
  print(f'{figure["workload"]} ({figure["epoch_batches"]:,} batches an epoch):')
  print(
    f'  step: {rates["on"]:,.0f} / {rates["off"]:,.0f} examples/s '
    f'(on / off), wall {ratio(figure["step_ratio"])}, per CPU second '
    f'{ratio(figure["step_cpu_ratio"])}'
  )
  print(
    f'  noise (off again / off): wall {ratio(figure["noise_ratio"])}, '
    f'per CPU second {ratio(figure["noise_cpu_ratio"])}'
  )
  print(
    f'  checkpoint: {sizes["on"]:,} / {sizes["off"]:,} bytes, save '
    f'{saves["on"] * 1000:.1f} / {saves["off"] * 1000:.1f} ms, wall '
    f'{ratio(figure["save_ratio"])}, CPU {ratio(figure["save_cpu_ratio"])}'
  )
  print(
    '  resume, to the first batch of a new pipeline: '
    + ', '.join(f'{k} {v:.2f} s' for k, v in resume.items())
  )
  print(
    f'  tf.data iterator checkpoint instead: {alternative["bytes"]:,} bytes, '
    f'save {alternative["save_s"] * 1000:.1f} ms, restore '
    f'{alternative["restore_s"] * 1000:.1f} ms'
  )


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', type=int, default=200000)
  parser.add_argument('--rounds', type=int, default=12)
  parser.add_argument(
    '--window', type=int, default=2000, help='steps a call (%(default)s)'
  )
  parser.add_argument('--quick', action='store_true')
  parser.add_argument('--data', default=os.path.join(HERE, 'results', 'data'))
  parser.add_argument('--output', help='also write the figures to this JSON')
  args = parser.parse_args(argv)
  if args.quick:
    args.rows, args.rounds = 20000, 4
  csv = write_csv(
    os.path.join(args.data, f'iris_like_{args.rows}', 'train.csv'), args.rows
  )
  iris = os.path.join(IRIS, 'data', 'train.csv')
  with open(iris) as f:
    iris_rows = sum(1 for line in f if line.strip())
  workloads = [
    (
      'iris',
      lambda: dataset_of(iris, os.path.join(args.data, 'iris_analysis')),
      iris_rows,
      16,
    ),
    (
      f'{args.rows:,} rows',
      lambda: dataset_of(csv, os.path.join(os.path.dirname(csv), 'analysis')),
      args.rows,
      64,
    ),
  ]
  figures = []
  with tempfile.TemporaryDirectory(prefix='tensorfx-exact-') as directory:
    for name, dataset, rows, batch in workloads:
      for cache in ('auto', 'none'):
        figure = measure(
          f'{name}, --cache {cache}',
          dataset(),
          rows,
          batch,
          cache,
          args,
          os.path.join(directory, str(len(figures))),
        )
        _print(figure)
        figures.append(figure)
  if args.output:
    with open(args.output, 'w') as f:
      json.dump(figures, f, indent=2)
  return 0


if __name__ == '__main__':
  sys.exit(main())
