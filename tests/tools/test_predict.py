"""`tensorfx predict`: from an exported model or a checkpoint, streaming."""

import json
import os
import pty
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import IRIS
from iris_examples import eval_rows as _rows
from iris_examples import example
from iris_examples import read_examples
from iris_examples import values as _values
from iris_examples import write_records
from tensorfx.tools import main

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

# The flags the shared iris model (conftest.iris_model) was trained with.
_TRAINER_FLAGS = [
  '--data-train',
  'data/train.csv',
  '--data-schema',
  'schema.yaml',
  '--data-features',
  'features.yaml',
  '--hidden-layers:1',
  '20',
  '--hidden-layers:2',
  '10',
]


def _run(*args, stdin=None):
  return subprocess.run(
    [sys.executable, '-m', 'tensorfx', *args],
    capture_output=True,
    text=True,
    cwd=IRIS,
    input=stdin,
    timeout=600,
    check=False,
  )


def test_from_a_checkpoint_without_writing_a_model(
  iris_model, iris_analysis, tmp_path
):
  output, model = iris_model
  rows = _rows()
  write_records(
    tmp_path / 'eval.tfrecord.gz', [example(r) for r in rows], 'GZIP'
  )
  before = sorted(os.listdir(output))
  result = _run(
    'predict',
    '--module',
    'trainer',
    '--job-dir',
    output,
    '--checkpoint',
    os.path.join(output, 'checkpoints', 'ckpt-300'),
    '--input',
    str(tmp_path / 'eval.tfrecord.gz'),
    '--output',
    str(tmp_path / 'predicted.tfrecord'),
    *_TRAINER_FLAGS,
    '--data-metadata',
    iris_analysis,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Predicted 30 of 30 records' in result.stderr
  assert sorted(os.listdir(output)) == before  # No model written.
  predicted = read_examples(tmp_path / 'predicted.tfrecord')
  # The exported model is of the same (last) checkpoint.
  expected = model.predict([','.join(r[1:]) for r in rows])
  assert len(predicted) == 30
  for got, want in zip(predicted, expected):
    features = got.features.feature
    assert _values(features['label']) == [want['label'].encode()]
    np.testing.assert_allclose(
      _values(features['scores']), want['scores'], rtol=1e-4, atol=1e-7
    )


@pytest.mark.release
def test_lines_from_stdin_to_stdout(iris_model):
  output, _ = iris_model
  lines = [
    '6.3,3.3,6,2.5',
    '{"sepal_length": 4.4, "sepal_width": 3, '
    '"petal_length": 1.3, "petal_width": 0.2}',
    'setosa,5,3.6,1.4,0.2',
  ]
  result = _run(
    'predict',
    '--model',
    os.path.join(output, 'model'),
    stdin='\n'.join(lines) + '\n',
  )
  assert result.returncode == 0, result.stderr[-3000:]
  out = [json.loads(line) for line in result.stdout.splitlines()]
  assert [o['label'] for o in out] == ['virginica', 'setosa', 'setosa']
  assert out[1]['sepal_length'] == 4.4
  assert out[2]['species'] == 'setosa'
  # A bad line is named by its number.
  result = _run(
    'predict',
    '--model',
    os.path.join(output, 'model'),
    stdin='6.3,3.3,6,2.5\n6.3,x,6,2.5\n',
  )
  assert result.returncode == 1
  assert "<stdin>:2: column 'sepal_width' is not a real number" in result.stderr


def _big_input(path, count):
  """`count` iris records, each with a 4 KB payload, GZIP-compressed."""
  rows = _rows()
  payload = b'x' * 4096
  write_records(
    path,
    (example(rows[i % len(rows)], id=i, payload=payload) for i in range(count)),
    'GZIP',
  )


def _peak_rss_mb(args, tty=False):
  """Runs `tensorfx` with args; returns (peak RSS in MB, stderr text)."""
  master = slave = None
  if tty:
    master, slave = pty.openpty()
  process = subprocess.Popen(
    [sys.executable, '-m', 'tensorfx', *args],
    cwd=IRIS,
    stdout=subprocess.DEVNULL,
    stderr=slave if tty else subprocess.PIPE,
  )
  chunks = []
  if tty:
    os.close(slave)

    def drain():
      while True:
        try:
          data = os.read(master, 4096)
        except OSError:
          return
        if not data:
          return
        chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
  else:
    reader = threading.Thread(
      target=lambda: chunks.append(process.stderr.read()), daemon=True
    )
    reader.start()
  try:
    _, status, usage = os.wait4(process.pid, 0)
  finally:
    if process.poll() is None:
      process.kill()
  process.returncode = os.waitstatus_to_exitcode(status)
  reader.join(timeout=30)
  if process.stderr is not None:
    process.stderr.close()
  if master is not None:
    os.close(master)
  text = b''.join(chunks).decode('utf-8', 'replace')
  assert process.returncode == 0, text[-3000:]
  # ru_maxrss is in kilobytes on Linux.
  return usage.ru_maxrss / 1024, text


@pytest.mark.release
def test_memory_does_not_grow_with_the_input(iris_model, tmp_path):
  output, _ = iris_model
  model = os.path.join(output, 'model')
  _big_input(tmp_path / 'small.tfrecord.gz', 2000)
  _big_input(tmp_path / 'large.tfrecord.gz', 20000)  # 80 MB of payload.
  small, _ = _peak_rss_mb(
    [
      'predict',
      '--model',
      model,
      '--input',
      str(tmp_path / 'small.tfrecord.gz'),
      '--output',
      str(tmp_path / 'small-out.tfrecord.gz'),
    ]
  )
  large, stderr = _peak_rss_mb(
    [
      'predict',
      '--model',
      model,
      '--input',
      str(tmp_path / 'large.tfrecord.gz'),
      '--output',
      str(tmp_path / 'large-out.tfrecord.gz'),
    ]
  )
  assert 'Predicted 20000 of 20000 records' in stderr
  # Holding the records would add 80 MB or more; streaming adds nothing.
  print(
    f'peak RSS: {small:.0f} MB for 2,000 records, {large:.0f} MB for 20,000'
  )
  assert large - small < 30, (small, large)
  last = read_examples(tmp_path / 'large-out.tfrecord.gz', 'GZIP')[-1]
  assert _values(last.features.feature['id']) == [19999]
  assert len(_values(last.features.feature['payload'])[0]) == 4096


@pytest.mark.release
def test_one_key_order_in_every_process(iris_model):
  output, _ = iris_model
  # Keys out of schema order, and one the schema lacks.
  lines = ''.join(
    json.dumps(
      {
        'note': f'row {i}',
        'petal_width': 2.5,
        'petal_length': 6.0,
        'sepal_width': 3.3,
        'sepal_length': 6.3,
      }
    )
    + '\n'
    for i in range(3)
  )
  orders = []
  for seed in ('1', '2'):
    result = subprocess.run(
      [
        sys.executable,
        '-m',
        'tensorfx',
        'predict',
        '--model',
        os.path.join(output, 'model'),
      ],
      capture_output=True,
      text=True,
      cwd=IRIS,
      input=lines,
      timeout=600,
      check=False,
      env={**os.environ, 'PYTHONHASHSEED': seed},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    orders.append(
      [list(json.loads(line)) for line in result.stdout.splitlines()]
    )
  assert orders[0] == orders[1]
  # The input echoed in schema order (then the rest), the outputs sorted.
  assert (
    orders[0]
    == [
      [
        'sepal_length',
        'sepal_width',
        'petal_length',
        'petal_width',
        'note',
        'classes',
        'label',
        'scores',
      ]
    ]
    * 3
  )


def test_a_progress_bar_on_a_terminal(iris_model, tmp_path):
  output, _ = iris_model
  write_records(tmp_path / 'in.tfrecord', [example(r) for r in _rows()] * 40)
  _, text = _peak_rss_mb(
    [
      'predict',
      '--model',
      os.path.join(output, 'model'),
      '--input',
      str(tmp_path / 'in.tfrecord'),
      '--output',
      str(tmp_path / 'out.jsonl'),
      '--batch-size',
      '50',
    ],
    tty=True,
  )
  # Redrawn in place: the bar, the share of the input, the records.
  assert '\r\x1b[K[' in text
  assert '100%' in text and '1,200 records' in text
  assert len((tmp_path / 'out.jsonl').read_text().splitlines()) == 1200


@pytest.mark.parametrize(
  'argv, message',
  [
    ([], 'tensorfx predict needs a model: --model DIR'),
    (['--model', 'm', '--module', 'trainer'], 'needs a model'),
    (
      ['--module', 'trainer'],
      'needs both --module (the trainer) and --job-dir',
    ),
    (
      ['--model', 'm', '--data-train', 'x'],
      'With --model, tensorfx predict '
      'takes no trainer arguments. Received: --data-train x',
    ),
    (['--model', 'm', '--batch-size', '0'], '--batch-size must be a positive'),
  ],
)
def test_usage_errors(argv, message, capsys):
  assert main(['predict', *argv]) == 1
  assert message in capsys.readouterr().err


def test_a_trainer_needs_predict_input():
  from tensorfx import ConfigurationError
  from tensorfx.training import ModelArguments

  with pytest.raises(
    ConfigurationError,
    match='--action predict needs the records to predict: --predict-input',
  ):
    ModelArguments.parse(['--action', 'predict'])
  args = ModelArguments.parse(
    ['--action', 'predict', '--predict-input', 'a.tfrecord', 'b-*.tfrecord.gz']
  )
  assert args.predict_input == ['a.tfrecord', 'b-*.tfrecord.gz']
