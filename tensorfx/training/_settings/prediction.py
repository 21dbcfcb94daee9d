"""Prediction settings: what `--action predict` reads and writes.

Gematria's `--gematria_action=predict` with `--gematria_input_file`,
`--gematria_output_file` and `--gematria_checkpoint_file`: a trainer run
with `--action predict --checkpoint PATH --predict-input FILES
--predict-output FILE` restores the checkpoint into the model its flags
build and predicts the files (`tensorfx predict --module` runs that).

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

import dataclasses
from typing import Any, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

# As `tensorfx.prediction.predict_files` takes them (without importing it).
INPUT_FORMATS = ('auto', 'tfrecord', 'csv', 'json', 'parquet')
OUTPUT_FORMATS = ('auto', 'tfrecord', 'json')

_GROUP = 'prediction (--action predict)'


@dataclasses.dataclass(frozen=True)
class PredictionSettings(_section.Section):
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

  inputs: Tuple[str, ...] = _section.listed(
    '--predict-input',
    group=_GROUP,
    metavar='PATH',
    help='the records to predict: TFRecord files of tf.Example, CSV or '
    'JSON lines (files or patterns, local or gs://; - for stdin)',
  )
  output: str = _section.setting(
    '--predict-output',
    group=_GROUP,
    default='-',
    metavar='PATH',
    help='where to write the records with their '
    'predictions: PATH.tfrecord[.gz] (tf.Example) or JSON '
    'lines (default: - for stdout)',
  )
  input_format: str = _section.setting(
    '--predict-format',
    group=_GROUP,
    type=str.lower,
    choices=INPUT_FORMATS,
    default='auto',
    help="the input format (default: by each file's name; "
    'other names are lines, each JSON or CSV)',
  )
  output_format: str = _section.setting(
    '--predict-output-format',
    group=_GROUP,
    type=str.lower,
    choices=OUTPUT_FORMATS,
    default='auto',
    help='the output format (default: tfrecord for a '
    '.tfrecord[.gz] output, else json)',
  )
  batch_size: int = _section.setting(
    '--predict-batch-size',
    group=_GROUP,
    type=int,
    default=256,
    convert=int,
    metavar='N',
    check=_section.positive(),
    help='records predicted per call (default: %(default)s)',
  )
  prefix: str = _section.setting(
    '--predict-prefix',
    group=_GROUP,
    default='',
    metavar='PREFIX',
    help='prepended to the name of each output added to a '
    'record (default: none)',
  )
  source: str = _section.setting(
    '--predict-source',
    group=_GROUP,
    default='',
    metavar='NAME',
    help='for records of protocol buffers: the name the '
    'predictions are written under (Gematria: the source '
    'of the added inverse throughput; default: the '
    "builder's class name)",
  )

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the flags, and that `--action predict` has its input."""
    super().check(args)
    if _section.read(args, 'action') == 'predict' and not _section.read(
      args, 'predict_input'
    ):
      raise ConfigurationError(
        '--action predict needs the records to predict: --predict-input '
        'PATH (TFRecord, CSV or JSON lines; - for stdin). Received no '
        '--predict-input.'
      )
