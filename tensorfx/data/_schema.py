"""Schema: the names, types and shapes of the fields of raw data (YAML)."""

import dataclasses
import enum
import re
from typing import Any

from tensorfx import _yaml
from tensorfx.data._collection import NamedCollection
from tensorfx.data._names import Names

_IDENTIFIER = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_FIELD_KEYS = (
  'name',
  'type',
  'length',
  'default',
  'missing',
  'na_values',
  'description',
)
# What a missing value of a field means (besides a constant `default`); see
# tensorfx.data._missing.
MISSING_POLICIES = ('mean', 'median', 'mode', 'zero', 'error')
_NUMERIC_POLICIES = ('mean', 'median', 'zero')


class SchemaFieldType(enum.StrEnum):
  """The type of the values of a schema field.

  Example:
    >>> SchemaFieldType('real').numeric
    True
  """

  INTEGER = 'integer'
  REAL = 'real'
  DISCRETE = 'discrete'
  # The original tensorfx's spelling of the same members.
  integer = 'integer'
  real = 'real'
  discrete = 'discrete'

  @classmethod
  def _missing_(cls, value):
    # The original tensorfx schemas said 'numeric' for real-valued fields.
    return member_named(cls, value, {'numeric': 'real'})

  @property
  def numeric(self):
    """Whether values are numbers (integer or real)."""
    return self is not SchemaFieldType.DISCRETE


def member_named(enum_class, value, aliases):
  """The member `value` names, in any case or by an alias (lower case), or None.

  The `_missing_` of `SchemaFieldType` and `FeatureType`.
  """
  name = value.strip().lower() if isinstance(value, str) else None
  return enum_class._value2member_map_.get(aliases.get(name, name))


def _accepted_types():
  return ', '.join(t.value for t in SchemaFieldType)


def is_identifier(name):
  """Whether `name` is letters, digits and underscores, not starting a digit."""
  return isinstance(name, str) and bool(_IDENTIFIER.match(name))


