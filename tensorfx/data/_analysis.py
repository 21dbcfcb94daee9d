"""Analysis of a data source with tf.Transform on Apache Beam.

The source is read as Arrow RecordBatches (tf.Transform's TFXIO format) by
the readers training uses; tf.Transform computes the analyzers of the
feature set's `preprocessing_fn` and writes the transform graph, and one
vectorized combiner computes metadata.json's statistics over the same
batches. The DirectRunner runs on every core for data large enough to pay
for starting its worker processes; any runner and option can be given.

A second analysis of the same data (files, schema, features, reading
options: see `_fingerprint`) into the same directory reuses the first.

Imported lazily: it imports Apache Beam.
"""

import contextlib
import json
import logging
import os
import re

import apache_beam as beam

from tensorfx import _beamlocal
from tensorfx import _faults
from tensorfx import _logging
from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data import _arrow
from tensorfx.data import _arrowcoder
from tensorfx.data import _fingerprint
from tensorfx.data import _statistics
from tensorfx.data._metadata import Metadata

# What Beam appends to the message of an error raised in a step.
_BEAM_STEP = re.compile(r"(?:\s*\[while running '[^']*'\])+\s*$")
# Below this much data, or on fewer cores, the DirectRunner runs in this
# process (whose CSV decoding keeps two cores busy already): starting its
# worker processes (each imports TensorFlow and tf.Transform) costs more
# than they save. Measured on 2 cores: worker processes 1.5x slower at 3M
# rows (benchmarks/analysis.py).
MULTI_PROCESSING_BYTES = 256 << 20
MULTI_PROCESSING_CORES = 4
_METADATA_FILE = 'metadata.json'


# Beam's logging set-up and advisory warnings stay out of the job's output.
@_logging.quiet_beam()
def analyze(
  dataset, output_dir, source='train', pipeline_args=None, reuse=True
):
  """Runs the analysis (or reuses an equal one); see `DataSet.analyze`."""
  import tensorflow as tf

  from tensorfx import _autograph

  _autograph.skip_library()
  data_source = dataset[source]
  files = data_source.files()  # Fail fast, before Beam starts.
  fingerprint = _fingerprint.fingerprint(dataset, source)
  complete = tf.io.gfile.exists(os.path.join(output_dir, _METADATA_FILE))
  if reuse and complete:
    change = _fingerprint.difference(_fingerprint.load(output_dir), fingerprint)
    if change is None:
      logger.info(
        'Reusing the analysis in %s: the data, schema and '
        'features are those it analyzed',
        output_dir,
      )
      return Metadata.load(os.path.join(output_dir, _METADATA_FILE))
    logger.info('Analyzing %s again into %s: %s', source, output_dir, change)
  if complete:
    # Not complete any more: no task may take it while it is rewritten.
    tf.io.gfile.remove(os.path.join(output_dir, _METADATA_FILE))
  metadata, skipped = _run(
    dataset, data_source, output_dir, pipeline_options(pipeline_args, files)
  )
  _fingerprint.save(output_dir, fingerprint)
  _faults.point('analysis.metadata')
  # metadata.json last: its presence marks a complete analysis.
  metadata.save(os.path.join(output_dir, _METADATA_FILE))
  logger.info('Analyzed %d instances of %s', metadata.instances, source)
  if skipped or data_source.skip_bad_records:
    logger.warning(
      'Skipped %s of %s', _logging.counted(skipped, 'bad record'), source
    )
  return metadata


def _run(dataset, data_source, output_dir, options):
  """Runs the pipeline; returns (the `Metadata`, bad records skipped)."""
  import tensorflow as tf
  import tensorflow_transform.beam as tft_beam
  from tensorflow_transform.tf_metadata import dataset_metadata
  from tensorflow_transform.tf_metadata import metadata_io
  from tensorflow_transform.tf_metadata import schema_utils

  from tensorfx.data import _transforms

  schema = data_source.schema
  preprocessing_fn = dataset.preprocessing_fn
  tf.io.gfile.makedirs(output_dir)
  work_dir = os.path.join(output_dir, 'tmp')
  # Written by a Beam worker, so on a path every runner's workers can reach.
  stats_path = os.path.join(work_dir, 'statistics.json')
  files = data_source.files()
  logger.info(
    'Analyzing %s into %s (%s; %s)',
    ', '.join(files[:3])
    + (f' and {len(files) - 3} more' if len(files) > 3 else '')
    if files
    else 'in-memory data',
    output_dir,
    _describe(options),
    'every core' if _workers(options) > 1 else 'one process',
  )
  try:
    with _quiet_beam(), _beamlocal.faster_beam():
      pipeline = _beamlocal.pipeline(options)
      with tft_beam.Context(temp_dir=work_dir, force_tf_compat_v1=False):
        batches = _arrowcoder.declare(data_source.record_batches(pipeline))
        transform_fn = (
          batches,
          _arrow.tensor_adapter_config(schema),
        ) | 'Analyze' >> tft_beam.AnalyzeDataset(preprocessing_fn)
        _ = transform_fn | 'WriteTransformFn' >> tft_beam.WriteTransformFn(
          output_dir
        )
        _ = (
          batches
          | 'Statistics' >> beam.CombineGlobally(_StatisticsFn(schema))
          | 'WriteStatistics' >> beam.Map(_write_json, stats_path)
        )
      # As `with beam.Pipeline()` would, keeping the result: its metrics
      # count the bad records skipped.
      result = pipeline.run()
      result.wait_until_finish()
  except DataError as e:
    # Beam re-raises a worker's error as the same type, its message suffixed
    # with the step that failed: keep just the data error's text.
    raise DataError(_BEAM_STEP.sub('', str(e))) from None
  except Exception as e:
    # Runners may wrap it in another error; recover the data error's text.
    match = re.search(r'DataError: (.+?)(?:\n|$)', str(e))
    if match:
      raise DataError(_BEAM_STEP.sub('', match.group(1))) from None
    raise
  # The raw schema, which `raw_feature_spec()` of the output reads.
  metadata_io.write_metadata(
    dataset_metadata.DatasetMetadata(
      schema_utils.schema_from_feature_spec(
        _transforms.raw_feature_spec(schema)
      )
    ),
    os.path.join(output_dir, 'metadata'),
  )
  with tf.io.gfile.GFile(stats_path) as f:
    metadata = Metadata.from_dict(json.load(f))
  if tf.io.gfile.exists(work_dir):
    tf.io.gfile.rmtree(work_dir)
  return metadata, bad_records(result)


