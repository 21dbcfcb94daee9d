"""Gematria's message classes, compiled by protoc from Gematria's own files.

`gematria_upstream/gematria/proto/*.proto` are Gematria's files as
published (see its README.md). protoc (the one grpcio-tools ships, run as
`python -m grpc_tools.protoc`) compiles them into a descriptor set, and
`classes()` makes the message classes from it in a pool of their own, so
they never meet the sample's classes (same full names) in one process.
Tests write and read records with these, as a Gematria user's tools would.
"""

import functools
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory

ROOT = os.path.join(
  os.path.dirname(os.path.abspath(__file__)), 'gematria_upstream'
)
FILES = (
  'gematria/proto/annotation.proto',
  'gematria/proto/canonicalized_instruction.proto',
  'gematria/proto/basic_block.proto',
  'gematria/proto/throughput.proto',
)


@functools.cache
def descriptor_set():
  """protoc's FileDescriptorSet of Gematria's files (imports included)."""
  with tempfile.TemporaryDirectory() as work:
    out = os.path.join(work, 'gematria.pb')
    # In a process of its own: protoc's extension and TensorFlow's
    # protobuf runtime crash one process that loads both.
    subprocess.run(
      [
        sys.executable,
        '-m',
        'grpc_tools.protoc',
        f'-I{ROOT}',
        f'--descriptor_set_out={out}',
        '--include_imports',
        *FILES,
      ],
      check=True,
      timeout=120,
    )
    with open(out, 'rb') as f:
      return descriptor_pb2.FileDescriptorSet.FromString(f.read())


@functools.cache
def classes():
  """`{message name: class}` of every top-level Gematria message."""
  pool = descriptor_pool.DescriptorPool()
  for proto in descriptor_set().file:
    pool.Add(proto)
  return {
    message.name: message_factory.GetMessageClass(
      pool.FindMessageTypeByName(f'{proto.package}.{message.name}')
    )
    for proto in descriptor_set().file
    for message in proto.message_type
  }