def _is_int(value):
  return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class SchemaField:
  """One field (column) of raw data.

  Example:
    >>> field = SchemaField('petal_length', 'real', default=0.0)
    >>> field.type, field.numeric, field.multivalent
    (<SchemaFieldType.REAL: 'real'>, True, False)

  Attributes:
    name: the field's name: letters, digits and underscores, not starting
      with a digit.
    type: a `SchemaFieldType` (or its name, e.g. 'real').
    length: 1 for a scalar, N > 1 for a list of exactly N values, 0 for a
      list of any length (multivalent).
    default: a constant for a missing value (an empty cell, an absent
      feature or key, NaN), put in by the readers. Must match the type (an
      int for integer fields, a number for real fields, a str for discrete
      ones).
    missing: what a missing value means, imputed by the transform graph
      (so training and serving agree): 'mean', 'median' (numeric fields),
      'mode' (the most frequent value), 'zero' (numeric fields), from the
      analysis of the values present; or 'error'. Single-valued fields
      only; not with `default`. Without either, a missing discrete value is
      the empty string (out of every vocabulary) and a missing number an
      error.
    na_values: the texts that stand for a missing value in this field's
      CSV cells (and served CSV lines and dict values), besides the empty
      cell: e.g. `['NA']` for files written by R or pandas, `['?']` for
      the UCI repository's. Single-valued fields only.
    description: free text, for people.

  Raises:
    DataError: a value is invalid; the message names it.
  """

  name: str
  type: SchemaFieldType
  length: int = 1
  default: float | int | str | None = None
  description: str = ''
  missing: str | None = None
  na_values: tuple[str, ...] = ()

  def __post_init__(self):
    subject = f'SchemaField {self.name!r}'
    if not is_identifier(self.name):
      raise _yaml.Invalid(
        'SchemaField',
        ('name',),
        'a field name must be letters, digits and '
        'underscores, not starting with a digit',
        self.name,
      )
    try:
      kind = SchemaFieldType(self.type)
    except ValueError:
      raise _yaml.Invalid(
        subject,
        ('type',),
        'unknown field type'
        f'{_yaml.did_you_mean(self.type, list(SchemaFieldType))}; '
        f'accepted types are {_accepted_types()}',
        self.type,
      ) from None
    object.__setattr__(self, 'type', kind)
    if not _is_int(self.length) or self.length < 0:
      raise _yaml.Invalid(
        subject,
        ('length',),
        'length must be an integer >= 0 (1: scalar, '
        'N > 1: N values, 0: any number of values)',
        self.length,
      )
    default = self.default
    if default is not None:
      if kind is SchemaFieldType.INTEGER and not _is_int(default):
        raise _yaml.Invalid(
          subject,
          ('default',),
          'the default of an integer field must be an integer',
          default,
        )
      if kind is SchemaFieldType.REAL:
        if not (_is_int(default) or isinstance(default, float)):
          raise _yaml.Invalid(
            subject,
            ('default',),
            'the default of a real field must be a number',
            default,
          )
        # 0 and 0.0 are equal anyway; a float keeps format() stable.
        object.__setattr__(self, 'default', float(default))
      if kind is SchemaFieldType.DISCRETE and not isinstance(default, str):
        raise _yaml.Invalid(
          subject,
          ('default',),
          'the default of a discrete field must be a string (quote it in YAML)',
          default,
        )
    if not isinstance(self.description, str):
      raise _yaml.Invalid(
        subject,
        ('description',),
        'description must be a string',
        self.description,
      )
    self._check_missing(subject, kind)
    self._check_na_values(subject)

  def _check_na_values(self, subject):
    tokens = self.na_values
    if isinstance(tokens, str):
      tokens = (tokens,)
    if isinstance(tokens, (list, tuple)):
      # YAML reads -999 as a number; the cell is text.
      tokens = tuple(
        str(t) if _is_int(t) or isinstance(t, float) else t for t in tokens
      )
    if not isinstance(tokens, (list, tuple)) or not all(
      isinstance(t, str) and t for t in tokens
    ):
      raise _yaml.Invalid(
        subject,
        ('na_values',),
        'na_values must be a list '
        "of non-empty strings (quote them in YAML: 'NA')",
        self.na_values,
      )
    if tokens and self.length != 1:
      raise _yaml.Invalid(
        subject,
        ('na_values',),
        'na_values applies to single-valued fields (length 1)',
        self.na_values,
      )
    # Ordered, without repeats: equal schemas compare equal.
    object.__setattr__(self, 'na_values', tuple(dict.fromkeys(tokens)))

  def _check_missing(self, subject, kind):
    missing = self.missing
    if missing is None:
      return
    policy = missing.strip().lower() if isinstance(missing, str) else missing
    if policy not in MISSING_POLICIES:
      raise _yaml.Invalid(
        subject,
        ('missing',),
        'unknown missing policy'
        f'{_yaml.did_you_mean(missing, MISSING_POLICIES)}; missing must '
        f'be one of {", ".join(MISSING_POLICIES)}',
        missing,
      )
    if self.default is not None:
      raise _yaml.Invalid(
        subject,
        ('missing',),
        'give either missing (a policy) or default (a constant), not both',
        missing,
      )
    if self.length != 1:
      raise _yaml.Invalid(
        subject,
        ('missing',),
        'missing applies to '
        'single-valued fields (length 1); a list field '
        'takes a default, or is empty',
        missing,
      )
    if policy in _NUMERIC_POLICIES and not kind.numeric:
      raise _yaml.Invalid(
        subject,
        ('missing',),
        f'missing: {policy} needs a '
        f'numeric field; {self.name!r} is discrete (use '
        'mode, or a default)',
        missing,
      )
    object.__setattr__(self, 'missing', policy)

  @classmethod
  def integer(cls, name, **options):
    """An integer field (the original tensorfx's factory).

    Example:
      >>> SchemaField.integer('count').type
      <SchemaFieldType.INTEGER: 'integer'>

    Args:
      name: the field's name.
      **options: `length`, `default`, `missing`, `description`.
    """
    return cls(name, SchemaFieldType.INTEGER, **options)

  @classmethod
  def real(cls, name, **options):
    """A real-valued field (the original tensorfx's factory).

    Example:
      >>> SchemaField.real('petal_length').numeric
      True
    """
    return cls(name, SchemaFieldType.REAL, **options)

  @classmethod
  def discrete(cls, name, **options):
    """A discrete (string) field (the original tensorfx's factory).

    Example:
      >>> SchemaField.discrete('species').numeric
      False
    """
    return cls(name, SchemaFieldType.DISCRETE, **options)

  class _Numeric:
    """`field.numeric`: whether a field holds numbers (integer or real).

    On the class, the original tensorfx's factory of a number field:
    `SchemaField.numeric('x')` is `SchemaField.real('x')`.
    """

    def __get__(self, field, cls):
      if field is None:
        return cls.real
      return field.type.numeric

  numeric = _Numeric()

  @property
  def multivalent(self):
    """Whether the field holds a list of values (length other than 1)."""
    return self.length != 1

  def to_dict(self):
    """The YAML mapping of the field, without the values left at default."""
    data: dict[str, Any] = {'name': self.name, 'type': self.type.value}
    if self.length != 1:
      data['length'] = self.length
    if self.default is not None:
      data['default'] = self.default
    if self.missing is not None:
      data['missing'] = self.missing
    if self.na_values:
      data['na_values'] = list(self.na_values)
    if self.description:
      data['description'] = self.description
    return data


