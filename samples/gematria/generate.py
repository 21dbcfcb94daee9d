"""Writes the sample's data: TFRecord files of BasicBlockWithThroughputProto.

Basic blocks of a few to a dozen x86-like instructions, canonicalized as
Gematria canonicalizes them (mnemonic, prefixes, register, immediate and
address operands), each measured by up to three sources with different
costs, as Gematria's data sets hold them:

  ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL   slow divides, loads
  ithemal: kind=KIND_MEASURED, uarch=ARCH_SKYLAKE   faster divides
  llvm-mca: kind=KIND_SIMULATED, uarch=ARCH_HASWELL memory costs nothing

Files (in --output, default data/): blocks.tfrecord (training),
eval_blocks.tfrecord (evaluation), new_blocks.tfrecord (blocks without
throughputs, to predict) and tokens.txt (every token the blocks use, one
per line: Gematria's --gematria_tokens_file).

  python generate.py [--output DIR] [--blocks N] [--seed S]
"""

import argparse
import os
import random

import gematria_protos as protos
import tensorflow as tf

HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'
SKYLAKE = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_SKYLAKE'
MCA = 'llvm-mca: kind=KIND_SIMULATED, uarch=ARCH_HASWELL'
REGISTERS = ('RAX', 'RBX', 'RCX', 'RDX', 'RSI', 'RDI', 'R8', 'R9')
# mnemonic -> (operands (r: register, i: immediate, m: memory address;
# outputs before '>'), Haswell cycles, Skylake cycles)
INSTRUCTIONS = {
  'MOV': ('r>r', 0.25, 0.25),
  'ADD': ('r>ri', 0.25, 0.25),
  'SUB': ('r>rr', 0.25, 0.25),
  'XOR': ('r>rr', 0.25, 0.25),
  'IMUL': ('r>rr', 1.0, 1.0),
  'LEA': ('r>m', 0.5, 0.5),
  'SHL': ('r>ri', 0.5, 0.5),
  'DIV': ('r>r', 9.0, 6.0),
  'LOAD': ('r>m', 0.5, 0.5),
  'STORE': ('m>r', 1.0, 1.0),
  'CMP': ('>ri', 0.25, 0.25),
  'NOP': ('>', 0.25, 0.25),
}
PREFIXES = ('LOCK', 'REP')
MEMORY_CYCLES = {HASWELL: 1.5, SKYLAKE: 1.0, MCA: 0.0}
SPECIAL = ('_IMMEDIATE_', '_ADDRESS_', '_MEMORY_')


def tokens():
  """Every token of the blocks, in a fixed order."""
  return [*INSTRUCTIONS, *PREFIXES, *REGISTERS, *SPECIAL]


def _operand(operands, kind, rng):
  operand = operands.add()
  if kind == 'r':
    operand.register_name = rng.choice(REGISTERS)
  elif kind == 'i':
    operand.immediate_value = rng.randrange(256)
  else:
    operand.address.base_register = rng.choice(REGISTERS)
    operand.address.displacement = 8 * rng.randrange(16)
    operand.address.scaling = 1


def block(rng, measured=True):
  """One BasicBlockWithThroughputProto, with its measurements."""
  proto = protos.BasicBlockWithThroughputProto()
  cycles = {HASWELL: 0.0, SKYLAKE: 0.0, MCA: 0.0}
  for _ in range(rng.randint(2, 12)):
    mnemonic = rng.choice(list(INSTRUCTIONS))
    shape, haswell, skylake = INSTRUCTIONS[mnemonic]
    instruction = proto.basic_block.canonicalized_instructions.add(
      mnemonic=mnemonic, llvm_mnemonic=mnemonic + '64r'
    )
    outputs, _, inputs = shape.partition('>')
    for kind in outputs:
      _operand(instruction.output_operands, kind, rng)
    for kind in inputs:
      _operand(instruction.input_operands, kind, rng)
    locked = mnemonic == 'ADD' and rng.random() < 0.2
    if locked:
      instruction.prefixes.append('LOCK')
    proto.basic_block.machine_instructions.add(assembly=mnemonic.lower())
    memory = shape.count('m')
    for source, cost in (
      (HASWELL, haswell),
      (SKYLAKE, skylake),
      (MCA, haswell),
    ):
      cycles[source] += (
        cost
        + memory * MEMORY_CYCLES[source]
        + (4.0 if locked and source != MCA else 0.0)
      )
  if measured:
    for source, value in cycles.items():
      if rng.random() < 0.85:
        proto.inverse_throughputs.add(
          source=source,
          inverse_throughput_cycles=[
            value * rng.uniform(0.98, 1.02) for _ in range(rng.randint(1, 3))
          ],
        )
  return proto


def write(path, blocks):
  with tf.io.TFRecordWriter(path) as writer:
    for proto in blocks:
      writer.write(proto.SerializeToString())


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  here = os.path.dirname(os.path.abspath(__file__))
  parser.add_argument('--output', default=os.path.join(here, 'data'))
  parser.add_argument('--blocks', type=int, default=1000)
  parser.add_argument('--seed', type=int, default=7)
  args = parser.parse_args()
  rng = random.Random(args.seed)
  os.makedirs(args.output, exist_ok=True)
  write(
    os.path.join(args.output, 'blocks.tfrecord'),
    [block(rng) for _ in range(args.blocks)],
  )
  write(
    os.path.join(args.output, 'eval_blocks.tfrecord'),
    [block(rng) for _ in range(max(1, args.blocks // 5))],
  )
  write(
    os.path.join(args.output, 'new_blocks.tfrecord'),
    [block(rng, measured=False) for _ in range(max(1, args.blocks // 10))],
  )
  with open(
    os.path.join(args.output, 'tokens.txt'), 'w', encoding='utf-8'
  ) as f:
    f.write(''.join(f'{token}\n' for token in tokens()))


if __name__ == '__main__':
  main()
