"""Tests of the Beam analysis and of a DataSet's use of its output."""

import collections
import csv
import json
import math
import os
import re

import pytest

from tensorfx import DataError
from tensorfx.data import CsvDataSet
from tensorfx.data import Metadata
from tensorfx.data import Schema

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

IRIS = os.path.join(
  os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
  'samples',
  'iris',
)
IRIS_SCHEMA = os.path.join(IRIS, 'schema.yaml')
IRIS_FEATURES = os.path.join(IRIS, 'features.yaml')
IRIS_TRAIN = os.path.join(IRIS, 'data', 'train.csv')
IRIS_FIELDS = (
  'species',
  'sepal_length',
  'sepal_width',
  'petal_length',
  'petal_width',
)


def _iris_columns():
  """The iris training data read by hand: field name -> list of values."""
  with open(IRIS_TRAIN) as f:
    rows = [row for row in csv.reader(f) if row]
  columns = {
    name: [row[i] for row in rows] for i, name in enumerate(IRIS_FIELDS)
  }
  for name in IRIS_FIELDS[1:]:
    columns[name] = [float(v) for v in columns[name]]
  return columns


def _iris(**kwargs):
  return CsvDataSet(
    IRIS_SCHEMA, features=IRIS_FEATURES, train=IRIS_TRAIN, **kwargs
  )


# What analysis writes.


def test_writes_the_transform_graph_schemas_and_statistics(iris_analysis):
  for path in (
    'transform_fn/saved_model.pb',
    'transform_fn/assets/Y',
    'transformed_metadata/schema.pbtxt',
    'metadata/schema.pbtxt',
    'metadata.json',
  ):
    assert os.path.isfile(os.path.join(iris_analysis, path)), path
  assert not os.path.exists(os.path.join(iris_analysis, 'tmp'))


def test_metadata_json_holds_the_statistics_of_the_data(iris_analysis):
  columns = _iris_columns()
  with open(os.path.join(iris_analysis, 'metadata.json')) as f:
    metadata = Metadata.from_dict(json.load(f))

  assert metadata.instances == len(columns['species']) == 120
  for name in IRIS_FIELDS[1:]:
    values = columns[name]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    stats = metadata.field(name)
    assert stats['type'] == 'real'
    assert stats['count'] == 120
    assert stats['min'] == pytest.approx(min(values))
    assert stats['max'] == pytest.approx(max(values))
    assert stats['mean'] == pytest.approx(mean)
    assert stats['std'] == pytest.approx(std)
  species = metadata.field('species')
  assert dict(species['vocabulary']) == dict(
    collections.Counter(columns['species'])
  )
  assert species['vocabulary_size'] == 3
  assert metadata.vocabulary('species') == ['setosa', 'versicolor', 'virginica']


def test_the_raw_schema_is_written_for_the_transform_output(
  iris_dataset_factory,
):
  dataset = iris_dataset_factory()
  output = dataset.transform_output

  assert output.raw_feature_spec() == dataset.raw_feature_spec()
  assert sorted(output.transformed_feature_spec()) == ['X', 'Y']
  assert [v.decode() for v in output.vocabulary_by_name('Y')] == [
    'virginica',
    'versicolor',
    'setosa',
  ]  # Tied counts: by value, down.


# A DataSet's analysis state.


def test_a_dataset_given_the_analysis_uses_it(iris_analysis):
  for metadata in (iris_analysis, os.path.join(iris_analysis, 'metadata.json')):
    dataset = _iris(metadata=metadata)
    assert dataset.analyzed
    assert dataset.analysis_dir == iris_analysis
    assert dataset.metadata.instances == 120
    assert dataset.transformed_features['Y'].vocabulary == (
      'virginica',
      'versicolor',
      'setosa',
    )


def test_a_dataset_without_analysis_says_so(tmp_path):
  for dataset in (_iris(), _iris(metadata=str(tmp_path))):
    assert not dataset.analyzed
    assert dataset.metadata is None
    with pytest.raises(
      DataError,
      match=re.escape(
        'The dataset has not been analyzed: pass metadata= (or '
        '--data-metadata) with a `tensorfx analyze` output directory, or '
        f'call analyze(). Received: metadata={dataset.analysis_dir!r}'
      ),
    ):
      dataset.transform_output  # noqa: B018  (reading the property raises)


def test_use_analysis_takes_only_a_complete_analysis(tmp_path, iris_analysis):
  incomplete = tmp_path / 'incomplete'
  incomplete.mkdir()
  (incomplete / 'metadata.json').write_text('{"instances": 1}')  # No graph.
  dataset = _iris()

  assert not dataset.use_analysis(str(incomplete))
  assert not dataset.use_analysis(str(tmp_path / 'missing'))
  assert dataset.analysis_dir is None
  assert dataset.use_analysis(iris_analysis)
  assert dataset.analyzed
  assert dataset.metadata.instances == 120
  assert not dataset.use_analysis(str(incomplete))
  assert dataset.analysis_dir == iris_analysis  # Still the good one.


# Analysis failures.