class Schema(NamedCollection):
  """The fields of raw data, in column order. Immutable; equal by value.

  Example:
    >>> schema = Schema.parse('''
    ... fields:
    ... - name: species
    ...   type: discrete
    ... - name: petal_length
    ...   type: real
    ... ''')
    >>> schema.field_names
    ('species', 'petal_length')
    >>> schema['petal_length'].numeric, schema.index('petal_length')
    (True, 1)

  Args:
    fields: the `SchemaField`s, names unique.

  Raises:
    DataError: a field is not a SchemaField, or two share a name.
  """

  _KIND = 'Schema'
  _NOUN = 'a schema'
  _KEY = 'fields'
  _ITEM = 'field'
  _ITEM_CLASS = 'SchemaField'

  def __init__(self, fields):
    self._keep(fields, SchemaField)

  @property
  def fields(self):
    """The fields, a tuple of `SchemaField`s in column order.

    It also equals the list of their names, as the original tensorfx's
    `fields` did: `schema.fields == ['species', 'petal_length']`.
    """
    return Names(self._items)

  @property
  def field_names(self):
    """The names of the fields, in column order."""
    return tuple(self._positions)

  def index(self, name):
    """The column index of the field `name`.

    Raises:
      DataError: no field has that name.
    """
    self._check_name(name)
    return self._positions[name]

  @classmethod
  def parse(cls, text, source='<string>'):
    r"""Parses a schema from YAML text.

    Example:
      >>> Schema.parse('fields:\n- name: x\n  type: real\n')['x'].type
      <SchemaFieldType.REAL: 'real'>

    Args:
      text: YAML: a mapping whose `fields` lists mappings with `name`,
        `type` and optionally `length`, `default`, `missing`, `na_values`
        and `description`.
      source: where the text came from, for error messages.

    Raises:
      DataError: the text is invalid; names the source, line and key path.
    """
    return cls._parse_list(text, source, _parse_field)

  def with_na_values(self, tokens):
    r"""This schema with `tokens` among every single-valued field's na_values.

    What a data set's `na_values=` does: one convention for every column.

    Example:
      >>> Schema.parse('fields:\\n- name: x\\n  type: real\\n').with_na_values(
      ...     ['NA'])['x'].na_values
      ('NA',)
    """
    tokens = tuple(tokens or ())
    if not tokens:
      return self
    return Schema(
      [
        dataclasses.replace(f, na_values=f.na_values + tokens)
        if f.length == 1
        else f
        for f in self._items
      ]
    )


def _parse_field(item, where):
  """Builds a SchemaField from its YAML mapping at `where`."""
  if not isinstance(item, dict):
    raise where.error('a field must be a mapping with a name and a type', item)
  _yaml.check_keys(where, item, _FIELD_KEYS, 'a field')
  for key in ('name', 'type'):
    if key not in item:
      raise where.error(f'a field needs a {key!r}', item)
  try:
    return SchemaField(**item)
  except _yaml.Invalid as e:
    raise where.relocate(item, e) from None
