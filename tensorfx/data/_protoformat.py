"""ProtoFormat: which protocol buffer message records hold, and its fields.

A TFRecord file of serialized messages of one type is read as raw features
by a mapping from schema field to a field path inside the message (see
`_protopaths` for the path language). This module does not import
TensorFlow.
"""

from collections.abc import Callable, Mapping
import importlib
from typing import Any

from tensorfx._errors import DataError
from tensorfx.data import _protopaths

# annotate(serialized record, outputs of the model, name) -> serialized record
Annotator = Callable[[bytes, dict[str, Any], str], bytes]


def message_class(message: Any) -> Any:
  """The message class of `message`: a class, or its import path.

  Example:
    >>> message_class('google.protobuf.descriptor_pb2:FileDescriptorProto')
    <class 'google.protobuf.descriptor_pb2.FileDescriptorProto'>

  Args:
    message: a generated message class, or `'package.module:Class'`
      (`'package.module.Class'` also works).

  Raises:
    DataError: the path does not import, or names no message class.
  """
  if isinstance(message, str):
    module, sep, name = message.partition(':')
    if not sep:
      module, _, name = message.rpartition('.')
    try:
      found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as e:
      raise DataError(
        f'message {message!r} does not import ({e}); give '
        "'package.module:MessageClass'."
      ) from None
    message = found
  if not hasattr(message, 'DESCRIPTOR') or not hasattr(message, 'FromString'):
    raise DataError(
      'message must be a protocol buffer message class or its '
      f'import path. Received: message={message!r}'
    )
  return message


class ProtoFormat:
  """Records that are serialized protocol buffer messages of one type.

  Example:
    >>> blocks = ProtoFormat(
    ...     'gematria_protos:BasicBlockWithThroughputProto',
    ...     fields={'mnemonics':
    ...             'basic_block.canonicalized_instructions.mnemonic',
    ...             'source': 'inverse_throughputs.source',
    ...             'throughput': {'path': 'inverse_throughputs.'
    ...                            'inverse_throughput_cycles',
    ...                            'reduce': 'mean'}},
    ...     examples='inverse_throughputs')  # doctest: +SKIP

  Args:
    message: the message class, or its import path
      (`'package.module:Class'`).
    fields: schema field name -> spec: a dotted path, `PATH=TOKEN`, or a
      dict (`{path, reduce}`, `{path, where, match}`, `{each, values,
      lengths}`); see `tensorfx.data._protopaths`.
    examples: the path of a repeated message field whose elements are the
      examples: a record yields one example per element (none when it has
      none), fields under the path read the element, the others the record.
      Prediction reads one instance per record, without those fields.
    annotate: writes a model's outputs into a record, for batch prediction
      to TFRecord: `annotate(serialized, outputs, name) -> serialized`.

  Raises:
    DataError: a path the message does not have, naming it.
  """

  def __init__(
    self,
    message: Any,
    fields: Mapping[str, Any],
    examples: str | None = None,
    annotate: Annotator | None = None,
  ):
    self.message = message_class(message)
    descriptor = self.message.DESCRIPTOR
    if not isinstance(fields, Mapping) or not fields:
      raise DataError(
        'fields must map schema field names to paths in the '
        f'message. Received: fields={fields!r}'
      )
    self.fields = {
      name: _protopaths.parse_spec(spec, f'field {name!r}')
      for name, spec in fields.items()
    }
    for name, spec in self.fields.items():
      _protopaths.check(descriptor, spec, f'field {name!r}')
    if examples is not None:
      found = _protopaths.resolve(
        descriptor, tuple(examples.split('.')), 'examples'
      )
      if not (
        _protopaths.is_repeated(found[-1]) and _protopaths.is_message(found[-1])
      ):
        raise DataError(
          'examples must be the path of a repeated message '
          f'field. Received: examples={examples!r}'
        )
      depth = len(found)
      for name, spec in self.fields.items():
        if spec.match is not None:
          raise DataError(
            f'field {name!r}: where/match picks one element '
            'of a record; it reads records, not the elements '
            f'of {examples!r} (give no examples).'
          )
        if (
          spec.parts[:depth] == tuple(examples.split('.'))
          and len(spec.parts) == depth
        ):
          raise DataError(
            f'field {name!r}: select a field of each element '
            f'of {examples!r}, not the elements themselves.'
          )
    self.examples = examples
    self.annotate = annotate

  @property
  def descriptor(self) -> Any:
    """The message's `Descriptor`."""
    return self.message.DESCRIPTOR

  def check_schema(self, schema: Any) -> None:
    """Checks that every schema field has a path, and every path a field.

    Raises:
      DataError: naming the fields without a path or without a field.
    """
    names = [field.name for field in schema]
    missing = [name for name in names if name not in self.fields]
    extra = [name for name in self.fields if name not in names]
    if missing or extra:
      raise DataError(
        f'The schema and the fields of {self.descriptor.full_name} '
        f'differ: {"schema fields without a path: " + ", ".join(missing) if missing else ""}'
        f'{"; " if missing and extra else ""}'
        f'{"paths of no schema field: " + ", ".join(extra) if extra else ""}.'
      )

  def decoder(self, schema: Any) -> Any:
    """The in-graph `_protodecode.Decoder` of this format for `schema`."""
    from tensorfx.data import _protodecode

    return _protodecode.Decoder(
      self.descriptor, self.fields, schema, self.examples
    )

  def problem(self, value: bytes) -> str | None:
    """Why one record is not a message of this type, or None."""
    from google.protobuf import message as message_lib

    try:
      self.message.FromString(value)
    except (message_lib.DecodeError, RuntimeError, ValueError):
      return f'not a serialized {self.descriptor.full_name}'
    return None

  def reading_options(self) -> dict[str, Any]:
    """What decides the records read, for the analysis' fingerprint."""
    return {
      'message': self.descriptor.full_name,
      'fields': {
        name: repr(spec) for name, spec in sorted(self.fields.items())
      },
      'examples': self.examples,
    }