def pipeline_options(pipeline_args, files=()):
  """Beam options: the DirectRunner by default, a process per core for big data.

  Example:
    >>> pipeline_options(['--direct_num_workers=1']).get_all_options()[
    ...     'direct_num_workers']
    1

  Args:
    pipeline_args: options as command-line flags; any given wins.
    files: the data files, whose total size decides the DirectRunner's
      mode: one worker process per core from `MULTI_PROCESSING_BYTES` on a
      machine of `MULTI_PROCESSING_CORES` or more, else in this process.
  """
  from apache_beam.options.pipeline_options import PipelineOptions
  import tensorflow as tf

  args = list(pipeline_args or [])
  given = {a.split('=')[0].lstrip('-') for a in args if a.startswith('--')}
  if 'runner' not in given:
    # Beam's default (Prism) downloads a binary at start; run in-process.
    args.append('--runner=DirectRunner')
  options = PipelineOptions(args)
  if not _beamlocal.is_direct(options) or given & {
    'direct_num_workers',
    'direct_running_mode',
  }:
    return options
  cores = os.cpu_count() or 1
  size = sum(int(tf.io.gfile.stat(f).length) for f in files)
  if cores >= MULTI_PROCESSING_CORES and size >= MULTI_PROCESSING_BYTES:
    args += [
      '--direct_running_mode=multi_processing',
      f'--direct_num_workers={cores}',
    ]
  return PipelineOptions(args)


def _workers(options):
  values = options.get_all_options()
  if values.get('direct_running_mode') == 'multi_processing':
    return values.get('direct_num_workers') or 1
  return 1


def _describe(options):
  values = options.get_all_options()
  text = str(values.get('runner'))
  if values.get('direct_running_mode'):
    text += (
      f', {values["direct_running_mode"]} x'
      f'{values.get("direct_num_workers") or 1}'
    )
  return text


@contextlib.contextmanager
def _quiet_beam():
  """Keeps Beam's own report of a failed step (a traceback) off the console.

  The error itself reaches the caller as one line; `--log-level debug`
  shows Beam's report too.
  """
  beam_logger = logging.getLogger('apache_beam')
  previous = beam_logger.level
  if not logger.isEnabledFor(logging.DEBUG):
    beam_logger.setLevel(logging.CRITICAL)
  try:
    yield
  finally:
    beam_logger.setLevel(previous)


def bad_records(result):
  """How many bad records the sources of a finished pipeline skipped."""
  from apache_beam.metrics.metric import MetricsFilter

  try:
    counters = result.metrics().query(
      MetricsFilter()
      .with_namespace(_arrow.COUNTER_NAMESPACE)
      .with_name(_arrow.BAD_RECORDS_COUNTER)
    )['counters']
  except (AttributeError, NotImplementedError, KeyError):
    return 0
  total = 0
  for counter in counters:
    # Committed where the runner tracks it, else attempted.
    value = counter.committed
    if value is None:
      value = counter.attempted
    total += value or 0
  return total


def _write_json(value, path):
  import tensorflow as tf

  with tf.io.gfile.GFile(path, 'w') as f:
    json.dump(value, f)


class _StatisticsFn(beam.CombineFn):
  """metadata.json's statistics over RecordBatches, in one pass."""

  def __init__(self, schema):
    super().__init__()
    self._schema = schema

  def create_accumulator(self):
    return _statistics.Statistics(self._schema)

  def add_input(self, mutable_accumulator, element):
    return mutable_accumulator.add(element)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for accumulator in accumulators:
      merged.merge(accumulator)
    return merged

  def extract_output(self, accumulator):
    return accumulator.result()
