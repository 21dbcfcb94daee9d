"""Analysis of a data source with tf.Transform on Apache Beam.

Imported lazily: it imports Apache Beam.
"""

import json
import math
import os
import re

import apache_beam as beam

from tensorfx import _faults
from tensorfx import _logging
from tensorfx._errors import DataError
from tensorfx._logging import logger
from tensorfx.data._metadata import Metadata

# Past this many distinct values metadata.json lists the most frequent ones
# only; the full vocabulary is in the transform graph's assets.
_MAX_LISTED_VALUES = 1000
_MAX_COUNTED_VALUES = 100000
# What Beam appends to the message of an error raised in a step.
_BEAM_STEP = re.compile(r"(?:\s*\[while running '[^']*'\])+\s*$")


# Beam's logging set-up and advisory warnings stay out of the job's output.
@_logging.quiet_beam()
def analyze(dataset, output_dir, source='train', pipeline_args=None):
  """Runs the analysis; see `DataSet.analyze`."""
  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions
  import tensorflow as tf
  import tensorflow_transform.beam as tft_beam
  from tensorflow_transform.tf_metadata import dataset_metadata
  from tensorflow_transform.tf_metadata import metadata_io
  from tensorflow_transform.tf_metadata import schema_utils
  # pylint: enable=g-import-not-at-top
  schema = dataset.schema
  raw_metadata = dataset_metadata.DatasetMetadata(
      schema_utils.schema_from_feature_spec(dataset.raw_feature_spec()))
  preprocessing_fn = dataset.preprocessing_fn
  data_source = dataset[source]
  data_source.files()  # Fail fast, before Beam starts, on missing files.

  tf.io.gfile.makedirs(output_dir)
  complete = os.path.join(output_dir, 'metadata.json')
  if tf.io.gfile.exists(complete):
    # Not complete any more: no task may take it while it is rewritten.
    tf.io.gfile.remove(complete)
  work_dir = os.path.join(output_dir, 'tmp')
  # Written by a Beam worker, so on a path every runner's workers can reach.
  stats_path = os.path.join(work_dir, 'statistics.json')
  pipeline_args = list(pipeline_args or [])
  if not any(a.startswith('--runner') for a in pipeline_args):
    # Beam's default (Prism) downloads a binary at start; run in-process.
    pipeline_args.append('--runner=DirectRunner')
  options = PipelineOptions(pipeline_args)
  files = data_source.files()
  logger.info('Analyzing %s (%s) into %s', source,
              f'{len(files)} files' if files else 'in memory', output_dir)
  try:
    pipeline = beam.Pipeline(options=options)
    with tft_beam.Context(temp_dir=work_dir, force_tf_compat_v1=False):
      rows = data_source.beam_source(pipeline)
      transform_fn = ((rows, raw_metadata)
                      | 'Analyze' >> tft_beam.AnalyzeDataset(
                          preprocessing_fn))
      _ = transform_fn | 'WriteTransformFn' >> tft_beam.WriteTransformFn(
          output_dir)
      _ = (rows
           | 'Statistics' >> beam.CombineGlobally(_StatisticsFn(schema))
           | 'WriteStatistics' >> beam.Map(_write_json, stats_path))
    # As `with beam.Pipeline()` would, keeping the result: its metrics
    # count the bad records skipped.
    result = pipeline.run()
    result.wait_until_finish()
  except DataError as e:
    # Beam re-raises a worker's error as the same type, its message suffixed
    # with the step that failed: keep just the data error's text.
    raise DataError(_BEAM_STEP.sub('', str(e))) from None
  except Exception as e:  # pylint: disable=broad-except
    # Runners may wrap it in another error; recover the data error's text.
    match = re.search(r'DataError: (.+?)(?:\n|$)', str(e))
    if match:
      raise DataError(_BEAM_STEP.sub('', match.group(1))) from None
    raise
  metadata_io.write_metadata(raw_metadata, os.path.join(output_dir,
                                                        'metadata'))
  with tf.io.gfile.GFile(stats_path) as f:
    metadata = Metadata.from_dict(json.load(f))
  _faults.point('analysis.metadata')
  # metadata.json last (renamed into place): its presence marks a complete
  # analysis.
  metadata.save(complete)
  if tf.io.gfile.exists(work_dir):
    tf.io.gfile.rmtree(work_dir)
  logger.info('Analyzed %d instances of %s', metadata.instances, source)
  skipped = bad_records(result)
  if skipped or getattr(data_source, 'skip_bad_records', False):
    logger.warning('Skipped %d bad records of %s', skipped, source)
  return metadata


