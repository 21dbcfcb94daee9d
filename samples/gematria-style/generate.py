"""Writes a synthetic basic-block throughput dataset as TFRecord files.

Gematria learns the inverse throughput of x86 basic blocks (cycles per
iteration) from records that hold a block and its measurements, each from
a source such as "ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL". The
blocks here are made up: a few to a few dozen instructions drawn from a
small instruction set, whose cost follows a simple machine model (issue
width, memory and branch costs, slow multiplies and divides) that differs
by micro-architecture and between measurement and simulation. The records
of three sources are mixed in one file, as in Gematria's data; training
keeps one of them with `--data-filter`.

Run it from this directory (deterministic for a given --seed):

  python generate.py                        # 1500 training, 300 eval blocks
  python generate.py --train 800 --eval 200 --output /tmp/blocks

Writes, under --output (default data/), GZIP-compressed:
  train.tfrecord.gz    one tf.Example per (block, source), schema.yaml's
                       fields
  eval.tfrecord.gz     the same for other blocks
  more.tfrecord.gz     100 more blocks, with 5 invalid records among them
                       (not a tf.Example, a throughput written as text, no
                       instruction count), for --skip-bad-records
  predict.tfrecord.gz  200 new blocks, without source or throughput
"""

import argparse
import os

# Quiet TensorFlow's start-up lines (it writes the records).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np

# mnemonic: (share, kind); kinds decide the cost.
INSTRUCTIONS = {
  'MOV': (0.22, 'alu'),
  'ADD': (0.12, 'alu'),
  'SUB': (0.06, 'alu'),
  'LEA': (0.07, 'alu'),
  'CMP': (0.07, 'alu'),
  'XOR': (0.05, 'alu'),
  'AND': (0.04, 'alu'),
  'SHL': (0.03, 'alu'),
  'LOAD': (0.13, 'load'),
  'STORE': (0.08, 'store'),
  'JMP': (0.05, 'branch'),
  'IMUL': (0.05, 'multiply'),
  'DIV': (0.03, 'divide'),
}
# Costs (cycles) per micro-architecture: issue width, and per kind.
MACHINES = {
  'ARCH_HASWELL': {
    'width': 4.0,
    'load': 0.5,
    'store': 1.0,
    'branch': 0.5,
    'multiply': 1.0,
    'divide': 22.0,
  },
  'ARCH_SKYLAKE': {
    'width': 4.0,
    'load': 0.5,
    'store': 1.0,
    'branch': 0.5,
    'multiply': 1.0,
    'divide': 14.0,
  },
}
SOURCES = {
  # source: (machine, simulated, share of blocks it measured)
  'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL': (
    'ARCH_HASWELL',
    False,
    0.85,
  ),
  'ithemal: kind=KIND_MEASURED, uarch=ARCH_SKYLAKE': (
    'ARCH_SKYLAKE',
    False,
    0.85,
  ),
  'llvm-mca: kind=KIND_SIMULATED, uarch=ARCH_HASWELL': (
    'ARCH_HASWELL',
    True,
    0.9,
  ),
}
KINDS = ('load', 'store', 'branch', 'multiply', 'divide')


def blocks(count, rng):
  """`count` random blocks: lists of mnemonics."""
  names = list(INSTRUCTIONS)
  shares = np.array([INSTRUCTIONS[n][0] for n in names])
  sizes = np.clip(rng.lognormal(2.2, 0.6, count).astype(int), 2, 60)
  return [
    list(rng.choice(names, size, p=shares / shares.sum())) for size in sizes
  ]


def counts(block):
  kinds = [INSTRUCTIONS[op][1] for op in block]
  return {kind: kinds.count(kind) for kind in KINDS}


def cycles(block, machine, simulated, rng):
  """The block's inverse throughput as `machine` runs it (with noise)."""
  cost = MACHINES[machine]
  found = counts(block)
  value = len(block) / cost['width'] + sum(cost[k] * found[k] for k in KINDS)
  if simulated:
    # The simulator knows no memory: loads and stores cost it nothing.
    value -= cost['load'] * found['load'] + cost['store'] * found['store']
    value *= 1.1
    return max(value, 0.25)
  return value * rng.lognormal(0.0, 0.03)


def example(block_id, block, source=None, throughput=None):
  import tensorflow as tf

  def ints(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

  found = counts(block)
  feature = {
    'block_id': ints(block_id),
    'opcodes': tf.train.Feature(
      bytes_list=tf.train.BytesList(value=[op.encode() for op in block])
    ),
    'num_instructions': ints(len(block)),
    'num_loads': ints(found['load']),
    'num_stores': ints(found['store']),
    'num_branches': ints(found['branch']),
    'num_multiplies': ints(found['multiply']),
    'num_divides': ints(found['divide']),
  }
  if source is not None:
    feature['source'] = tf.train.Feature(
      bytes_list=tf.train.BytesList(value=[source.encode()])
    )
  if throughput is not None:
    feature['throughput'] = tf.train.Feature(
      float_list=tf.train.FloatList(value=[throughput])
    )
  return tf.train.Example(features=tf.train.Features(feature=feature))


def measured(count, rng, first_id):
  """Records of `count` blocks, one per source that measured each."""
  records = []
  for index, block in enumerate(blocks(count, rng)):
    for source, (machine, simulated, share) in SOURCES.items():
      if rng.random() < share:
        records.append(
          example(
            first_id + index,
            block,
            source,
            cycles(block, machine, simulated, rng),
          )
        )
  return records


def write(path, records):
  import tensorflow as tf

  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for record in records:
      writer.write(
        record if isinstance(record, bytes) else record.SerializeToString()
      )


def invalid(records):
  """The records with 5 invalid ones put among them."""
  import tensorflow as tf

  text = tf.train.Example()
  text.CopyFrom(records[0])
  text.features.feature['throughput'].CopyFrom(
    tf.train.Feature(bytes_list=tf.train.BytesList(value=[b'12.5 cycles']))
  )
  uncounted = tf.train.Example()
  uncounted.CopyFrom(records[1])
  del uncounted.features.feature['num_instructions']
  bad = [b'\x0a\x03not a tf.Example', text, uncounted, b'garbage', text]
  mixed = list(records)
  for index, record in zip((3, 20, 60, 100, 101), bad):
    mixed.insert(min(index, len(mixed)), record)
  return mixed


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    '--train',
    type=int,
    default=1500,
    help='training blocks (default: %(default)s)',
  )
  parser.add_argument(
    '--eval',
    type=int,
    default=300,
    help='evaluation blocks (default: %(default)s)',
  )
  parser.add_argument('--seed', type=int, default=7)
  parser.add_argument('--output', default='data')
  args = parser.parse_args()
  rng = np.random.default_rng(args.seed)
  os.makedirs(args.output, exist_ok=True)
  train = measured(args.train, rng, first_id=1)
  write(os.path.join(args.output, 'train.tfrecord.gz'), train)
  first = args.train + 1
  write(
    os.path.join(args.output, 'eval.tfrecord.gz'),
    measured(args.eval, rng, first_id=first),
  )
  first += args.eval
  write(
    os.path.join(args.output, 'more.tfrecord.gz'),
    invalid(measured(100, rng, first_id=first)),
  )
  first += 100
  write(
    os.path.join(args.output, 'predict.tfrecord.gz'),
    [example(first + i, block) for i, block in enumerate(blocks(200, rng))],
  )
  print(
    f'{len(train)} training records of {args.train} blocks in {args.output}/'
  )


if __name__ == '__main__':
  main()
