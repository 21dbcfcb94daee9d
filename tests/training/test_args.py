"""Tests of ModelArguments: standard flags, indexed list flags, validation."""

import json
import os
import subprocess
import sys

import pytest

from tensorfx import ConfigurationError
from tensorfx.training import ModelArguments

ROOT = os.path.dirname(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)


class Arguments(ModelArguments):
  """A model's arguments: a learning rate and hidden layers."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    # Replaces the standard --learning-rate (trainers written before it).
    parser.add_argument('--learning-rate', type=float, default=0.01)
    cls.add_list_argument(
      parser, '--hidden-layers', type=int, help='units of each hidden layer'
    )
    cls.add_list_argument(
      parser, '--activations', choices=('relu', 'tanh'), default=['relu']
    )
    return parser

  def process(self):
    super().process()
    if self.learning_rate > 1:
      raise ConfigurationError(
        '--learning-rate must be at most 1. '
        f'Received: --learning-rate={self.learning_rate}'
      )
    self.layer_count = len(self.hidden_layers or [])


# Defaults and standard flags.


def test_defaults():
  args = ModelArguments.parse([])
  assert args.data_train is None
  assert args.data_eval is None
  assert args.data_schema is None
  assert args.data_metadata is None
  assert args.data_features is None
  assert args.output is None
  assert args.max_steps == 1000
  assert args.batch_size == 64
  assert args.eval_batch_size == 64  # Derived from --batch-size.
  assert args.epochs is None
  assert args.checkpoint_interval_secs == 60
  assert args.checkpoint_interval_steps is None
  assert args.log_level == 'info'
  assert args.log_level_tensorflow == 'warning'
  assert args.log_interval_steps == 100
  assert args.steps_per_loop is None
  assert args.cluster_timeout_secs == 300
  assert args.seed is None
  assert args.shuffle is True


def test_default_is_parse_of_nothing():
  args = ModelArguments.default()
  assert type(args) is ModelArguments
  assert args == ModelArguments.parse([])
  assert args.output is None


def test_default_of_subclass_runs_its_process():
  args = Arguments.default()
  assert type(args) is Arguments
  assert args.learning_rate == 0.01
  assert args.hidden_layers is None
  assert args.activations == ['relu']
  assert args.layer_count == 0


def test_every_standard_flag():
  args = ModelArguments.parse(
    [
      '--data-train',
      'a.csv',
      'gs://b/c-*.csv',
      '--data-eval',
      'e.csv',
      '--data-schema',
      'schema.yaml',
      '--data-metadata',
      'analysis',
      '--data-features',
      'features.yaml',
      '--output',
      '/tmp/out',
      '--max-steps',
      '50',
      '--batch-size',
      '32',
      '--eval-batch-size',
      '128',
      '--epochs',
      '3',
      '--checkpoint-interval-secs',
      '30',
      '--checkpoint-interval-steps',
      '500',
      '--log-level',
      'debug',
      '--log-level-tensorflow',
      'error',
      '--log-interval-steps',
      '10',
      '--steps-per-loop',
      '8',
      '--seed',
      '7',
      '--no-shuffle',
    ]
  )
  assert args.data_train == ['a.csv', 'gs://b/c-*.csv']
  assert args.data_eval == ['e.csv']
  assert args.data_schema == 'schema.yaml'
  assert args.data_metadata == 'analysis'
  assert args.data_features == 'features.yaml'
  assert args.output == '/tmp/out'
  assert args.max_steps == 50
  assert args.batch_size == 32
  assert args.eval_batch_size == 128
  assert args.epochs == 3
  assert args.checkpoint_interval_secs == 30
  assert args.checkpoint_interval_steps == 500
  assert args.log_level == 'debug'
  assert args.log_level_tensorflow == 'error'
  assert args.log_interval_steps == 10
  assert args.steps_per_loop == 8
  assert args.seed == 7
  assert args.shuffle is False


def test_equals_form_and_shuffle_on():
  args = ModelArguments.parse(
    ['--batch-size=16', '--output=gs://b/job', '--shuffle']
  )
  assert args.batch_size == 16
  assert args.output == 'gs://b/job'
  assert args.shuffle is True


@pytest.mark.parametrize('steps', ['0', '-1'])
def test_max_steps_zero_or_less_is_allowed(steps):
  assert ModelArguments.parse(['--max-steps', steps]).max_steps == int(steps)


def test_log_levels_are_case_insensitive():
  args = ModelArguments.parse(
    ['--log-level', 'WARNING', '--log-level-tensorflow', 'Info']
  )
  assert args.log_level == 'warning'
  assert args.log_level_tensorflow == 'info'


def test_job_dir_is_an_alias_of_output():
  assert ModelArguments.parse(['--job-dir', 'gs://b/j']).output == 'gs://b/j'
  args, output = ModelArguments.parse(['--job-dir', '/tmp/j'], parse_job=True)
  assert output == '/tmp/j' == args.output
  assert not hasattr(args, 'job_dir')


def test_args_string_is_split_like_a_shell():
  args = ModelArguments.parse("--batch-size 8 --data-train 'a b.csv' c.csv")
  assert args.batch_size == 8
  assert args.data_train == ['a b.csv', 'c.csv']


def test_args_default_to_process_arguments(monkeypatch):
  monkeypatch.setattr(
    sys, 'argv', ['trainer.py', '--batch-size', '4', '--output', '/tmp/x']
  )
  args, output = ModelArguments.parse(parse_job=True)
  assert args.batch_size == 4
  assert output == '/tmp/x'


# parse_job.


def test_parse_job_returns_arguments_and_output():
  result = ModelArguments.parse(
    ['--output', '/tmp/o', '--epochs', '2'], parse_job=True
  )
  assert isinstance(result, tuple)
  args, output = result
  assert isinstance(args, ModelArguments)
  assert args.epochs == 2
  assert output == '/tmp/o'


def test_parse_job_requires_output():
  with pytest.raises(
    ConfigurationError, match=r'--output \(or --job-dir\) is required'
  ):
    ModelArguments.parse(['--batch-size', '8'], parse_job=True)


def test_parse_job_rejects_empty_output():
  with pytest.raises(ConfigurationError, match=r'--output \(or --job-dir\)'):
    ModelArguments.parse(['--output', ''], parse_job=True)


def test_parse_without_job_returns_only_arguments():
  args = ModelArguments.parse(['--output', '/tmp/o'])
  assert isinstance(args, ModelArguments)
  assert args.output == '/tmp/o'
  assert isinstance(ModelArguments.parse([]), ModelArguments)


# argparse errors.


def test_unknown_flag_exits_with_usage_error(capsys):
  with pytest.raises(SystemExit) as e:
    ModelArguments.parse(['--no-such-flag', '1'])
  assert e.value.code == 2
  assert 'unrecognized arguments: --no-such-flag' in capsys.readouterr().err


def test_abbreviations_are_not_accepted():
  with pytest.raises(SystemExit) as e:
    ModelArguments.parse(['--batch', '8'])
  assert e.value.code == 2


def test_bad_int_exits_with_usage_error(capsys):
  with pytest.raises(SystemExit) as e:
    ModelArguments.parse(['--max-steps', 'many'])
  assert e.value.code == 2
  assert (
    "--max-steps/--training-num-epochs: invalid int value: 'many'"
    in capsys.readouterr().err
  )
  with pytest.raises(SystemExit) as e:
    ModelArguments.parse(['--batch-size', 'many'])
  assert e.value.code == 2
  assert (
    "--batch-size: expected a positive integer or 'all'. Received: 'many'"
  ) in capsys.readouterr().err


def test_bad_log_level_exits_with_usage_error(capsys):
  with pytest.raises(SystemExit) as e:
    ModelArguments.parse(['--log-level', 'loud'])
  assert e.value.code == 2
  assert 'invalid choice' in capsys.readouterr().err


def test_help_lists_the_flags(capsys):
  with pytest.raises(SystemExit) as e:
    Arguments.parse(['--help'])
  assert e.value.code == 0
  text = capsys.readouterr().out
  assert "A model's arguments: a learning rate and hidden layers." in text
  for flag in (
    '--data-train',
    '--output',
    '--job-dir',
    '--no-shuffle',
    '--learning-rate',
    '--hidden-layers',
  ):
    assert flag in text
  assert '--hidden-layers:1 VALUE' in text


# process() validation.


@pytest.mark.parametrize(
  'flag, value',
  [
    ('--checkpoint-interval-secs', '0'),
    ('--checkpoint-interval-steps', '-1'),
    ('--log-interval-steps', '0'),
    ('--steps-per-loop', '0'),
  ],
)
def test_positive_flags(flag, value):
  with pytest.raises(
    ConfigurationError,
    match=f'^{flag} must be a positive integer. Received: {flag}={value}$',
  ):
    ModelArguments.parse([flag, value])


@pytest.mark.parametrize(
  'flag, value',
  [
    ('--batch-size', '0'),
    ('--batch-size', '-5'),
    ('--eval-batch-size', '0'),
  ],
)
def test_batch_sizes_are_positive_or_all(flag, value):
  with pytest.raises(
    ConfigurationError,
    match=f"^{flag} must be a positive integer, or 'all' "
    'for the whole training data in one batch. '
    f'Received: {flag}={value}$',
  ):
    ModelArguments.parse([flag, value])


@pytest.mark.parametrize('value', ['0', '-2'])
def test_epochs_must_be_positive(value):
  with pytest.raises(
    ConfigurationError,
    match=r'^--epochs must be a positive integer, or no '
    r'--epochs .*Received: --epochs=' + value + '$',
  ):
    ModelArguments.parse(['--epochs', value])


def test_seed_must_not_be_negative():
  with pytest.raises(
    ConfigurationError,
    match='--seed must be a non-negative integer. Received: --seed=-1',
  ):
    ModelArguments.parse(['--seed', '-1'])
  assert ModelArguments.parse(['--seed', '0']).seed == 0


def test_validation_error_is_a_value_error():
  with pytest.raises(ValueError):
    ModelArguments.parse(['--batch-size', '0'])


def test_process_checks_attributes_set_by_hand():
  args = ModelArguments(batch_size=0)
  with pytest.raises(ConfigurationError, match='Received: --batch-size=0'):
    args.process()
  args = ModelArguments(batch_size=8)
  args.process()
  assert args.eval_batch_size == 8


# Indexed list flags.


def test_list_flag_whole():
  assert Arguments.parse(['--hidden-layers', '20', '10']).hidden_layers == [
    20,
    10,
  ]


def test_list_flag_indexed_in_order():
  args = Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers:2', '10'])
  assert args.hidden_layers == [20, 10]
  assert args.layer_count == 2


def test_list_flag_indexed_out_of_order_and_interleaved():
  args = Arguments.parse(
    [
      '--hidden-layers:3',
      '5',
      '--batch-size',
      '8',
      '--hidden-layers:1',
      '20',
      '--output',
      'o',
      '--hidden-layers:2',
      '10',
    ]
  )
  assert args.hidden_layers == [20, 10, 5]
  assert args.batch_size == 8
  assert args.output == 'o'


def test_list_flag_indexed_equals_form():
  args = Arguments.parse(['--hidden-layers:2=10', '--hidden-layers:1=20'])
  assert args.hidden_layers == [20, 10]


def test_list_flag_indexed_negative_numbers():
  args = Arguments.parse(['--hidden-layers:1', '-3', '--hidden-layers:2=-4'])
  assert args.hidden_layers == [-3, -4]


def test_list_flag_indexed_single_item():
  assert Arguments.parse(['--hidden-layers:1', '7']).hidden_layers == [7]


def test_list_flag_indexed_values_keep_their_type():
  args = Arguments.parse(['--data-train:2', 'b.csv', '--data-train:1', 'a.csv'])
  assert args.data_train == ['a.csv', 'b.csv']
  args = Arguments.parse(['--data-train:1=-dash.csv'])
  assert args.data_train == ['-dash.csv']


def test_standard_data_flags_accept_the_indexed_form():
  args = ModelArguments.parse(
    ['--data-eval:2', 'gs://b/e2.csv', '--data-eval:1', 'gs://b/e1.csv']
  )
  assert args.data_eval == ['gs://b/e1.csv', 'gs://b/e2.csv']


def test_list_flag_indexed_with_choices():
  args = Arguments.parse(['--activations:1', 'tanh', '--activations:2', 'relu'])
  assert args.activations == ['tanh', 'relu']
  with pytest.raises(
    ConfigurationError,
    match=r'--activations:2 expects one of relu, tanh. '
    r'Received: --activations:2=gelu',
  ):
    Arguments.parse(['--activations:1', 'tanh', '--activations:2', 'gelu'])


def test_list_flag_indexed_gap():
  with pytest.raises(
    ConfigurationError,
    match=r'--hidden-layers:2 is missing '
    r'\(got indices 1, 3\)',
  ):
    Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers:3', '10'])


def test_list_flag_indexed_must_start_at_one():
  with pytest.raises(
    ConfigurationError,
    match=r'--hidden-layers:1 is missing '
    r'\(got indices 2\)',
  ):
    Arguments.parse(['--hidden-layers:2', '20'])


def test_list_flag_indexed_duplicate():
  with pytest.raises(
    ConfigurationError,
    match=r'--hidden-layers:1 is given more than once. '
    r'Received: --hidden-layers:1=20 and '
    r'--hidden-layers:1=30',
  ):
    Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers:1=30'])


@pytest.mark.parametrize('index', ['0', '-1', 'x', '', '1.5', '1:2'])
def test_list_flag_indexed_bad_index(index):
  with pytest.raises(
    ConfigurationError,
    match=r'the index of a list flag must be a positive '
    r'integer \(1-based\)',
  ):
    Arguments.parse([f'--hidden-layers:{index}', '20'])


def test_list_flag_indexed_bad_type():
  with pytest.raises(
    ConfigurationError,
    match=r'^--hidden-layers:2 expects a value of type int. '
    r'Received: --hidden-layers:2=ten$',
  ):
    Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers:2', 'ten'])


def test_list_flag_indexed_missing_value():
  with pytest.raises(
    ConfigurationError, match=r'--hidden-layers:2 expects a value'
  ):
    Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers:2'])
  with pytest.raises(
    ConfigurationError, match=r'--hidden-layers:1 expects a value'
  ):
    Arguments.parse(['--hidden-layers:1', '--batch-size', '8'])


def test_indexed_form_of_a_flag_that_is_not_a_list():
  with pytest.raises(
    ConfigurationError,
    match=r'--batch-size:1 is an indexed list flag, but '
    r'--batch-size is not a list flag. The indexed form '
    r'NAME:N is accepted for --activations, --data-eval, '
    r'--data-filter, --data-train, --data-vocabulary, '
    r'--hidden-layers, --percentile-ranks, '
    r'--predict-input, --restore-rename, --task-names, --task-sources',
  ):
    Arguments.parse(['--batch-size:1', '8'])


def test_indexed_form_of_an_unknown_flag():
  with pytest.raises(
    ConfigurationError,
    match=r'--layers:1 is an indexed list flag, but '
    r'--layers is not a list flag',
  ):
    Arguments.parse(['--layers:1', '8'])


def test_list_flag_mixing_forms():
  with pytest.raises(
    ConfigurationError,
    match=r'--hidden-layers is given both as a list '
    r'\(--hidden-layers VALUE ...\) and one item at a time '
    r'\(--hidden-layers:N VALUE\); use one form',
  ):
    Arguments.parse(['--hidden-layers', '20', '--hidden-layers:2', '10'])
  with pytest.raises(ConfigurationError, match=r'use one form'):
    Arguments.parse(['--hidden-layers:1', '20', '--hidden-layers=10'])


def test_tokens_after_double_dash_are_not_rewritten(capsys):
  # No positional is declared: argparse rejects them, but untouched.
  with pytest.raises(SystemExit):
    Arguments.parse(['--', '--hidden-layers:1', '20'])
  error = capsys.readouterr().err
  assert 'unrecognized arguments:' in error
  assert '--hidden-layers:1 20' in error


def test_required_list_flag_is_satisfied_by_the_indexed_form():

  class Required(ModelArguments):
    @classmethod
    def build_parser(cls):
      parser = super().build_parser()
      group = parser.add_argument_group('model')
      cls.add_list_argument(group, '--units', type=int, required=True)
      return parser

  assert Required.parse(['--units:1', '3']).units == [3]
  with pytest.raises(SystemExit):
    Required.parse([])


def test_add_list_argument_needs_long_names():
  parser = ModelArguments.build_parser()
  with pytest.raises(ValueError, match='start with "--"'):
    ModelArguments.add_list_argument(parser, '-u', type=int)


# Subclasses.


def test_subclass_adds_flags_and_processes():
  args, output = Arguments.parse(
    [
      '--job-dir',
      'gs://b/j',
      '--learning-rate',
      '0.5',
      '--hidden-layers:1',
      '64',
      '--hidden-layers:2',
      '32',
      '--batch-size',
      '16',
    ],
    parse_job=True,
  )
  assert type(args) is Arguments
  assert output == 'gs://b/j'
  assert args.learning_rate == 0.5
  assert args.hidden_layers == [64, 32]
  assert args.layer_count == 2
  assert args.batch_size == 16
  assert args.eval_batch_size == 16


def test_subclass_process_validation():
  with pytest.raises(
    ConfigurationError,
    match='--learning-rate must be at most 1. Received: --learning-rate=2.0',
  ):
    Arguments.parse(['--learning-rate', '2'])


def test_standard_learning_rate_is_validated():
  with pytest.raises(
    ConfigurationError,
    match='--learning-rate must be a positive number. '
    'Received: --learning-rate=0.0',
  ):
    Arguments.parse(['--learning-rate', '0'])


def test_subclass_flag_replaces_a_standard_one():
  parser = Arguments.build_parser()
  rates = [a for a in parser._actions if a.dest == 'learning_rate']
  assert len(rates) == 1 and rates[0].default == 0.01


def test_subclass_process_runs_after_standard_validation():
  with pytest.raises(ConfigurationError, match='--batch-size'):
    Arguments.parse(['--batch-size', '0', '--learning-rate', '2'])


# to_dict.


def test_to_dict():
  args = Arguments.parse(
    ['--output', '/tmp/o', '--data-train', 'a', 'b', '--hidden-layers:1', '3']
  )
  result = args.to_dict()
  assert list(result)[:8] == [
    'data_train',
    'data_eval',
    'data_schema',
    'data_metadata',
    'data_features',
    'skip_bad_records',
    'config',
    'output',
  ]
  assert result['skip_bad_records'] is False
  assert result['data_train'] == ['a', 'b']
  assert result['output'] == '/tmp/o'
  assert result['batch_size'] == 64
  assert result['eval_batch_size'] == 64
  assert result['shuffle'] is True
  assert result['learning_rate'] == 0.01
  assert result['hidden_layers'] == [3]
  assert 'help' not in result
  assert 'layer_count' not in result  # Derived, not an argument.
  assert json.loads(json.dumps(result)) == result


def test_to_dict_makes_values_plain():
  args = ModelArguments.default()
  args.data_train = ('a', 'b')
  args.output = object()
  result = args.to_dict()
  assert result['data_train'] == ['a', 'b']
  assert isinstance(result['output'], str)


def test_namespace_behaviour():
  args = ModelArguments.parse(['--batch-size', '8'])
  assert 'batch_size=8' in repr(args)
  assert 'batch_size' in args
  assert vars(args)['batch_size'] == 8


# Import cost.


def _python(code):
  return subprocess.run(
    [sys.executable, '-c', code],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )


def test_module_does_not_import_tensorflow():
  # The packages' __init__ files are bypassed: this checks _args alone.
  result = _python(
    'import sys, types\n'
    'for name in ("tensorfx", "tensorfx.training"):\n'
    '  package = types.ModuleType(name)\n'
    '  package.__path__ = [name.replace(".", "/")]\n'
    '  sys.modules[name] = package\n'
    'import tensorfx.training._arguments.args\n'
    'assert "tensorflow" not in sys.modules, "tensorflow imported"\n'
  )
  assert result.returncode == 0, result.stderr


def test_import_does_not_import_tensorflow():
  result = _python(
    'import tensorfx.training._arguments.args, sys; '
    "assert 'tensorflow' not in sys.modules, "
    "'tensorflow imported'"
  )
  assert result.returncode == 0, result.stderr
