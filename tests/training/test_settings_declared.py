"""Each setting is declared once: its field says its flag, default and check.

The parser, the checks and the dataclass all come from that declaration,
so they cannot disagree.
"""

import argparse
import dataclasses

import pytest

from tensorfx import ConfigurationError
from tensorfx import _argparsing
from tensorfx import training
from tensorfx.training import _settings
from tensorfx.training._settings import _section

# Fields whose value comes from another section's flag.
DERIVED = {
  ('optimizer', 'max_steps'): ('loop', 'max_steps'),
  ('validation', 'batch_size'): ('loop', 'batch_size'),
}


def _sections():
  for field in dataclasses.fields(_settings.Settings):
    yield field.name, field.type


def test_parsed_defaults_are_the_dataclass_defaults():
  parsed = _settings.Settings.from_args(training.ModelArguments.parse([]))
  declared = _settings.Settings()
  for name, _ in _sections():
    for field in dataclasses.fields(getattr(declared, name)):
      value = getattr(getattr(parsed, name), field.name)
      source = DERIVED.get((name, field.name))
      if source:
        assert value == getattr(getattr(parsed, source[0]), source[1])
      else:
        assert value == getattr(getattr(declared, name), field.name), (
          f'{name}.{field.name}'
        )


def test_every_flag_has_one_declaration():
  owners = {}
  for name, section in _sections():
    for flag in section.ordered_flags():
      for spelling in flag.names:
        assert spelling not in owners, (spelling, owners.get(spelling), name)
        owners[spelling] = name
  parser = training.ModelArguments.build_parser()
  parsed = {
    action.option_strings[0]
    for action in _argparsing.actions(parser)
    if action.option_strings and action.dest not in ('help', 'version')
  }
  # Every flag of a trainer is a declared setting, and vice versa.
  assert parsed == set(owners) - _aliases(), parsed ^ set(owners)


def _aliases():
  return {
    spelling
    for _, section in _sections()
    for flag in section.ordered_flags()
    for spelling in flag.names[1:]
  }


def test_a_declared_check_names_the_flag():
  @dataclasses.dataclass(frozen=True)
  class Demo(_section.Section):
    steps: int = _section.setting(
      '--demo-steps',
      group='job',
      type=int,
      default=10,
      check=_section.positive(),
      help='steps (default: %(default)s)',
    )

  parser = argparse.ArgumentParser()
  Demo.add_arguments(parser)
  assert Demo.from_args(parser.parse_args([])) == Demo(steps=10)
  assert Demo.from_args(parser.parse_args(['--demo-steps', '3'])).steps == 3
  with pytest.raises(ConfigurationError, match='--demo-steps must be a '):
    Demo.check(parser.parse_args(['--demo-steps', '0']))
  assert '(default: 10)' in parser.format_help()
