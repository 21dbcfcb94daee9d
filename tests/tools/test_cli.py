"""The `tensorfx` command line: train, predict, analyze, errors."""

import json
import os
import subprocess
import sys

import pytest

from conftest import IRIS
from tensorfx.tools import main

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


def _run(*args, stdin=None, cwd=None):
  return subprocess.run(
    [sys.executable, '-m', 'tensorfx', *args],
    input=stdin,
    capture_output=True,
    text=True,
    cwd=cwd,
    timeout=300,
    check=False,
  )


def test_help_lists_commands(capsys):
  try:
    main(['--help'])
  except SystemExit as e:
    assert e.code == 0
  out = capsys.readouterr().out
  for command in ('train', 'predict', 'analyze'):
    assert command in out


def test_predict_reads_stdin_and_writes_json_lines(iris_model):
  output, _ = iris_model
  stdin = (
    '6.3,3.3,6,2.5\n\n'
    '{"sepal_length": 4.4, "sepal_width": 3, "petal_length": 1.3, '
    '"petal_width": 0.2}\n'
    'versicolor,6.1,2.8,4.7,1.2\n'
  )
  result = _run('predict', '--model', f'{output}/model', stdin=stdin)
  assert result.returncode == 0, result.stderr[-2000:]
  rows = [json.loads(line) for line in result.stdout.splitlines()]
  assert [r['label'] for r in rows] == ['virginica', 'setosa', 'versicolor']


def test_predict_file_to_file(iris_model, tmp_path):
  output, _ = iris_model
  source = tmp_path / 'in.csv'
  source.write_text('6.3,3.3,6,2.5\n4.4,3,1.3,0.2\n')
  sink = tmp_path / 'out.jsonl'
  assert (
    main(
      [
        'predict',
        '--model',
        f'{output}/model',
        '--input',
        str(source),
        '--output',
        str(sink),
      ]
    )
    == 0
  )
  labels = [json.loads(line)['label'] for line in sink.read_text().splitlines()]
  assert labels == ['virginica', 'setosa']


def test_predict_bad_line_names_the_line(iris_model, tmp_path, capsys):
  output, _ = iris_model
  source = tmp_path / 'in.csv'
  source.write_text('6.3,3.3,6,2.5\n4.4,3,1.3\n')
  code = main(
    [
      'predict',
      '--model',
      f'{output}/model',
      '--input',
      str(source),
      '--output',
      str(tmp_path / 'out'),
    ]
  )
  assert code == 1
  err = capsys.readouterr().err
  assert f'{source}:2: expected 5 (or 4) columns, found 3' in err


def test_analyze_writes_the_analysis(tmp_path, capsys):
  code = main(
    [
      'analyze',
      '--data-train',
      os.path.join(IRIS, 'data', 'train.csv'),
      '--data-schema',
      os.path.join(IRIS, 'schema.yaml'),
      '--data-features',
      os.path.join(IRIS, 'features.yaml'),
      '--output',
      str(tmp_path / 'analysis'),
    ]
  )
  assert code == 0
  assert 'Analyzed 120 instances' in capsys.readouterr().out
  metadata = json.loads((tmp_path / 'analysis' / 'metadata.json').read_text())
  assert metadata['fields']['species']['vocabulary'] == {
    'setosa': 40,
    'versicolor': 40,
    'virginica': 40,
  }
  assert (tmp_path / 'analysis' / 'transform_fn').is_dir()
  assert (tmp_path / 'analysis' / 'metadata').is_dir()


def test_train_reports_a_missing_module(tmp_path, capsys):
  code = main(
    ['train', '--module', 'no_such_trainer', '--output', str(tmp_path)]
  )
  assert code == 1
  assert (
    "cannot find the trainer module 'no_such_trainer'"
    in capsys.readouterr().err
  )


def test_train_reports_a_missing_data_file(tmp_path):
  result = _run(
    'train',
    '--module',
    'trainer',
    '--output',
    str(tmp_path),
    '--data-train',
    'data/missing.csv',
    '--data-eval',
    'data/eval.csv',
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    cwd=IRIS,
  )
  assert result.returncode == 1
  assert "No data file matches 'data/missing.csv'" in result.stderr
  assert 'Traceback' not in result.stderr