def test_a_bad_row_fails_analysis_naming_file_and_line(tmp_path):
  path = tmp_path / 'train.csv'
  path.write_text('setosa,5.1,3.5,1.4,0.2\n\nsetosa,4.9,3.0,wide,0.2\n')
  output = tmp_path / 'analysis'
  dataset = CsvDataSet(IRIS_SCHEMA, features=IRIS_FEATURES, train=str(path))

  with pytest.raises(DataError) as info:
    dataset.analyze(str(output))
  assert str(info.value) == (
    f"{path}:3: column 'petal_length' is not a real number: wide"
  )
  assert info.value.__cause__ is None
  assert not (output / 'metadata.json').exists()
  assert not dataset.analyzed


def test_a_missing_file_fails_before_beam_starts(tmp_path, monkeypatch):
  from tensorfx.data import _analysis

  def no_pipeline(*args, **kwargs):
    raise AssertionError('Beam started')

  monkeypatch.setattr(_analysis.beam, 'Pipeline', no_pipeline)
  missing = str(tmp_path / 'train-*.csv')
  output = tmp_path / 'analysis'
  dataset = CsvDataSet(IRIS_SCHEMA, features=IRIS_FEATURES, train=missing)

  with pytest.raises(
    DataError, match=re.escape(f'No data file matches {missing!r}.')
  ):
    dataset.analyze(str(output))
  assert not output.exists()


def test_analysis_needs_features_and_a_known_source(tmp_path):
  dataset = CsvDataSet(IRIS_SCHEMA, train=IRIS_TRAIN)
  with pytest.raises(DataError, match='Analysis needs a feature set'):
    dataset.analyze(str(tmp_path))
  with pytest.raises(
    DataError,
    match=re.escape("The dataset has no source 'eval'; it has ['train']."),
  ):
    _iris().analyze(str(tmp_path), source='eval')


# The statistics, without Beam: vectorized over record batches.


def _batch(schema, **columns):
  from tensorfx.data import _arrow

  return _arrow.record_batch(columns, schema)


def test_statistics_merge_partial_results():
  from tensorfx.data import _statistics

  schema = Schema.parse(
    'fields:\n- name: c\n  type: discrete\n- name: v\n  type: integer\n'
  )
  values = [('b', 1), ('a', 2), ('b', 3), ('c', 4), ('a', 5), ('b', 6)]
  parts = []
  for chunk in (values[:2], values[2:], []):
    part = _statistics.Statistics(schema)
    if chunk:
      part.add(_batch(schema, c=[c for c, _ in chunk], v=[v for _, v in chunk]))
    parts.append(part)

  merged = parts[0].merge(parts[1]).merge(parts[2])
  stats = merged.result()
  assert stats['instances'] == 6
  assert stats['fields']['c'] == {
    'type': 'discrete',
    'count': 6,
    'vocabulary': {'b': 3, 'a': 2, 'c': 1},
    'vocabulary_size': 3,
  }
  assert stats['fields']['v'] == pytest.approx(
    {
      'type': 'integer',
      'count': 6,
      'min': 1.0,
      'max': 6.0,
      'mean': 3.5,
      'std': math.sqrt(17.5 / 6),
    }
  )
  empty = _statistics.Statistics(schema).result()
  assert empty['fields']['v'] == {'type': 'integer', 'count': 0}


def test_statistics_list_only_the_most_frequent_values(monkeypatch):
  from tensorfx.data import _statistics

  monkeypatch.setattr(_statistics, 'MAX_LISTED_VALUES', 2)
  schema = Schema.parse('fields:\n- name: c\n  type: discrete\n')
  stats = _statistics.Statistics(schema)
  for values in ('abb', 'cccd'):
    stats.add(_batch(schema, c=list(values)))

  assert stats.result()['fields']['c'] == {
    'type': 'discrete',
    'count': 7,
    'vocabulary': {'c': 3, 'b': 2},
    'vocabulary_size': 4,
    'vocabulary_truncated': True,
  }


def test_statistics_count_missing_values_apart():
  from tensorfx.data import _statistics

  schema = Schema.parse("""\
fields:
- name: c
  type: discrete
- name: r
  type: real
  missing: mean
- name: n
  type: integer
  missing: median
""")
  stats = (
    _statistics.Statistics(schema)
    .add(
      _batch(
        schema, c=['a', '', 'a'], r=[1.0, float('nan'), 3.0], n=[4, 5, -(2**63)]
      )
    )
    .result()
  )

  assert stats['fields']['c'] == {
    'type': 'discrete',
    'count': 2,
    'missing': 1,
    'vocabulary': {'a': 2},
    'vocabulary_size': 1,
  }
  assert stats['fields']['r'] == pytest.approx(
    {
      'type': 'real',
      'count': 2,
      'missing': 1,
      'min': 1.0,
      'max': 3.0,
      'mean': 2.0,
      'std': 1.0,
    }
  )
  assert stats['fields']['n'] == pytest.approx(
    {
      'type': 'integer',
      'count': 2,
      'missing': 1,
      'min': 4.0,
      'max': 5.0,
      'mean': 4.5,
      'std': 0.5,
    }
  )
