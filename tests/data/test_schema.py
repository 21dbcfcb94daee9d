"""Tests of Schema, SchemaField and the YAML helpers they use."""

import re
import subprocess
import sys

import pytest

from tensorfx import DataError
from tensorfx import _yaml
from tensorfx.data import Schema
from tensorfx.data import SchemaField
from tensorfx.data import SchemaFieldType

IRIS = """\
fields:
- name: species
  type: discrete
- name: petal_length
  type: real
  default: 0.0        # optional
  length: 1           # optional
"""


def _error(text, source='schema.yaml'):
  """The message of the DataError that parsing `text` raises."""
  with pytest.raises(DataError) as info:
    Schema.parse(text, source)
  return str(info.value)


def test_parses_the_iris_format():
  schema = Schema.parse(IRIS)
  assert schema == Schema(
    [
      SchemaField('species', SchemaFieldType.DISCRETE),
      SchemaField('petal_length', SchemaFieldType.REAL, default=0.0),
    ]
  )
  assert schema.field_names == ('species', 'petal_length')
  assert schema['petal_length'].default == 0.0
  assert schema['petal_length'].length == 1


def test_round_trip_keeps_every_attribute():
  schema = Schema(
    [
      SchemaField('id', 'integer', default=-1, description='row id'),
      SchemaField('x', 'real', length=3, default=1.5),
      SchemaField('tags', 'discrete', length=0, default=''),
      SchemaField('code', 'discrete', default='007'),  # Must stay a string.
    ]
  )
  text = schema.format()
  assert Schema.parse(text) == schema
  assert Schema.parse(Schema.parse(text).format()) == schema


def test_format_omits_defaults():
  schema = Schema.parse(IRIS)
  assert schema.format() == (
    'fields:\n'
    '- name: species\n'
    '  type: discrete\n'
    '- name: petal_length\n'
    '  type: real\n'
    '  default: 0.0\n'
  )


def test_sequence_and_lookup():
  schema = Schema.parse(IRIS)
  assert len(schema) == 2
  assert [f.name for f in schema] == ['species', 'petal_length']
  assert schema[0].name == 'species'
  assert schema[-1].name == 'petal_length'
  assert schema.fields == tuple(schema)
  assert 'species' in schema and 'nope' not in schema
  assert schema.index('petal_length') == 1


@pytest.mark.parametrize(
  'lookup',
  [
    lambda schema: schema['sepal_width'],
    lambda schema: schema.index('sepal_width'),
  ],
)
def test_unknown_field_names_it_and_the_known_ones(lookup):
  schema = Schema.parse(IRIS)
  with pytest.raises(
    DataError,
    match=re.escape(
      "no field named 'sepal_width'; the fields are species, petal_length. "
      "Received: 'sepal_width'"
    ),
  ):
    lookup(schema)


def test_equal_by_value_and_hashable():
  a = Schema.parse(IRIS, 'a.yaml')
  b = Schema.parse('# other comments\n' + IRIS, 'b.yaml')
  assert a == b and hash(a) == hash(b)
  assert a != Schema(list(a)[:1])


def test_field_properties():
  assert SchemaField('a', 'integer').numeric
  assert SchemaField('a', 'real').numeric
  assert not SchemaField('a', 'discrete').numeric
  assert not SchemaField('a', 'real').multivalent
  assert SchemaField('a', 'real', length=0).multivalent
  assert SchemaField('a', 'real', length=4).multivalent
  assert SchemaField('a', 'real', default=0).default == 0.0
  assert isinstance(SchemaField('a', 'real', default=0).default, float)


def test_field_type_accepts_the_original_numeric():
  assert Schema.parse('fields:\n- name: a\n  type: numeric\n')['a'].type == (
    SchemaFieldType.REAL
  )


def test_fields_are_frozen():
  field = SchemaField('a', 'real')
  with pytest.raises(AttributeError):
    field.name = 'b'


@pytest.mark.parametrize(
  'kwargs, message',
  [
    (
      dict(name='1a', type='real'),
      'SchemaField: name: a field name must be letters, digits and '
      "underscores, not starting with a digit. Received: name='1a'",
    ),
    (
      dict(name='a', type='float'),
      "SchemaField 'a': type: unknown field type; accepted types are "
      "integer, real, discrete. Received: type='float'",
    ),
    (
      dict(name='a', type='real', length=-2),
      "SchemaField 'a': length: length must be an integer >= 0",
    ),
    (
      dict(name='a', type='integer', default=1.5),
      "SchemaField 'a': default: the default of an integer field must be an "
      'integer. Received: default=1.5',
    ),
  ],
)
def test_field_constructor_validates(kwargs, message):
  with pytest.raises(DataError, match=re.escape(message)):
    SchemaField(**kwargs)


def test_schema_constructor_rejects_duplicates():
  with pytest.raises(
    DataError,
    match=re.escape(
      'Schema: fields[1].name: duplicate field name; fields[0] has the same '
      "name. Received: name='a'"
    ),
  ):
    Schema([SchemaField('a', 'real'), SchemaField('a', 'integer')])


