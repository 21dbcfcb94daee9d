"""Tests of Metadata."""

import json
import re

import pytest

from tensorfx import DataError
from tensorfx.data import Metadata

IRIS = """\
{"instances": 120,
 "fields": {
   "petal_length": {"type": "real", "count": 120, "min": 1.0, "max": 6.9, "mean": 3.7, "std": 1.7},
   "species": {"type": "discrete", "count": 120,
               "vocabulary": {"setosa": 40, "versicolor": 40},
               "vocabulary_size": 3}
 }}
"""


def _error(text, source='metadata.json'):
  """The message of the DataError that parsing `text` raises."""
  with pytest.raises(DataError) as info:
    Metadata.parse(text, source)
  return str(info.value)


def test_parses_the_iris_format():
  metadata = Metadata.parse(IRIS)
  assert metadata.instances == 120
  assert list(metadata.fields) == ['petal_length', 'species']
  assert metadata.field('petal_length')['max'] == 6.9
  assert metadata.field('species')['vocabulary_size'] == 3
  assert metadata == Metadata(120, json.loads(IRIS)['fields'])


def test_vocabulary_is_ordered_by_count_then_value():
  metadata = Metadata(
    10,
    {
      'c': {
        'type': 'discrete',
        'count': 10,
        'vocabulary': {'b': 3, 'z': 1, 'a': 3, 'c': 3},
      },
      'l': {'type': 'discrete', 'vocabulary': ['y', 'x']},
    },
  )
  assert metadata.vocabulary('c') == ['a', 'b', 'c', 'z']
  assert metadata.vocabulary('l') == ['y', 'x']  # A list keeps its order.
  assert Metadata.parse(IRIS).vocabulary('species') == ['setosa', 'versicolor']


def test_round_trip():
  metadata = Metadata.parse(IRIS)
  text = metadata.format()
  assert text.startswith('{\n  "instances": 120,\n  "fields": {\n')
  assert Metadata.parse(text) == metadata
  assert Metadata.parse(text).format() == text
  assert Metadata.from_dict(metadata.to_dict()) == metadata
  assert metadata.to_dict() == json.loads(IRIS)


def test_is_read_only_and_copies_its_input():
  fields = {'x': {'type': 'real', 'count': 1, 'min': 0.0}}
  metadata = Metadata(1, fields)
  fields['x']['min'] = 5.0
  assert metadata.field('x')['min'] == 0.0
  with pytest.raises(TypeError):
    metadata.fields['y'] = {}
  with pytest.raises(TypeError):
    metadata.field('x')['min'] = 1.0
  copy = metadata.to_dict()
  copy['fields']['x']['min'] = 9.0
  assert metadata.field('x')['min'] == 0.0


def test_unknown_field_names_it_and_the_known_ones():
  with pytest.raises(
    DataError,
    match=re.escape(
      "Metadata: no statistics for field 'sepal'; the fields are "
      "petal_length, species. Received: 'sepal'"
    ),
  ):
    Metadata.parse(IRIS).field('sepal')


def test_vocabulary_of_a_numeric_field():
  with pytest.raises(
    DataError,
    match=re.escape(
      'Metadata: fields.petal_length: the field has no vocabulary; only '
      "discrete fields do. Received: type='real'"
    ),
  ):
    Metadata.parse(IRIS).vocabulary('petal_length')


@pytest.mark.parametrize(
  'text, message',
  [
    (
      '{"instances": 1,\n "fields": {,}}',
      'metadata.json:2:13: invalid JSON: Expecting property name enclosed in '
      'double quotes.',
    ),
    ('', 'metadata.json:1:1: invalid JSON: Expecting value.'),
    (
      '[1]',
      "metadata.json: metadata must be a mapping with 'instances' and "
      "'fields'. Received: [1]",
    ),
    ('{"fields": {}}', "metadata.json: metadata needs 'instances'."),
    ('{"instances": 3}', "metadata.json: metadata needs 'fields'."),
    (
      '{"instances": -1, "fields": {}}',
      'metadata.json: instances: instances must be an integer >= 0. '
      'Received: instances=-1',
    ),
    (
      '{"instances": 2.5, "fields": {}}',
      'metadata.json: instances: instances must be an integer >= 0. '
      'Received: instances=2.5',
    ),
    (
      '{"instances": 1, "fields": ["a"]}',
      'metadata.json: fields: fields must be a mapping of field name to '
      "statistics. Received: fields=['a']",
    ),
    (
      '{"instances": 1, "fields": {"a": 3}}',
      'metadata.json: fields.a: statistics must be a mapping. Received: a=3',
    ),
    (
      '{"instances": 1, "fields": {"a": {"count": -3}}}',
      'metadata.json: fields.a.count: count must be an integer >= 0. '
      'Received: count=-3',
    ),
    (
      '{"instances": 1, "fields": {"a": {"vocabulary": {"x": "many"}}}}',
      'metadata.json: fields.a.vocabulary: vocabulary must map values to '
      'counts (integers >= 0), or list values in order. Received: '
      "vocabulary={'x': 'many'}",
    ),
    (
      '{"instances": 1, "fields": {}, "rows": 1}',
      "metadata.json: rows: unknown key 'rows'; accepted keys are instances, "
      'fields. Received: rows=1',
    ),
  ],
)
def test_parse_errors_name_source_and_key(text, message):
  assert _error(text) == message


def test_constructor_validates():
  with pytest.raises(
    DataError,
    match=re.escape(
      'Metadata: instances: instances must be an integer >= 0. Received: '
      "instances='many'"
    ),
  ):
    Metadata('many', {})


def test_save_and_load_a_file(tmp_path):
  metadata = Metadata.parse(IRIS)
  path = str(tmp_path / 'out' / 'stats.json')
  assert metadata.save(path) == path
  assert Metadata.load(path) == metadata
  assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == [
    'stats.json'
  ]  # No temporary file left behind.


def test_save_and_load_a_directory(tmp_path):
  metadata = Metadata.parse(IRIS)
  written = metadata.save(str(tmp_path))
  assert written == str(tmp_path / 'metadata.json')
  assert Metadata.load(str(tmp_path)) == metadata
  new_dir = str(tmp_path / 'analysis') + '/'
  assert metadata.save(new_dir) == new_dir + 'metadata.json'
  assert Metadata.load(new_dir) == metadata


def test_save_and_load_go_through_gfile():
  # ram:// exists only inside TensorFlow's filesystem layer.
  metadata = Metadata.parse(IRIS)
  metadata.save('ram://tensorfx-test-metadata/analysis/metadata.json')
  assert Metadata.load('ram://tensorfx-test-metadata/analysis') == metadata


def test_load_of_a_missing_file_names_it(tmp_path):
  path = str(tmp_path / 'metadata.json')
  with pytest.raises(DataError, match=re.escape(f'{path}: no such file')):
    Metadata.load(path)
  with pytest.raises(DataError, match=re.escape(f'{path}: no such file')):
    Metadata.load(str(tmp_path))


def test_load_errors_name_the_path(tmp_path):
  path = tmp_path / 'metadata.json'
  path.write_text('{"instances": 1,\n"fields": }')
  with pytest.raises(DataError, match=re.escape(f'{path}:2:11: invalid JSON')):
    Metadata.load(str(path))