def test_train_help_with_a_module_shows_the_trainers_flags():
  result = _run('train', '--module', 'trainer', '--help', cwd=IRIS)
  assert result.returncode == 0, result.stderr
  own, _, trainer = result.stdout.partition(
    "The trainer module 'trainer' takes"
  )
  assert trainer, result.stdout
  assert '--cluster' in own and '--hidden-layers' not in own
  # The iris trainer's own flag and the standard ones.
  for flag in (
    '--hidden-layers',
    '--learning-rate',
    '--early-stopping-patience',
    '--print-config',
  ):
    assert flag in trainer, flag


def test_train_help_without_a_module_is_the_commands(capsys):
  assert main(['train', '--help']) == 0
  out = capsys.readouterr().out
  assert '--module' in out and 'The trainer' not in out


def test_a_mistyped_command_or_flag_gets_the_closest_names(tmp_path):
  result = _run('trian', '--module', 'trainer')
  assert result.returncode == 2
  assert 'did you mean train?' in result.stderr
  result = _run(
    'train',
    '--module',
    'trainer',
    '--output',
    str(tmp_path),
    '--batch-sise',
    '8',
    '--lerning-rate',
    '0.1',
    cwd=IRIS,
  )
  assert result.returncode == 2
  assert (
    '--batch-sise: did you mean --batch-size or --eval-batch-size?; '
    '--lerning-rate: did you mean --learning-rate'
  ) in result.stderr


def test_a_mistyped_flag_is_one_usage_line_then_the_suggestion_last(tmp_path):
  result = _run(
    'train',
    '--module',
    'trainer',
    '--output',
    str(tmp_path),
    '--batch-sise',
    '8',
    cwd=IRIS,
  )
  assert result.returncode == 2
  # Not the trainer's ~50 lines of usage, nor its file name (trainer.py).
  assert result.stderr.splitlines() == [
    'usage: tensorfx train [options] (tensorfx train --help lists them)',
    'tensorfx train: error: unrecognized arguments: --batch-sise 8 '
    '(--batch-sise: did you mean --batch-size or --eval-batch-size?)',
  ]


def test_a_mistyped_module_gets_the_closest_trainer(
  tmp_path, monkeypatch, capsys
):
  monkeypatch.chdir(IRIS)
  assert main(['train', '--module', 'trainr', '--output', str(tmp_path)]) == 1
  assert capsys.readouterr().err.rstrip().endswith('Did you mean trainer?')
  assert (
    main(['train', '--module', 'trainr.py', '--output', str(tmp_path)]) == 1
  )
  assert capsys.readouterr().err.rstrip().endswith('Did you mean trainer.py?')


def test_a_mistyped_indexed_list_flag_gets_the_closest_one():
  from tensorfx import ConfigurationError
  from tensorfx.models import nn

  try:
    nn.FeedForwardClassificationArguments.parse(['--hiden-layers:1', '20'])
  except ConfigurationError as e:
    assert str(e).endswith('(did you mean --hidden-layers:1?)'), e
  else:
    raise AssertionError('--hiden-layers:1 was accepted')


def test_a_mistyped_indexed_list_flag_is_an_argument_error(tmp_path):
  result = _run(
    'train',
    '--module',
    'trainer',
    '--output',
    str(tmp_path),
    '--hiden-layers:1',
    '20',
    cwd=IRIS,
  )
  # Exit 2, one usage line and the error, as for --hiden-layers 20.
  assert result.returncode == 2, result.stderr
  usage, error = result.stderr.splitlines()
  assert usage == (
    'usage: tensorfx train [options] (tensorfx train --help lists them)'
  )
  assert error.startswith(
    'tensorfx train: error: --hiden-layers:1 is an indexed list flag'
  )
  assert error.endswith('(did you mean --hidden-layers:1?)')


def test_a_missing_data_schema_names_the_flag(tmp_path, monkeypatch, capsys):
  monkeypatch.chdir(IRIS)
  monkeypatch.setattr(sys, 'argv', list(sys.argv))
  monkeypatch.setattr(sys, 'path', list(sys.path))
  assert (
    main(
      [
        'train',
        '--module',
        'trainer',
        '--output',
        str(tmp_path),
        '--data-train',
        'data/train.csv',
      ]
    )
    == 1
  )
  err = capsys.readouterr().err
  assert 'give --data-schema PATH' in err, err


def test_train_without_output_names_it(capsys):
  try:
    main(['train', '--module', 'trainer'])
  except SystemExit as e:
    assert e.code == 2
  assert (
    'the following arguments are required: --output' in capsys.readouterr().err
  )