@pytest.mark.parametrize(
  'text, message',
  [
    (
      '- a\n- b\n',
      "schema.yaml:1: a schema must be a mapping with a 'fields' list. "
      "Received: ['a', 'b']",
    ),
    (
      '',
      "schema.yaml:1: a schema must be a mapping with a 'fields' list. "
      'Received: None',
    ),
    (
      'columns: []\n',
      "schema.yaml:1: columns: unknown key 'columns' in a schema; accepted "
      'keys are fields. Received: columns=[]',
    ),
    (
      'fields: []\n',
      'schema.yaml:1: fields: fields must be a non-empty list of fields. '
      'Received: fields=[]',
    ),
    (
      'fields:\n- name: a\n  type: real\n- species\n',
      'schema.yaml:4: fields[1]: a field must be a mapping with a name and a '
      "type. Received: fields[1]='species'",
    ),
    (
      'fields:\n- type: real\n',
      "schema.yaml:2: fields[0]: a field needs a 'name'. Received: "
      "fields[0]={'type': 'real'}",
    ),
    (
      'fields:\n- name: a\n',
      "schema.yaml:2: fields[0]: a field needs a 'type'.",
    ),
    (
      'fields:\n- name: a\n  type: real\n- name: a\n  type: integer\n',
      'schema.yaml:4: fields[1].name: duplicate field name; fields[0] has the '
      "same name. Received: name='a'",
    ),
    (
      'fields:\n- name: petal length\n  type: real\n',
      'schema.yaml:2: fields[0].name: a field name must be letters, digits '
      'and underscores, not starting with a digit. Received: '
      "name='petal length'",
    ),
    (
      'fields:\n- name: 2x\n  type: real\n',
      'schema.yaml:2: fields[0].name: a field name must be letters',
    ),
    (
      'fields:\n- name: a\n  type: real\n- name: b\n  type: text\n',
      'schema.yaml:5: fields[1].type: unknown field type; accepted types are '
      "integer, real, discrete. Received: type='text'",
    ),
    (
      'fields:\n- name: a\n  type: real\n  length: -1\n',
      'schema.yaml:4: fields[0].length: length must be an integer >= 0 (1: '
      'scalar, N > 1: N values, 0: any number of values). Received: '
      'length=-1',
    ),
    (
      'fields:\n- name: a\n  type: real\n  default: none\n',
      'schema.yaml:4: fields[0].default: the default of a real field must be '
      "a number. Received: default='none'",
    ),
    (
      'fields:\n- name: a\n  type: integer\n  default: 0.5\n',
      'schema.yaml:4: fields[0].default: the default of an integer field '
      'must be an integer. Received: default=0.5',
    ),
    (
      'fields:\n- name: a\n  type: discrete\n  default: 7\n',
      'schema.yaml:4: fields[0].default: the default of a discrete field must '
      'be a string (quote it in YAML). Received: default=7',
    ),
    (
      'fields:\n- name: a\n  type: real\n  size: 2\n  shape: 3\n',
      "schema.yaml:4: fields[0].size: unknown keys 'size', 'shape' in a "
      'field; accepted keys are name, type, length, default, missing, '
      'na_values, description. Received: size=2',
    ),
    (
      'fields:\n- name: a\n  type: real\n  type: integer\n',
      "schema.yaml:4:3: invalid YAML: found duplicate key 'type'.",
    ),
    (
      'fields:\n- name: a\n  type: [real\n',
      'schema.yaml:4:1: invalid YAML: expected',
    ),
  ],
)
def test_parse_errors_name_source_line_and_key(text, message):
  assert _error(text).startswith(message)


def test_load_reads_a_file(tmp_path):
  path = tmp_path / 'schema.yaml'
  path.write_text(IRIS)
  assert Schema.load(str(path)) == Schema.parse(IRIS)


def test_load_errors_name_the_path(tmp_path):
  path = tmp_path / 'schema.yaml'
  path.write_text('fields:\n- name: a\n  type: bad\n')
  with pytest.raises(DataError, match=re.escape(f'{path}:3: fields[0].type')):
    Schema.load(str(path))


def test_load_of_a_missing_file_names_it(tmp_path):
  path = str(tmp_path / 'missing.yaml')
  with pytest.raises(DataError, match=re.escape(f'{path}: no such file')):
    Schema.load(path)


def test_load_of_a_directory_names_it(tmp_path):
  with pytest.raises(DataError, match=re.escape(f'{tmp_path}: is a directory')):
    Schema.load(str(tmp_path))


def test_load_yaml_remembers_lines():
  doc = _yaml.load_yaml('a: 1\nb:\n- x\n- y: 2\n  z: 3\n', 'f.yaml')
  assert doc == {'a': 1, 'b': ['x', {'y': 2, 'z': 3}]}
  assert doc.line == 1
  assert doc.lines == {'a': 1, 'b': 2}
  assert doc['b'].lines == [3, 4]
  assert doc['b'][1].lines == {'y': 4, 'z': 5}


def test_load_yaml_is_safe():
  with pytest.raises(
    DataError,
    match=re.escape(
      'f.yaml:1:4: invalid YAML: could not determine a constructor'
    ),
  ):
    _yaml.load_yaml('a: !!python/object/apply:os.system [echo]\n', 'f.yaml')


def test_dump_yaml_keeps_order():
  assert _yaml.dump_yaml({'b': (1, 2), 'a': SchemaFieldType.REAL}) == (
    'b:\n- 1\n- 2\na: real\n'
  )


def test_importing_does_not_import_tensorflow():
  code = (
    'import sys, tensorfx.data._schema, tensorfx.data._featureset, '
    'tensorfx.data._metadata, tensorfx._yaml; '
    "assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
  )
  subprocess.run([sys.executable, '-c', code], check=True)
