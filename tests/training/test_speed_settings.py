"""The speed flags: defaults, run configuration keys, checks, help."""

import pytest

from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.training import _settings


def _speed(argv):
  return _settings.Settings.from_args(training.ModelArguments.parse(argv)).speed


def test_defaults():
  speed = _speed([])
  assert (
    speed.jit_compile,
    speed.cache,
    speed.cache_budget_mb,
    speed.precision,
  ) == (False, 'auto', None, 'float32')
  assert _settings.Settings().speed == speed


def test_flags():
  speed = _speed(
    [
      '--jit-compile',
      '--cache',
      'MEMORY',
      '--cache-budget-mb',
      '512',
      '--precision',
      'mixed_bfloat16',
    ]
  )
  assert (
    speed.jit_compile,
    speed.cache,
    speed.cache_budget_mb,
    speed.precision,
  ) == (True, 'memory', 512, 'mixed_bfloat16')
  assert not _speed(['--jit-compile', '--no-jit-compile']).jit_compile


def test_run_configuration_keys(tmp_path):
  config = tmp_path / 'run.yaml'
  config.write_text(
    'jit_compile: true\ncache: none\ncache_budget_mb: 64\n'
    'precision: mixed_float16\n'
  )
  speed = _speed(['--config', str(config)])
  assert (
    speed.jit_compile,
    speed.cache,
    speed.cache_budget_mb,
    speed.precision,
  ) == (True, 'none', 64, 'mixed_float16')


@pytest.mark.parametrize(
  'argv, message',
  [
    (
      ['--cache-budget-mb', '-5'],
      '--cache-budget-mb must be a positive number of MiB. Received: '
      '--cache-budget-mb=-5',
    ),
  ],
)
def test_bad_values_name_the_flag(argv, message):
  with pytest.raises(ConfigurationError, match=message):
    training.ModelArguments.parse(argv)


def test_check_names_a_bad_value_set_from_python():
  args = training.ModelArguments.parse([])
  args.precision = 'float64'
  with pytest.raises(
    ConfigurationError,
    match='--precision must be one of float32, '
    'mixed_float16, mixed_bfloat16. Received: '
    '--precision=float64',
  ):
    _settings.check(args)


def test_help_lists_the_speed_group(capsys):
  with pytest.raises(SystemExit):
    training.ModelArguments.parse(['--help'])
  text = capsys.readouterr().out
  speed = text[text.index('speed:') :]
  for flag in (
    '--jit-compile',
    '--cache {auto,memory,none}',
    '--cache-budget-mb MB',
    '--precision',
  ):
    assert flag in speed