def bad_records(result):
  """How many bad records the sources of a finished pipeline skipped."""
  from apache_beam.metrics.metric import MetricsFilter  # pylint: disable=g-import-not-at-top
  from tensorfx.data._csv import BAD_RECORDS_COUNTER  # pylint: disable=g-import-not-at-top
  try:
    counters = result.metrics().query(MetricsFilter().with_namespace(
        'tensorfx').with_name(BAD_RECORDS_COUNTER))['counters']
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(path, 'w') as f:
    json.dump(value, f)


class _StatisticsFn(beam.CombineFn):
  """Computes metadata.json's statistics in one pass."""

  def __init__(self, schema):
    super().__init__()
    self._fields = [(f.name, f.type.value) for f in schema]

  def create_accumulator(self):
    return {'instances': 0,
            'fields': {name: _new(kind) for name, kind in self._fields}}

  def add_input(self, acc, row):
    acc['instances'] += 1
    for name, kind in self._fields:
      _add(acc['fields'][name], kind, row.get(name))
    return acc

  def merge_accumulators(self, accs):
    accs = list(accs)
    merged = accs[0]
    for acc in accs[1:]:
      merged['instances'] += acc['instances']
      for name, kind in self._fields:
        _merge(merged['fields'][name], acc['fields'][name], kind)
    return merged

  def extract_output(self, acc):
    fields = {}
    for name, kind in self._fields:
      fields[name] = _finish(acc['fields'][name], kind)
    return {'instances': acc['instances'], 'fields': fields}


def _new(kind):
  if kind == 'discrete':
    return {'count': 0, 'values': {}, 'truncated': False}
  return {'count': 0, 'min': math.inf, 'max': -math.inf, 'sum': 0.0,
          'sum_sq': 0.0}


def _add(stats, kind, value):
  if value is None:
    return
  values = value if isinstance(value, (list, tuple)) else [value]
  for v in values:
    stats['count'] += 1
    if kind == 'discrete':
      if isinstance(v, bytes):
        # tf.Example holds bytes; metadata.json holds text.
        v = v.decode('utf-8', errors='replace')
      counts = stats['values']
      if v in counts or len(counts) < _MAX_COUNTED_VALUES:
        counts[v] = counts.get(v, 0) + 1
      else:
        stats['truncated'] = True
    else:
      v = float(v)
      stats['min'] = min(stats['min'], v)
      stats['max'] = max(stats['max'], v)
      stats['sum'] += v
      stats['sum_sq'] += v * v


def _merge(into, other, kind):
  into['count'] += other['count']
  if kind == 'discrete':
    for v, c in other['values'].items():
      if v in into['values'] or len(into['values']) < _MAX_COUNTED_VALUES:
        into['values'][v] = into['values'].get(v, 0) + c
      else:
        into['truncated'] = True
    into['truncated'] = into['truncated'] or other['truncated']
  else:
    into['min'] = min(into['min'], other['min'])
    into['max'] = max(into['max'], other['max'])
    into['sum'] += other['sum']
    into['sum_sq'] += other['sum_sq']


def _finish(stats, kind):
  count = stats['count']
  if kind == 'discrete':
    ordered = sorted(stats['values'].items(), key=lambda kv: (-kv[1], kv[0]))
    result = {'type': kind, 'count': count,
              'vocabulary': dict(ordered[:_MAX_LISTED_VALUES]),
              'vocabulary_size': len(ordered)}
    if stats['truncated'] or len(ordered) > _MAX_LISTED_VALUES:
      result['vocabulary_truncated'] = True
    return result
  if not count:
    return {'type': kind, 'count': 0}
  mean = stats['sum'] / count
  variance = max(stats['sum_sq'] / count - mean * mean, 0.0)
  return {'type': kind, 'count': count, 'min': stats['min'],
          'max': stats['max'], 'mean': mean, 'std': math.sqrt(variance)}
