"""`tensorfx analyze` runs: reuse by fingerprint, runners, one-line errors."""

import json
import logging
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import IRIS
from tensorfx.data import _analysis
from tensorfx.tools import main

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

SCHEMA = os.path.join(IRIS, 'schema.yaml')
FEATURES = os.path.join(IRIS, 'features.yaml')
TRAIN = os.path.join(IRIS, 'data', 'train.csv')


class _Records(logging.Handler):
  """The tensorfx log messages of a block."""

  def __init__(self):
    super().__init__()
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())

  def __enter__(self):
    logging.getLogger('tensorfx').addHandler(self)
    return self

  def __exit__(self, *exc):
    logging.getLogger('tensorfx').removeHandler(self)


def _analyze(train, output, *extra):
  with _Records() as records:
    code = main(
      [
        'analyze',
        '--data-train',
        str(train),
        '--data-schema',
        SCHEMA,
        '--data-features',
        FEATURES,
        '--output',
        str(output),
        *extra,
      ]
    )
  assert code == 0
  return records.messages


def test_a_second_analysis_of_the_same_data_is_reused(tmp_path):
  train = tmp_path / 'train.csv'
  train.write_text(pathlib.Path(TRAIN).read_text())
  output = tmp_path / 'analysis'
  _analyze(train, output)
  graph = output / 'transform_fn' / 'saved_model.pb'
  written = graph.stat().st_mtime_ns

  messages = _analyze(train, output)
  assert any(
    m.startswith(f'Reusing the analysis in {output}') for m in messages
  ), messages
  assert graph.stat().st_mtime_ns == written

  with open(train, 'a') as f:
    f.write('setosa,5.0,3.4,1.5,0.2\n')
  messages = _analyze(train, output)
  assert (
    f'Analyzing train again into {output}: {train} changed (size or '
    'modification time)' in messages
  )
  metadata = json.loads((output / 'metadata.json').read_text())
  assert metadata['instances'] == 121

  messages = _analyze(train, output, '--force')
  assert not any(m.startswith('Reusing') for m in messages)
  assert json.loads((output / 'fingerprint.json').read_text())['files'][0][
    'path'
  ] == str(train)


def test_other_features_or_options_analyze_again(tmp_path):
  output = tmp_path / 'analysis'
  _analyze(TRAIN, output)
  messages = _analyze(TRAIN, output, '--skip-bad-records')
  assert (
    f'Analyzing train again into {output}: how the data is read '
    'changed' in messages
  )
  features = tmp_path / 'features.yaml'
  features.write_text(
    pathlib.Path(FEATURES).read_text().replace('type: log', 'type: zscore')
  )
  with _Records() as records:
    assert (
      main(
        [
          'analyze',
          '--data-train',
          TRAIN,
          '--data-schema',
          SCHEMA,
          '--data-features',
          str(features),
          '--output',
          str(output),
        ]
      )
      == 0
    )
  assert (
    f'Analyzing train again into {output}: the features changed'
    in records.messages
  )


