"""Run configuration files: `--config run.yaml`, sections, overrides, errors."""

import textwrap

import pytest

from tensorfx import ConfigurationError
from tensorfx.training import ModelArguments
from tensorfx.training._arguments import runconfig as _runconfig


class Arguments(ModelArguments):
  """A model's arguments: hidden layers (the loss flags are standard)."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    cls.add_list_argument(parser, '--hidden-layers', type=int)
    return parser


def _write(tmp_path, text, name='run.yaml'):
  path = tmp_path / name
  path.write_text(textwrap.dedent(text))
  return str(path)


def test_every_flag_from_the_file(tmp_path):
  path = _write(
    tmp_path,
    """\
      data-train: [a.csv, b.csv]
      batch_size: 16
      shuffle: false
      learning_rate: 1e-3
      hidden-layers: [20, 10]
      """,
  )
  args = Arguments.parse(['--config', path])
  assert args.data_train == ['a.csv', 'b.csv']
  assert args.batch_size == 16
  assert args.eval_batch_size == 16  # Derived by process(), as from flags.
  assert args.shuffle is False
  assert args.learning_rate == pytest.approx(1e-3)  # YAML reads a string.
  assert args.hidden_layers == [20, 10]
  assert args.to_dict()['config'] == path


def test_command_line_overrides_the_file(tmp_path):
  path = _write(
    tmp_path,
    """\
      batch_size: 16
      max_steps: 50
      hidden_layers: [20, 10]
      """,
  )
  args = Arguments.parse(
    ['--batch-size', '8', f'--config={path}', '--hidden-layers:2', '5']
  )
  assert args.batch_size == 8
  assert args.max_steps == 50
  # An indexed flag replaces one item of the file's list.
  assert args.hidden_layers == [20, 5]
  args = Arguments.parse(['--config', path, '--hidden-layers', '7'])
  assert args.hidden_layers == [7]


def test_sections_map_to_flags(tmp_path):
  path = _write(
    tmp_path,
    """\
      data:
        train: [t.csv]
        schema: schema.yaml
      model:
        hidden_layers: [4]
      loss:
        name: mae
        normalization: percentage
      learning_rate:
        value: 0.1
        schedule: cosine
        warmup_steps: 3
      optimizer:
        name: sgd
        momentum: 0.9
        clip_norm: 1
      validation:
        batch_size: 32
      save:
        interval_secs: 5
      job:
        max_steps: 10
      """,
  )
  args = Arguments.parse(['--config', path])
  assert args.data_train == ['t.csv']
  assert args.data_schema == 'schema.yaml'
  assert args.hidden_layers == [4]
  assert (args.loss, args.loss_normalization) == (
    'mean_absolute_error',
    'percentage_error',
  )
  assert args.learning_rate == pytest.approx(0.1)
  assert args.learning_rate_schedule == 'cosine'
  assert args.warmup_steps == 3
  assert (args.optimizer, args.momentum, args.clip_norm) == ('sgd', 0.9, 1.0)
  # validation: batch_size is --eval-batch-size, not --batch-size.
  assert (args.eval_batch_size, args.batch_size) == (32, 64)
  assert args.checkpoint_interval_secs == 5
  assert args.max_steps == 10


def test_section_as_a_plain_value(tmp_path):
  path = _write(tmp_path, 'optimizer: rmsprop\nloss: mae\n')
  args = Arguments.parse(['--config', path])
  assert (args.optimizer, args.loss) == ('rmsprop', 'mean_absolute_error')


def test_output_from_the_file_satisfies_parse_job(tmp_path):
  path = _write(tmp_path, f'job_dir: {tmp_path / "out"}\n')
  _, output = Arguments.parse(['--config', path], parse_job=True)
  assert output == str(tmp_path / 'out')


def test_unknown_key_names_file_line_and_key(tmp_path):
  path = _write(
    tmp_path,
    """\
      max_steps: 5
      optimizer:
        name: sgd
        clip_nrom: 1
      """,
  )
  with pytest.raises(
    ConfigurationError,
    match=rf"^{path}:4: unknown key 'optimizer.clip_nrom'.*"
    r'Did you mean clip_norm\?',
  ):
    Arguments.parse(['--config', path])


def test_unknown_top_level_key_and_section(tmp_path):
  path = _write(tmp_path, 'batch_size: 2\nbatch_sise: 3\n')
  with pytest.raises(
    ConfigurationError, match=rf"^{path}:2: unknown key 'batch_sise'"
  ):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, 'training:\n  steps: 3\n')
  with pytest.raises(
    ConfigurationError, match=rf"^{path}:1: unknown key 'training'"
  ):
    Arguments.parse(['--config', path])


def test_bad_values_name_file_line_and_key(tmp_path):
  path = _write(tmp_path, 'batch_size: 2\nmax_steps: 1.5\n')
  with pytest.raises(
    ConfigurationError,
    match=rf'^{path}:2: max_steps expects a value of type '
    r'int\. Received: max_steps=1\.5',
  ):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, 'optimizer:\n  name: lion\n')
  with pytest.raises(
    ConfigurationError, match=rf'^{path}:2: optimizer.name expects one of adam'
  ):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, 'shuffle: 3\n')
  with pytest.raises(
    ConfigurationError, match=rf'^{path}:1: shuffle expects true or false'
  ):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, 'batch_size: [1, 2]\n')
  with pytest.raises(
    ConfigurationError, match=rf'^{path}:1: batch_size expects a single value'
  ):
    Arguments.parse(['--config', path])


def test_a_flag_set_twice_in_the_file(tmp_path):
  path = _write(
    tmp_path,
    """\
      clip_norm: 1
      optimizer:
        clip_norm: 2
      """,
  )
  with pytest.raises(
    ConfigurationError,
    match=rf'^{path}:3: optimizer.clip_norm sets --clip-norm, '
    'already set by clip_norm at line 1',
  ):
    Arguments.parse(['--config', path])


def test_process_still_validates_file_values(tmp_path):
  path = _write(tmp_path, 'batch_size: 0\n')
  with pytest.raises(ConfigurationError, match='--batch-size must be'):
    Arguments.parse(['--config', path])


def test_file_errors(tmp_path):
  with pytest.raises(ConfigurationError, match='cannot read the run config'):
    Arguments.parse(['--config', str(tmp_path / 'missing.yaml')])
  path = _write(tmp_path, 'a: [1\n')
  with pytest.raises(ConfigurationError, match=rf'^{path}:2:1: invalid YAML'):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, '- 1\n')
  with pytest.raises(ConfigurationError, match='must be a mapping'):
    Arguments.parse(['--config', path])
  path = _write(tmp_path, 'config: other.yaml\n')
  with pytest.raises(ConfigurationError, match='cannot name another'):
    Arguments.parse(['--config', path])
  with pytest.raises(ConfigurationError, match='--config can be given once'):
    Arguments.parse(['--config', path, '--config', path])
  with pytest.raises(ConfigurationError, match='--config expects the path'):
    Arguments.parse(['--config'])


def test_empty_file_changes_nothing(tmp_path):
  path = _write(tmp_path, '')
  args = Arguments.parse(['--config', path])
  defaults = Arguments.default().to_dict()
  assert {k: v for k, v in args.to_dict().items() if k != 'config'} == {
    k: v for k, v in defaults.items() if k != 'config'
  }


def test_find_config():
  assert _runconfig.find_config(['--batch-size', '2']) is None
  assert _runconfig.find_config(['--config=r.yaml']) == 'r.yaml'
  # After `--` nothing is a flag.
  assert _runconfig.find_config(['--', '--config', 'r.yaml']) is None


def test_print_config_is_a_run_configuration_giving_the_same_arguments(
  tmp_path, capsys
):
  argv = [
    '--data-train',
    'a.csv',
    'b.csv',
    '--max-steps',
    '50',
    '--no-shuffle',
    '--optimizer',
    'sgd',
    '--momentum',
    '0.9',
    '--eval-target',
    'holdout',
    'data=h.csv',
    'batches=2',
    '--restore-rename',
    'x=y',
    '--warm-start',
    '/tmp/w',
    '--hidden-layers:1',
    '20',
    '--hidden-layers:2',
    '10',
  ]
  with pytest.raises(SystemExit) as exit_info:
    Arguments.parse(argv + ['--print-config'])
  assert exit_info.value.code == 0
  printed = capsys.readouterr().out
  assert 'print_config' not in printed and 'validation:' in printed
  path = tmp_path / 'run.yaml'
  path.write_text(printed)
  again = Arguments.parse(['--config', str(path)])
  expected = Arguments.parse(argv).to_dict()
  assert {k: v for k, v in again.to_dict().items() if k != 'config'} == {
    k: v for k, v in expected.items() if k != 'config'
  }
