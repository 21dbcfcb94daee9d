"""Damaged inputs end to end: `tensorfx train` in its own process.

The in-process fuzzers (tests/data/test_fuzz.py, test_fuzz_config.py) try
many damaged inputs at the parse level; these few runs check what a user
sees from the command line: one line naming the file and line (or key),
exit code 1, no traceback and no model; or, with --skip-bad-records, the
documented skip.
"""

import os
import pathlib
import random
import subprocess
import sys

import pytest
import yaml

from conftest import IRIS

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

_TRAIN = os.path.join(IRIS, 'data', 'train.csv')


def _train(output, *flags, env=None, metadata=None):
  command = [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--data-eval',
    'data/eval.csv',
    '--data-schema',
    'schema.yaml',
    '--hidden-layers:1',
    '8',
    '--max-steps',
    '40',
    *flags,
  ]
  if metadata:
    command += ['--data-metadata', metadata]
  if '--data-train' not in flags:
    command += ['--data-train', 'data/train.csv']
  if '--data-features' not in flags:
    command += ['--data-features', 'features.yaml']
  environ = dict(os.environ)
  environ.pop('TF_CONFIG', None)
  environ.update(env or {})
  return subprocess.run(
    command,
    cwd=IRIS,
    env=environ,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )


def _error_line(result):
  assert result.returncode == 1, result.stderr[-3000:]
  assert 'Traceback' not in result.stderr, result.stderr[-3000:]
  return result.stderr.strip().splitlines()[-1]


@pytest.mark.release
def test_a_damaged_row_is_named_or_skipped(tmp_path, iris_analysis):
  lines = pathlib.Path(_TRAIN).read_text(encoding='utf-8').splitlines()
  # A byte edit that breaks a number: "5.1" -> "5,1" adds a column.
  rng = random.Random(19)
  number = rng.randrange(len(lines))
  lines[number] = lines[number].replace('.', ',', 1)
  bad = tmp_path / 'train.csv'
  bad.write_text('\n'.join(lines) + '\n')
  result = _train(
    tmp_path / 'job', '--data-train', str(bad), metadata=iris_analysis
  )
  assert _error_line(result) == (
    f'tensorfx train: error: {bad}:{number + 1}: expected 5 columns, found 6'
    ' (--skip-bad-records skips and counts such records)'
  )
  assert not (tmp_path / 'job' / 'model').exists()
  assert (
    yaml.safe_load((tmp_path / 'job' / 'job.yaml').read_text())['status']
    == 'failed'
  )

  result = _train(
    tmp_path / 'skip',
    '--data-train',
    str(bad),
    '--skip-bad-records',
    metadata=iris_analysis,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  record = yaml.safe_load((tmp_path / 'skip' / 'job.yaml').read_text())
  assert record['status'] == 'completed'
  # Counted each time the row is read (once per pass over the data).
  assert record['bad_records']['train'] >= 1
  assert (
    'Skipped a bad record' in result.stderr or 'bad record' in result.stderr
  )


def test_training_data_with_no_record_is_an_error(tmp_path, iris_analysis):
  # A partial upload that ended before its first line.
  empty = tmp_path / 'train.csv'
  empty.write_bytes(b'')
  result = _train(
    tmp_path / 'job', '--data-train', str(empty), metadata=iris_analysis
  )
  assert _error_line(result).startswith(
    'tensorfx train: error: The training data ended before the first '
    'training step (at step 0): it yielded no batch.'
  )
  assert not (tmp_path / 'job' / 'model').exists()


@pytest.mark.release
def test_bad_tf_config_and_features_are_named(tmp_path, iris_analysis):
  result = _train(
    tmp_path / 'a',
    metadata=iris_analysis,
    env={
      'TF_CONFIG': '{"cluster": {"chief": ["h:1"], "worker": ["h:2", "h:2"]},'
      ' "task": {"type": "worker", "index": 0}}'
    },
  )
  assert _error_line(result).startswith(
    'tensorfx train: error: TF_CONFIG key `cluster.worker[1]` must differ '
    'from `cluster.worker[0]`'
  )

  features = tmp_path / 'features.yaml'
  features.write_text(
    pathlib.Path(os.path.join(IRIS, 'features.yaml'))
    .read_text()
    .replace('name: petal_length', 'name: petal_lenght')
  )
  result = _train(tmp_path / 'b', '--data-features', str(features))
  line = _error_line(result)
  assert line.startswith(f'tensorfx train: error: {features}:')
  assert 'petal_lenght' in line and 'petal_length' in line
