"""The Gematria-style sample, run as its README says.

Training (here 400 steps instead of Ctrl-C, and with the bad records of
data/more.tfrecord.gz skipped) and `tensorfx evaluate --follow` run side by
side as two processes; then `tensorfx predict` predicts from the last
checkpoint. The predictions of the measured Haswell throughputs must be far
better than predicting their mean.
"""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import ROOT

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('test_gematria_style'),
  pytest.mark.release,
]

SAMPLE = os.path.join(ROOT, 'samples', 'gematria-style')
HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'


def _start(*args):
  process = subprocess.Popen(
    [sys.executable, '-m', 'tensorfx', *args],
    cwd=SAMPLE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
  )
  output = {}
  reader = threading.Thread(
    target=lambda: output.update(zip(('out', 'err'), process.communicate())),
    daemon=True,
  )
  reader.start()
  return process, reader, output


def _finish(started, timeout=900):
  process, reader, output = started
  reader.join(timeout=timeout)
  if process.poll() is None:
    process.kill()
    process.wait(timeout=30)
    raise AssertionError('timed out:\n' + output.get('err', '')[-3000:])
  assert process.returncode == 0, output['err'][-3000:]
  return output


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """Trains with a follower beside it, then predicts: (output, results)."""
  output = tmp_path_factory.mktemp('gematria') / 'hsw'
  started = []
  try:
    started.append(
      _start(
        'train',
        '--module',
        'trainer',
        '--output',
        str(output),
        '--config',
        'hsw.yaml',
        '--data-train',
        'data/train.tfrecord.gz',
        'data/more.tfrecord.gz',
        '--skip-bad-records',
        '--max-steps',
        '400',
        '--checkpoint-interval-secs',
        '5',
        '--seed',
        '1',
      )
    )
    started.append(
      _start(
        'evaluate',
        '--module',
        'trainer',
        '--output',
        str(output),
        '--config',
        'hsw.yaml',
        '--follow',
        '--data-eval',
        'data/eval.tfrecord.gz',
      )
    )
    trained = _finish(started[0])
    followed = _finish(started[1])
    predicted = _finish(
      _start(
        'predict',
        '--module',
        'trainer',
        '--job-dir',
        str(output),
        '--config',
        'hsw.yaml',
        '--input',
        'data/eval.tfrecord.gz',
        'data/predict.tfrecord.gz',
        '--output',
        str(output / 'predicted.tfrecord'),
      )
    )
  finally:
    for process, _, _ in started:
      if process.poll() is None:
        process.kill()
  return output, trained, followed, predicted


def _examples(path):
  compression = 'GZIP' if str(path).endswith('.gz') else None
  return [
    tf.train.Example.FromString(r.numpy())
    for r in tf.data.TFRecordDataset(str(path), compression)
  ]


def _value(example, name):
  feature = example.features.feature[name]
  kind = feature.WhichOneof('kind')
  values = list(getattr(feature, kind).value) if kind else []
  return values[0] if values else None


def test_training_skipped_the_bad_records(run):
  output, trained, _, _ = run
  job = yaml.safe_load((output / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] == 400
  # The 5 bad records, counted on each pass over the data.
  skipped = job['bad_records']['train']
  assert skipped > 0 and skipped % 5 == 0
  assert job['arguments']['loss'] == 'mean_absolute_error'
  assert job['arguments']['loss_normalization'] == 'percentage_error'
  assert f'Skipped bad records: {skipped} of train' in trained['err']


def test_the_follower_evaluated_each_checkpoint_once(run):
  output, _, followed, _ = run
  results = [
    json.loads(line)
    for line in followed['out'].splitlines()
    if line.startswith('{')
  ]
  steps = [r['step'] for r in results]
  assert steps and steps == sorted(set(steps)) and steps[-1] == 400
  last = results[-1]['results']['eval']
  # The loss is the mean absolute percentage error (a fraction), as trained.
  assert last['loss'] == pytest.approx(last['mape'] / 100, rel=1e-3)
  assert last['mape'] < 10
  state = json.loads(
    (output / 'summaries' / 'eval' / 'evaluated.json').read_text()
  )
  assert state['evaluated'] == steps
  assert (output / 'best_model' / 'saved_model.pb').exists()


def test_predictions_are_added_to_the_records(run):
  output, _, _, predicted = run
  assert 'Predicted' in predicted['err']
  inputs = _examples(
    os.path.join(SAMPLE, 'data', 'eval.tfrecord.gz')
  ) + _examples(os.path.join(SAMPLE, 'data', 'predict.tfrecord.gz'))
  outputs = _examples(output / 'predicted.tfrecord')
  assert len(outputs) == len(inputs)
  for source, result in zip(inputs, outputs):
    features = result.features.feature
    for name, feature in source.features.feature.items():
      assert features[name] == feature
    assert _value(result, 'block') == _value(source, 'block_id')
    assert _value(result, 'value') > 0
  # Measured on Haswell: the model's error is a fraction of the spread's.
  haswell = [e for e in outputs if _value(e, 'source') == HASWELL.encode()]
  truth = np.array([_value(e, 'throughput') for e in haswell])
  values = np.array([_value(e, 'value') for e in haswell])
  error = np.mean(np.abs(values - truth) / truth)
  baseline = np.mean(np.abs(np.mean(truth) - truth) / truth)
  assert error < 0.1 and error < baseline / 4, (error, baseline)


def test_generate_writes_the_checked_in_data(tmp_path):
  result = subprocess.run(
    [sys.executable, 'generate.py', '--output', str(tmp_path)],
    cwd=SAMPLE,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  for name in ('train', 'eval', 'more', 'predict'):
    made = tmp_path / f'{name}.tfrecord.gz'
    kept = os.path.join(SAMPLE, 'data', f'{name}.tfrecord.gz')
    # Compared as protos: a map's serialized order may differ.
    made_records = [
      _parsed(r.numpy()) for r in tf.data.TFRecordDataset(str(made), 'GZIP')
    ]
    kept_records = [
      _parsed(r.numpy()) for r in tf.data.TFRecordDataset(kept, 'GZIP')
    ]
    assert made_records == kept_records, name


def _parsed(record):
  """A record as a tf.Example, or its bytes when it is not one."""
  try:
    return tf.train.Example.FromString(record)
  except Exception:
    return record
