"""Prediction settings: what `--action predict` reads and writes.

Gematria's `--gematria_action=predict` with `--gematria_input_file`,
`--gematria_output_file` and `--gematria_checkpoint_file`: a trainer run
with `--action predict --checkpoint PATH --predict-input FILES
--predict-output FILE` restores the checkpoint into the model its flags
build and predicts the files (`tensorfx predict --module` runs that).

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import argparse
import dataclasses
from typing import Any, Self, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._arguments import listflags as _listflags
from tensorfx.training._settings import _section

# As `tensorfx.prediction.predict_files` takes them (without importing it).
INPUT_FORMATS = ('auto', 'tfrecord', 'csv', 'json', 'parquet')
OUTPUT_FORMATS = ('auto', 'tfrecord', 'json')


def add_arguments(parser: argparse.ArgumentParser) -> None:
  group = _section.group(parser, 'prediction (--action predict)')
  _listflags.add_list_argument(
    group,
    '--predict-input',
    metavar='PATH',
    help='the records to predict: TFRecord files of tf.Example, CSV or '
    'JSON lines (files or patterns, local or gs://; - for stdin)',
  )
  group.add_argument(
    '--predict-output',
    default='-',
    metavar='PATH',
    help='where to write the records with their '
    'predictions: PATH.tfrecord[.gz] (tf.Example) or JSON '
    'lines (default: - for stdout)',
  )
  group.add_argument(
    '--predict-format',
    type=str.lower,
    choices=INPUT_FORMATS,
    default='auto',
    help="the input format (default: by each file's name; "
    'other names are lines, each JSON or CSV)',
  )
  group.add_argument(
    '--predict-output-format',
    type=str.lower,
    choices=OUTPUT_FORMATS,
    default='auto',
    help='the output format (default: tfrecord for a '
    '.tfrecord[.gz] output, else json)',
  )
  group.add_argument(
    '--predict-batch-size',
    type=int,
    default=256,
    metavar='N',
    help='records predicted per call (default: %(default)s)',
  )
  group.add_argument(
    '--predict-prefix',
    default='',
    metavar='PREFIX',
    help='prepended to the name of each output added to a '
    'record (default: none)',
  )
  group.add_argument(
    '--predict-source',
    default='',
    metavar='NAME',
    help='for records of protocol buffers: the name the '
    'predictions are written under (Gematria: the source '
    'of the added inverse throughput; default: the '
    "builder's class name)",
  )


def check(args: Any) -> None:
  _section.check_positive(args, 'predict_batch_size')
  if _section.read(args, 'action') == 'predict' and not _section.read(
    args, 'predict_input'
  ):
    raise ConfigurationError(
      '--action predict needs the records to predict: --predict-input '
      'PATH (TFRecord, CSV or JSON lines; - for stdin). Received no '
      '--predict-input.'
    )


@dataclasses.dataclass(frozen=True)
class PredictionSettings:
  """What `--action predict` predicts, and where the predictions go.

  Attributes:
    inputs: the input files or patterns (`--predict-input`).
    output: the output file, '-' for stdout (`--predict-output`).
    input_format: `auto`, `tfrecord`, `csv` or `json`
      (`--predict-format`).
    output_format: `auto`, `tfrecord` or `json`
      (`--predict-output-format`).
    batch_size: records per prediction call (`--predict-batch-size`).
    prefix: prepended to each output's name (`--predict-prefix`).
    source: the name predictions are written under in protocol buffer
      records (`--predict-source`).
  """

  inputs: Tuple[str, ...] = ()
  output: str = '-'
  input_format: str = 'auto'
  output_format: str = 'auto'
  batch_size: int = 256
  prefix: str = ''
  source: str = ''

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      inputs=tuple(read(args, 'predict_input', ())),
      output=read(args, 'predict_output', '-'),
      input_format=read(args, 'predict_format', 'auto'),
      output_format=read(args, 'predict_output_format', 'auto'),
      batch_size=int(read(args, 'predict_batch_size', 256)),
      prefix=read(args, 'predict_prefix', ''),
      source=read(args, 'predict_source', '') or '',
    )
