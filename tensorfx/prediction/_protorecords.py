"""Batch prediction of protocol buffer records (Gematria's inference).

The records of a batch are decoded into tf.Examples of the model's fields
(`tensorfx.data._protoexamples`), predicted like any tf.Example, and
written back as the input message with the outputs written in by the
format's `annotate`: Gematria's inference adds the prediction as one more
`inverse_throughputs` entry, its source named after the model.
"""

import dataclasses
from typing import Any

from tensorfx._errors import DataError
from tensorfx.data import _protoexamples


def decoded(source: Any, batch: list[Any]) -> list[Any]:
  """The batch's records as tf.Example records (bad ones marked bad)."""
  values = [r.value for r in batch if r.kind == 'example']
  converted = iter(_protoexamples.to_examples(source, values))
  records = []
  for record in batch:
    if record.kind != 'example':
      records.append(record)
      continue
    example, problem = next(converted)
    if example is None:
      records.append(
        dataclasses.replace(
          record, kind='bad', problem=problem, original=record.value
        )
      )
    else:
      records.append(
        dataclasses.replace(record, value=example, original=record.value)
      )
  return records


def annotated(
  source: Any, record: Any, outputs: dict[str, Any], name: str
) -> bytes:
  """The input message with the outputs written in by the format."""
  annotate = source.proto_format.annotate
  if annotate is None:
    raise DataError(
      f'{source.proto_format.descriptor.full_name} records cannot hold '
      'predictions: give the ProtoFormat an annotate function, or write '
      'JSON lines (an output not ending in .tfrecord).'
    )
  return annotate(record.original, outputs, name)
