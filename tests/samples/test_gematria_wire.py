"""The Gematria sample's messages are Gematria's, field for field, on the wire.

The authority is Gematria's own `.proto` files (gematria_upstream/),
compiled by protoc: every message the sample reads or writes has the same
fields, numbers, types and labels, and records that Gematria's classes
write come back from the sample's prediction unchanged but for the one
inverse throughput it appends.
"""

from google.protobuf import descriptor_pb2

import gematria_sample
import gematria_upstream

protos = gematria_sample.module('gematria_protos')

HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'


def _fields(descriptor):
  """`{full message name: {field: (number, type, label, type, oneof)}}`."""
  out = {}

  def walk(message):
    out[message.full_name] = {
      field.name: (
        field.number,
        field.type,
        # proto3 singular fields: LABEL_OPTIONAL, whatever the reader.
        descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
        if field.is_repeated
        else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        field.message_type.full_name if field.message_type else None,
        field.containing_oneof.name if field.containing_oneof else None,
      )
      for field in message.fields
    }
    for nested in message.nested_types:
      walk(nested)

  walk(descriptor)
  return out


def test_every_message_matches_gematrias_own_definition():
  gematria = gematria_upstream.classes()
  assert set(gematria) == set(protos.__all__)
  for name, theirs in gematria.items():
    ours = getattr(protos, name)
    assert _fields(ours.DESCRIPTOR) == _fields(theirs.DESCRIPTOR), name


def gematria_block(index):
  """A block as Gematria's tools write it, with every part filled in."""
  classes = gematria_upstream.classes()
  record = classes['BasicBlockWithThroughputProto']()
  block = record.basic_block
  block.fingerprint = f'block-{index:04x}'
  block.machine_instructions.add(
    address=0x401000 + index, assembly='add rax, rbx', machine_code=b'\x48\x01'
  )
  block.machine_instructions.add(assembly='mov rcx, qword ptr [rax + 8]')
  add = block.canonicalized_instructions.add(
    mnemonic='ADD', llvm_mnemonic='ADD64rr'
  )
  add.output_operands.add(register_name='RAX')
  add.input_operands.add(register_name='RAX')
  add.input_operands.add(register_name='RBX')
  add.implicit_output_operands.add(register_name='EFLAGS')
  add.instruction_annotations.add(name='cache_miss_freq', value=0.25 + index)
  load = block.canonicalized_instructions.add(mnemonic='MOV', prefixes=['LOCK'])
  load.output_operands.add(register_name='RCX')
  address = load.input_operands.add().address
  address.base_register, address.displacement, address.scaling = 'RAX', 8, 1
  load.input_operands.add().memory.alias_group_id = 1
  load.input_operands.add(immediate_value=7)
  load.instruction_annotations.add(name='cache_miss_freq', value=0.5)
  load.instruction_annotations.add(name='loop_carried', value=1.0)
  for source, cycles in (
    (HASWELL, [2.0 + index, 2.1 + index]),
    ('ithemal: kind=KIND_MEASURED, uarch=ARCH_SKYLAKE', [1.5 + index]),
    ('llvm-mca: kind=KIND_SIMULATED, uarch=ARCH_HASWELL', [1.0]),
  ):
    throughput = record.inverse_throughputs.add(
      source=source, inverse_throughput_cycles=cycles
    )
    throughput.prefix_inverse_throughputs.add(inverse_throughput_cycles=[1.0])
    throughput.prefix_inverse_throughputs.add(inverse_throughput_cycles=cycles)
  return record


def test_a_gematria_record_comes_back_whole_with_one_throughput_more():
  gematria = gematria_upstream.classes()['BasicBlockWithThroughputProto']
  given = gematria_block(3)
  serialized = given.SerializeToString()
  # The sample's classes read every field (nothing is left unknown) ...
  ours = protos.BasicBlockWithThroughputProto.FromString(serialized)
  assert ours.basic_block.fingerprint == 'block-0003'
  assert ours.basic_block.canonicalized_instructions[1].instruction_annotations[
    1
  ].name == ('loop_carried')
  assert ours.SerializeToString(deterministic=True) == given.SerializeToString(
    deterministic=True
  )
  # ... and prediction's annotation appends one inverse throughput only.
  # Imports TensorFlow: only this test.
  trainer = gematria_sample.module('trainer')
  back = gematria.FromString(
    trainer.add_throughput(serialized, {'value': 4.5}, 'hierarchical-lstm')
  )
  assert back.basic_block == given.basic_block
  assert list(back.inverse_throughputs)[:-1] == list(given.inverse_throughputs)
  assert back.inverse_throughputs[-1].source == 'hierarchical-lstm'
  assert list(back.inverse_throughputs[-1].inverse_throughput_cycles) == [4.5]
