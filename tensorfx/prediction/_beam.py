"""Batch prediction as an Apache Beam pipeline (DirectRunner, Dataflow, ...).

The same inputs, outputs and bad-record policy as `predict_files`, at the
scale of a Beam runner: the files are read in parallel, each worker loads
the exported model once (`DoFn.setup`) and predicts batches of records
(`BatchElements`), and the output is one file. What differs: the output's
order is not the input's (workers finish in any order; each output record
carries its input features, so join on them), and a bad record is named by
its file and its text, not its line number (a parallel read does not count
lines).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import json
from typing import Any

from tensorfx import _beamlocal
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx.data import _paths
from tensorfx.data import _skipping
from tensorfx.data._examples import compression_of
from tensorfx.prediction import _batch
from tensorfx.prediction import _reader

_BAD = 'bad'
# A bad record in a pipeline without skip_bad_records: what the CLI finds in
# the runner's error, whatever it wraps it in.
_MARK = 'tensorfx bad record: '


def _predict_dofn() -> Any:
  """The DoFn class (made here: Beam is imported only for a pipeline)."""
  import apache_beam as beam

  class PredictDoFn(beam.DoFn):
    """Predicts batches of records; loads the model once per worker."""

    def __init__(
      self, model_dir: str, prefix: str, tfrecord: bool, skip_bad_records: bool
    ) -> None:
      super().__init__()
      self._model_dir = model_dir
      self._prefix = prefix
      self._tfrecord = tfrecord
      self._skip = skip_bad_records
      self._bad = beam.metrics.Metrics.counter('tensorfx', 'bad_records')
      self._predicted = beam.metrics.Metrics.counter('tensorfx', 'predicted')

    def setup(self) -> None:
      from tensorfx.prediction._converter import Converter
      from tensorfx.prediction._model import Model

      self._model = Model.load(self._model_dir)
      self._converter = Converter(
        self._model.schema, self._model.features, self._prefix
      )

    def process(self, batch: list) -> Iterator[Any]:
      for record, outputs in _batch.predict_batch(self._model, batch):
        if outputs is None:
          message = f'{record.where}: {record.problem}'
          if not self._skip:
            raise DataError(
              f'{_MARK}{message} (--skip-bad-records skips '
              'and counts such records)'
            )
          self._bad.inc()
          yield beam.pvalue.TaggedOutput(_BAD, message)
          continue
        self._predicted.inc()
        if self._tfrecord:
          yield self._converter.example(record, outputs)
        else:
          yield json.dumps(self._converter.row(record, outputs))

  return PredictDoFn


def _records(kind: str) -> Any:
  """(filename, raw record) -> a `_Record` (or None for a blank line)."""

  def convert(item: tuple[str, Any]) -> Iterator[Any]:
    filename, value = item
    if kind == 'tfrecord':
      yield _reader.Record(
        'example', value, f'{filename}: a record', len(value)
      )
      return
    text = value.decode('utf-8', 'replace').strip()
    where = f'{filename}: the line {text[:60]!r}'
    record = _reader.text_record(value, kind, where)
    if record is not None:
      yield record

  return convert


def pipeline_options(args: Sequence[str]) -> Any:
  """Beam `PipelineOptions` from command-line flags, checked.

  Example:
    >>> pipeline_options(['--runner=DirectRunner', '--direct_num_workers=2'])
    ... # doctest: +SKIP

  Raises:
    ConfigurationError: a flag no Beam option knows, or a DataflowRunner
      without a project, a region or a gs:// temp_location (checked here,
      without the network; Dataflow checks the rest when the job starts).
  """
  from apache_beam.options.pipeline_options import PipelineOptions
  from apache_beam.options.pipeline_options import StandardOptions

  options = PipelineOptions(list(args))
  given = options.get_all_options(
    drop_default=True, retain_unknown_options=True
  )
  known = options.get_all_options(drop_default=True)
  unknown = sorted(set(given) - set(known))
  if unknown:
    raise ConfigurationError(
      'Unknown Beam pipeline option(s): '
      + ', '.join(f'--{name}' for name in unknown)
      + ' (see `python -m apache_beam.examples.wordcount --help` for '
      'the options of every runner). Received: ' + ' '.join(args)
    )
  runner = options.view_as(StandardOptions).runner or 'DirectRunner'
  if runner.endswith('DataflowRunner'):
    _check_dataflow(options)
  return options


def _check_dataflow(options: Any) -> None:
  """What a Dataflow job needs, checked here.

  Beam's own check would try to create a default bucket over the network.
  """
  from apache_beam.options.pipeline_options import GoogleCloudOptions

  cloud = options.view_as(GoogleCloudOptions)
  missing = [
    f'--{name}' for name in ('project', 'region') if not getattr(cloud, name)
  ]
  temp = cloud.temp_location or cloud.staging_location
  if not temp:
    missing.append('--temp_location gs://BUCKET/tmp')
  if missing:
    raise ConfigurationError(
      'The DataflowRunner needs ' + ', '.join(missing) + ' (and workers '
      'with tensorfx installed: --sdk_container_image, the tensorfx '
      'trainer image, or --requirements_file). Received: '
      f'project={cloud.project}, region={cloud.region}, '
      f'temp_location={cloud.temp_location}'
    )
  for name in ('temp_location', 'staging_location'):
    value = getattr(cloud, name)
    if value and not value.startswith('gs://'):
      raise ConfigurationError(
        f'On Dataflow --{name} must be a gs:// path. Received: --{name}={value}'
      )


# Beam's fixed costs dominate a small batch job: see tensorfx/_beamlocal.py.
@_beamlocal.faster_beam()
def predict_beam(
  model_dir: str,
  inputs: Any,
  output: str,
  pipeline_args: Sequence[str] = (),
  *,
  input_format: str = 'auto',
  output_format: str = 'auto',
  batch_size: int = 256,
  prefix: str = '',
  skip_bad_records: bool = False,
  compression: str = 'auto',
) -> dict[str, int]:
  """Predicts every record of `inputs` with a Beam pipeline.

  Example:
    >>> predict_beam('/tmp/job/model', 'blocks.tfrecord',
    ...              'predicted.jsonl', ['--runner=DirectRunner',
    ...                                  '--direct_num_workers=2'])
    {'predicted': 1000, 'bad_records': 0}

  Args:
    model_dir: the exported model (`OUTPUT/model`; gs:// on Dataflow).
    inputs: files or patterns, as `predict_files` takes them (not stdin).
    output: the output file (`.tfrecord[.gz]`: tf.Example; else JSON
      lines), written whole, in no particular order.
    pipeline_args: Beam pipeline options (`--runner`, `--project`, ...).
    input_format: 'auto', 'tfrecord', 'csv' or 'json'.
    output_format: 'auto', 'tfrecord' or 'json'.
    batch_size: the most records per prediction call.
    prefix: prepended to each output's name.
    skip_bad_records: drop and count bad records instead of failing.
    compression: of TFRecord files: 'auto' (by suffix), None, 'GZIP',
      'ZLIB'.

  Returns:
    The pipeline's counts: records predicted and bad records skipped.

  Raises:
    ConfigurationError: stdin or stdout given, or bad pipeline options.
    DataError: a bad record (without `skip_bad_records`), naming its file.
  """
  import apache_beam as beam

  listed = _paths.as_list(inputs)
  if '-' in listed or output == '-':
    raise ConfigurationError(
      'A Beam pipeline reads files and writes a file: give --input PATH '
      'and --output PATH (not - for stdin or stdout).'
    )
  if (
    input_format not in _batch.INPUT_FORMATS
    or output_format not in _batch.OUTPUT_FORMATS
  ):
    raise ConfigurationError(
      f'Unknown format. Received: input_format={input_format!r}, '
      f'output_format={output_format!r}'
    )
  options = pipeline_options(pipeline_args)
  paths = _paths.expand(listed, 'input')
  tfrecord_out = output_format == 'tfrecord' or (
    output_format == 'auto' and bool(_reader.TFRECORD.search(output))
  )
  kinds: dict[str, list[str]] = {}
  for path in paths:
    kinds.setdefault(_reader.format_of(path, input_format), []).append(path)
  pipeline = _beamlocal.pipeline(options)
  parts = []
  for kind, group in sorted(kinds.items()):
    if kind == 'tfrecord':
      by_compression: dict[str, list[str]] = {}
      for path in group:
        by_compression.setdefault(
          compression_of(path, compression) or 'UNCOMPRESSED', []
        ).append(path)
      for name, files_of in sorted(by_compression.items()):
        parts.append(
          pipeline
          | f'List {name} TFRecords' >> beam.Create(files_of)
          | f'Read {name} TFRecords'
          >> beam.io.ReadAllFromTFRecord(
            compression_type=name.lower()
            if name != 'UNCOMPRESSED'
            else 'uncompressed',
            with_filename=True,
          )
          | f'Records of {name} TFRecords' >> beam.FlatMap(_records('tfrecord'))
        )
      continue
    parts.append(
      pipeline
      | f'List {kind}' >> beam.Create(group)
      | f'Read {kind}'
      >> beam.io.ReadAllFromText(
        coder=beam.coders.BytesCoder(),
        with_filename=True,
        strip_trailing_newlines=True,
      )
      | f'Records of {kind}' >> beam.FlatMap(_records(kind))
    )
  records = (
    parts[0]
    if len(parts) == 1
    else (tuple(parts) | 'All records' >> beam.Flatten())
  )
  predicted = (
    records
    | 'Batch' >> beam.BatchElements(min_batch_size=1, max_batch_size=batch_size)
    | 'Predict'
    >> beam.ParDo(
      _predict_dofn()(model_dir, prefix, tfrecord_out, skip_bad_records)
    ).with_outputs(_BAD, main='predicted')
  )
  if tfrecord_out:
    predicted.predicted | 'Write' >> beam.io.WriteToTFRecord(
      output,
      compression_type=(
        compression_of(output, compression) or 'uncompressed'
      ).lower(),
      num_shards=1,
      shard_name_template='',
    )
  else:
    predicted.predicted | 'Write' >> beam.io.WriteToText(
      output, num_shards=1, shard_name_template=''
    )
  (
    predicted[_BAD]
    | 'Log bad records'
    >> beam.combiners.Sample.FixedSizeGlobally(_skipping.LOGGED_BAD_RECORDS)
    | beam.FlatMap(_log_bad)
  )
  try:
    result = pipeline.run()
    result.wait_until_finish()
  except Exception as e:
    text = str(e)
    if _MARK in text:
      message = text[text.index(_MARK) + len(_MARK) :]
      message = message.split('\n')[0]
      for end in (' [while running', "' [while running", '"'):
        message = message.split(end)[0]
      raise DataError(message.rstrip("'")) from None
    raise
  return _counts(result)


def _log_bad(messages: list[str]) -> list[str]:
  from tensorfx._logging import logger

  for message in messages:
    logger.warning('Skipped a bad record: %s', message)
  return []


def _counts(result: Any) -> dict[str, int]:
  from apache_beam.metrics.metric import MetricsFilter

  counts = {'predicted': 0, 'bad_records': 0}
  try:
    found = result.metrics().query(MetricsFilter().with_namespace('tensorfx'))
  except (NotImplementedError, AttributeError):
    return counts
  for counter in found['counters']:
    name = counter.key.metric.name
    if name in counts:
      value = (
        counter.committed
        if counter.committed is not None
        else counter.attempted
      )
      counts[name] += int(value or 0)
  return counts
