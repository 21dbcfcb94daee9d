"""Where tensorfx's training step spends time beside a hand-written loop.

`compare.py` measures whole jobs, one after another; on a shared 2-core
machine a job's examples/s swing by 10% from one run to the next, more than
the gaps it looks for. This script takes the parts apart instead, in one
process, all built first and then called in turns (A B C D, B C D A, ...),
a few windows of steps each, so every part meets the same spells of load:

- `loop cached`, `loop XLA cached` -- the hand-written `tf.function` loop
  over the hand-written pipeline cached in memory, without and with XLA
  (`compare.py`'s loop-cache and loop-xla-cache): the best hand-written
  variants on this workload, the ratios' baseline is the faster one;
- `loop on tensorfx's cached pipeline` -- the same loop over the batches
  tensorfx trains on (`ModelBuilder.build_input`: `ExamplesDataSet`'s
  reader, the tf.Transform graph, the `--cache` replay);
- `loop in the engine's loop form` -- the hand-written step inside the
  engine's loop (`_engine.local_loop.make_loop`: a `tf.while_loop`
  fetching an optional batch, stopping on a bad loss);
- `tensorfx default`, `tensorfx --jit-compile` --
  `ModelBuilder.build_graph_interfaces`' own training loop over its own
  pipeline (`--cache auto`, which caches here): the step with its
  gradient-norm summary and global step, everything `ModelTrainer` runs
  in its step calls (its callbacks run between calls, outside
  `compare.py`'s measured time too).

  python benchmarks/step_parts.py                 # batch 4096, 12 rounds
  python benchmarks/step_parts.py --batch 1024 --window 50
  python benchmarks/step_parts.py --parts 'loop cached,tensorfx default'

Prints examples/s (medians) and each part's ratio to the best hand-written
loop. No timing is asserted anywhere.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import ctr_data
import ctr_model
import tensorflow as tf


def _engine_loop(dataset):
  """`run(steps)` of the hand-written step in the engine's loop form."""
  from tensorfx.training._engine import local_loop

  step = ctr_model.hand_step()
  loop = local_loop.make_loop(
    tf.distribute.get_strategy(), lambda batch: step(*batch), float('inf')
  )
  iterator = iter(dataset)
  return lambda steps: loop(iterator, tf.constant(steps, tf.int64))[0].numpy()


def _tensorfx_builder(files, analysis, train, batch, output, extra=()):
  """The benchmark's `ModelBuilder`, with `compare.py`'s flags."""
  from tensorfx import training

  args, _ = training.ModelArguments.parse(
    ['--output', output, '--batch-size', str(batch), '--no-shuffle', *extra],
    parse_job=True,
  )
  return ctr_model.tensorfx_builder_type()(
    args, ctr_model.tensorfx_dataset(files, analysis, train=train)
  )


def _tensorfx_pipeline(files, analysis, train, batch, output):
  """The batches tensorfx trains on, as the hand-written loop's pairs.

  `ModelBuilder.build_input`'s batches, with the `--cache` replay, as
  (inputs, labels).
  """
  builder = _tensorfx_builder(files, analysis, train, batch, output)
  dataset = builder.build_input('train', batch, None, shuffle=False)
  return dataset.map(lambda features: (features, features['label']))


def _tensorfx_engine(files, analysis, train, batch, output, extra=()):
  """`run(steps)` of ModelTrainer's own training loop (its interface)."""
  from tensorfx import training

  builder = _tensorfx_builder(files, analysis, train, batch, output, extra)
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  iterator = iter(interface.dataset)
  return lambda steps: interface.loop(iterator, tf.constant(steps, tf.int64))[
    0
  ].numpy()


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', type=int, default=300000)
  parser.add_argument('--shards', type=int, default=4)
  parser.add_argument('--batch', type=int, default=4096)
  parser.add_argument(
    '--window',
    type=int,
    default=12,
    help='steps per call (default: %(default)s)',
  )
  parser.add_argument('--rounds', type=int, default=12)
  parser.add_argument(
    '--parts',
    type=lambda t: t.split(','),
    help='comma-separated part names (default: all)',
  )
  parser.add_argument('--data', default=os.path.join(HERE, 'results', 'data'))
  parser.add_argument(
    '--output', help='also write the figures to this JSON file'
  )
  args = parser.parse_args(argv)

  files = ctr_data.generate(args.data, args.rows, args.shards)
  with open(files['stats']) as f:
    stats = json.load(f)
  analysis = ctr_model.analyze(
    files, os.path.join(os.path.dirname(files['schema']), 'analysis')
  )
  train = files['tfrecord'][:1]
  batch = args.batch
  epoch_steps = -(-args.rows // args.shards // batch)
  with tempfile.TemporaryDirectory(prefix='tensorfx-parts-') as output:
    parts = {
      'loop cached': lambda: ctr_model.loop_runner(
        ctr_model.cached_pipeline(train, batch, stats)
      ),
      'loop XLA cached': lambda: ctr_model.loop_runner(
        ctr_model.cached_pipeline(train, batch, stats), jit_compile=True
      ),
      "loop on tensorfx's cached pipeline": lambda: ctr_model.loop_runner(
        _tensorfx_pipeline(
          files, analysis, train, batch, os.path.join(output, 'pipeline')
        )
      ),
      "loop in the engine's loop form": lambda: _engine_loop(
        ctr_model.cached_pipeline(train, batch, stats)
      ),
      'tensorfx default': lambda: _tensorfx_engine(
        files, analysis, train, batch, os.path.join(output, 'default')
      ),
      'tensorfx --jit-compile': lambda: _tensorfx_engine(
        files,
        analysis,
        train,
        batch,
        os.path.join(output, 'xla'),
        ('--jit-compile',),
      ),
    }
    if args.parts:
      parts = {name: parts[name] for name in args.parts}
    runs = {}
    for name, make in parts.items():
      runs[name] = make()
      # Traces, and fills the caches (the first epoch and one more).
      runs[name](2 * epoch_steps + 1)
    names = list(runs)
    rates = {name: [] for name in names}
    for round_ in range(args.rounds):
      start = round_ % len(names)
      for name in names[start:] + names[:start]:
        began = time.perf_counter()
        runs[name](args.window)
        rates[name].append(args.window * batch / (time.perf_counter() - began))
  medians = {name: statistics.median(rates[name]) for name in names}
  hand = [name for name in names if name in ('loop cached', 'loop XLA cached')]
  best = max(hand, key=lambda name: medians[name]) if hand else names[0]
  print(
    f'batch {batch}, {args.window} steps a call, medians of '
    f'{args.rounds} rotated rounds (examples/s; ratio to {best}):'
  )
  for name in names:
    print(
      f'  {name:36s} {medians[name]:9,.0f}  '
      f'{medians[name] / medians[best]:.3f}x  (rounds '
      f'{min(rates[name]):,.0f} to {max(rates[name]):,.0f})'
    )
  if args.output:
    with open(args.output, 'w') as f:
      json.dump(
        {
          'batch': batch,
          'window': args.window,
          'rounds': args.rounds,
          'rates': rates,
          'medians': medians,
          'best_hand_written': best,
          'ratios': {name: medians[name] / medians[best] for name in names},
        },
        f,
        indent=2,
      )
  return 0


if __name__ == '__main__':
  sys.exit(main())
