"""Gematria's record messages, from the `.proto` files in `proto/`.

`BasicBlockWithThroughputProto` and the messages it holds (instruction
annotations and fingerprints included), wire-compatible with Gematria's
`gematria/proto/*.proto` at every field's number, type and label: files written by Gematria's tools
parse here, and files written here parse there. The `.proto` files are read
by a small reader of the proto3 they use (messages, nested messages,
`oneof`, `repeated`, scalar types, imports) into a descriptor pool of their
own, so neither `protoc` nor Gematria is needed, and the classes do not
clash with Gematria's generated ones in one process.

Example:
  >>> block = BasicBlockWithThroughputProto()
  >>> block.inverse_throughputs.add(source='x', inverse_throughput_cycles=[2])
  >>> BasicBlockWithThroughputProto.FromString(
  ...     block.SerializeToString()).inverse_throughputs[0].source
  'x'
"""

import os
import re

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'proto')
# In import order: each file after the ones it imports.
_FILES = (
  'annotation.proto',
  'canonicalized_instruction.proto',
  'basic_block.proto',
  'throughput.proto',
)
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
  'double': _F.TYPE_DOUBLE,
  'float': _F.TYPE_FLOAT,
  'int64': _F.TYPE_INT64,
  'uint64': _F.TYPE_UINT64,
  'int32': _F.TYPE_INT32,
  'uint32': _F.TYPE_UINT32,
  'bool': _F.TYPE_BOOL,
  'string': _F.TYPE_STRING,
  'bytes': _F.TYPE_BYTES,
}
_TOKEN = re.compile(r'[A-Za-z_][\w.]*|\d+|"[^"]*"|[{}=;]')


def _tokens(text):
  text = re.sub(r'//[^\n]*', '', text)
  return _TOKEN.findall(text)


def _file(name, text):
  """A FileDescriptorProto of one .proto file (the subset used here)."""
  proto = descriptor_pb2.FileDescriptorProto(
    name=f'gematria/proto/{name}', syntax='proto3'
  )
  tokens = _tokens(text)
  stack = []  # (DescriptorProto, its full name, oneof index or None)
  at = 0
  while at < len(tokens):
    token = tokens[at]
    if token == 'syntax':
      at += 4
    elif token == 'package':
      proto.package = tokens[at + 1]
      at += 3
    elif token == 'import':
      proto.dependency.append(tokens[at + 1].strip('"'))
      at += 3
    elif token == 'message':
      parent = stack[-1][0].nested_type if stack else proto.message_type
      message = parent.add(name=tokens[at + 1])
      prefix = stack[-1][1] if stack else proto.package
      stack.append((message, f'{prefix}.{message.name}', None))
      at += 3
    elif token == 'oneof':
      message, full, _ = stack[-1]
      message.oneof_decl.add(name=tokens[at + 1])
      stack.append((message, full, len(message.oneof_decl) - 1))
      at += 3
    elif token == '}':
      stack.pop()
      at += 1
    else:
      message, full, oneof = stack[-1]
      repeated = token == 'repeated'
      if repeated:
        at += 1
      kind, field_name, number = tokens[at], tokens[at + 1], tokens[at + 3]
      field = message.field.add(
        name=field_name,
        number=int(number),
        label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
      )
      if kind in _SCALARS:
        field.type = _SCALARS[kind]
      else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = kind  # Resolved below, once all are known.
      if oneof is not None:
        field.oneof_index = oneof
      at += 5
  return proto


def _resolve(files):
  """Qualifies each message field's type name (`.gematria.Outer.Inner`)."""
  known = {}

  def collect(message, prefix):
    full = f'{prefix}.{message.name}'
    known[full] = message
    for nested in message.nested_type:
      collect(nested, full)

  for proto in files:
    for message in proto.message_type:
      collect(message, proto.package)

  def fix(message, scope):
    full = f'{scope}.{message.name}'
    for field in message.field:
      if field.type != _F.TYPE_MESSAGE or field.type_name.startswith('.'):
        continue
      parts = full.split('.')
      for depth in range(len(parts), 0, -1):
        candidate = '.'.join(parts[:depth] + [field.type_name])
        if candidate in known:
          field.type_name = '.' + candidate
          break
      else:
        raise ValueError(f'{full}.{field.name}: unknown type {field.type_name}')
    for nested in message.nested_type:
      fix(nested, full)

  for proto in files:
    for message in proto.message_type:
      fix(message, proto.package)


def _load():
  files = []
  for name in _FILES:
    with open(os.path.join(_HERE, name), encoding='utf-8') as f:
      files.append(_file(name, f.read()))
  _resolve(files)
  pool = descriptor_pool.DescriptorPool()
  for proto in files:
    pool.Add(proto)
  return {
    name: message_factory.GetMessageClass(
      pool.FindMessageTypeByName(f'gematria.{name}')
    )
    for name in (
      'AnnotationProto',
      'CanonicalizedInstructionProto',
      'CanonicalizedOperandProto',
      'BasicBlockProto',
      'MachineInstructionProto',
      'ThroughputWithSourceProto',
      'BasicBlockWithThroughputProto',
      'BasicBlockWithThroughputListProto',
    )
  }


_CLASSES = _load()
AnnotationProto = _CLASSES['AnnotationProto']
CanonicalizedInstructionProto = _CLASSES['CanonicalizedInstructionProto']
CanonicalizedOperandProto = _CLASSES['CanonicalizedOperandProto']
BasicBlockProto = _CLASSES['BasicBlockProto']
MachineInstructionProto = _CLASSES['MachineInstructionProto']
ThroughputWithSourceProto = _CLASSES['ThroughputWithSourceProto']
BasicBlockWithThroughputProto = _CLASSES['BasicBlockWithThroughputProto']
BasicBlockWithThroughputListProto = _CLASSES[
  'BasicBlockWithThroughputListProto'
]

__all__ = [
  'AnnotationProto',
  'BasicBlockProto',
  'BasicBlockWithThroughputListProto',
  'BasicBlockWithThroughputProto',
  'CanonicalizedInstructionProto',
  'CanonicalizedOperandProto',
  'MachineInstructionProto',
  'ThroughputWithSourceProto',
]