@pytest.mark.release
@pytest.mark.slow
def test_a_bad_row_is_one_line_without_a_traceback(tmp_path):
  train = tmp_path / 'train.csv'
  train.write_text(
    pathlib.Path(TRAIN).read_text() + 'setosa,5.0,wide,1.5,0.2\n'
  )
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'analyze',
    '--data-train',
    str(train),
    '--data-schema',
    SCHEMA,
    '--data-features',
    FEATURES,
    '--output',
    str(tmp_path / 'analysis'),
  ]

  result = subprocess.run(
    command, capture_output=True, text=True, timeout=300, check=False
  )
  assert result.returncode == 1
  assert result.stderr.strip().splitlines()[-1] == (
    f"tensorfx analyze: error: {train}:121: column 'sepal_width' is not a "
    'real number: wide'
  )
  assert 'Traceback' not in result.stderr
  assert 'while running' not in result.stderr

  result = subprocess.run(
    command + ['--log-level', 'debug'],
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 1
  assert 'Traceback' in result.stderr  # Beam's own report, when asked.


# Runner options.


def test_small_data_runs_in_this_process(tmp_path):
  options = _analysis.pipeline_options([], [TRAIN]).get_all_options()
  assert options['runner'] == 'DirectRunner'
  assert options['direct_running_mode'] == 'in_memory'


def test_big_data_runs_on_every_core(monkeypatch):
  monkeypatch.setattr(_analysis, 'MULTI_PROCESSING_BYTES', 1)
  monkeypatch.setattr(os, 'cpu_count', lambda: 6)
  options = _analysis.pipeline_options([], [TRAIN]).get_all_options()
  assert options['direct_running_mode'] == 'multi_processing'
  assert options['direct_num_workers'] == 6
  # On 2 cores this process decodes on both already: worker processes
  # would only add their start-up.
  monkeypatch.setattr(os, 'cpu_count', lambda: 2)
  options = _analysis.pipeline_options([], [TRAIN]).get_all_options()
  assert options['direct_running_mode'] == 'in_memory'


@pytest.mark.parametrize(
  'given,mode,workers',
  [
    (['--direct_num_workers=1'], 'in_memory', 1),
    (['--direct_running_mode=multi_threading'], 'multi_threading', 1),
    (
      ['--direct_running_mode=multi_processing', '--direct_num_workers=3'],
      'multi_processing',
      3,
    ),
  ],
)
def test_given_options_win(monkeypatch, given, mode, workers):
  monkeypatch.setattr(_analysis, 'MULTI_PROCESSING_BYTES', 1)
  options = _analysis.pipeline_options(given, [TRAIN]).get_all_options()
  assert options['direct_running_mode'] == mode
  assert options['direct_num_workers'] == workers


def test_other_runners_are_left_as_given():
  options = _analysis.pipeline_options(
    ['--runner=DataflowRunner', '--project=p'], [TRAIN]
  ).get_all_options()
  assert options['runner'] == 'DataflowRunner'
  assert options['project'] == 'p'
  assert options['direct_running_mode'] == 'in_memory'  # Beam's default.


@pytest.mark.release
@pytest.mark.slow
def test_worker_processes_analyze_as_this_process_does(tmp_path, iris_analysis):
  output = tmp_path / 'analysis'
  _analyze(
    TRAIN,
    output,
    '--direct_running_mode=multi_processing',
    '--direct_num_workers=2',
  )

  for name in ('metadata.json',):
    assert json.loads((output / name).read_text()) == json.loads(
      pathlib.Path(os.path.join(iris_analysis, name)).read_text()
    )
  vocabulary = pathlib.Path(iris_analysis, 'transform_fn', 'assets', 'Y')
  assert (output / 'transform_fn' / 'assets' / 'Y').read_text() == (
    vocabulary.read_text()
  )


@pytest.mark.slow
def test_a_second_training_run_reuses_its_analysis(tmp_path):
  from tensorfx import data
  from tensorfx import training
  from tensorfx.models import nn

  def train(steps):
    args, job = nn.FeedForwardClassificationArguments.parse(
      ['--output', str(tmp_path / 'job'), '--max-steps', steps], parse_job=True
    )
    dataset = data.CsvDataSet(SCHEMA, features=FEATURES, train=TRAIN)
    with _Records() as records:
      training.ModelTrainer().train(
        nn.FeedForwardClassification(args, dataset), job
      )
    return records.messages

  analysis = tmp_path / 'job' / 'analysis'
  first = train('2')
  assert any(
    m.startswith(f'Analyzing {TRAIN} into {analysis}') for m in first
  ), first
  graph = (analysis / 'transform_fn' / 'saved_model.pb').stat().st_mtime_ns
  second = train('4')
  assert any(
    m.startswith(f'Reusing the analysis in {analysis}') for m in second
  ), second
  assert (
    analysis / 'transform_fn' / 'saved_model.pb'
  ).stat().st_mtime_ns == graph
