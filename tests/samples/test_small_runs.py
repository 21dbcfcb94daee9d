"""The Gematria samples at the smallest size: trained, exported, predicting.

The standard tier's proof that each sample runs end to end as its README
says, through its own command line. The full-size runs, which also check
what the models learned, are the release tier's (test_gematria.py,
test_gematria_style.py, test_gematria_tasks.py).
"""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from conftest import ROOT

pytestmark = pytest.mark.slow

SAMPLES = os.path.join(ROOT, 'samples')
HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'


def _run(sample, *argv):
  result = subprocess.run(
    [sys.executable, *argv],
    check=False,
    cwd=os.path.join(SAMPLES, sample),
    capture_output=True,
    text=True,
    timeout=600,
    env=dict(
      os.environ,
      TF_CPP_MIN_LOG_LEVEL='3',
      PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
    ),
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result


def _records(path):
  compression = 'GZIP' if str(path).endswith('.gz') else None
  return [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression)]


def test_gematria_trains_and_predicts_through_gematrias_command_line(tmp_path):
  sys.path.insert(0, os.path.join(SAMPLES, 'gematria'))
  try:
    import gematria_protos as protos
  finally:
    sys.path.pop(0)
  _run(
    'gematria',
    'generate.py',
    '--output',
    str(tmp_path),
    '--blocks',
    '40',
    '--seed',
    '3',
  )
  model = tmp_path / 'hlstm_model'
  common = (
    '--gematria_tokens_file',
    str(tmp_path / 'tokens.txt'),
    f'--gematria_checkpoint_dir={model}',
  )
  _run(
    'gematria',
    'trainer.py',
    '--gematria_action=train',
    *common,
    '--gematria_input_file',
    str(tmp_path / 'blocks.tfrecord'),
    f'--gematria_throughput_source_filter={HASWELL}',
    '--gematria_training_num_epochs=2',
    '--gematria_max_blocks_in_batch=100',
  )
  assert (model / 'model' / 'saved_model.pb').exists()
  _run(
    'gematria',
    'trainer.py',
    '--gematria_action=predict',
    *common,
    '--gematria_input_file',
    str(tmp_path / 'eval_blocks.tfrecord'),
    '--gematria_output_file',
    str(tmp_path / 'predicted.tfrecord'),
  )
  given = _records(tmp_path / 'eval_blocks.tfrecord')
  predicted = _records(tmp_path / 'predicted.tfrecord')
  assert len(predicted) == len(given) > 0
  for before, after in zip(given, predicted):
    before = protos.BasicBlockWithThroughputProto.FromString(before)
    after = protos.BasicBlockWithThroughputProto.FromString(after)
    assert after.basic_block == before.basic_block
    assert len(after.inverse_throughputs) == len(before.inverse_throughputs) + 1
    assert after.inverse_throughputs[-1].source == 'hierarchical-lstm'


def test_gematria_style_trains_and_predicts_as_its_readme_says(tmp_path):
  output = tmp_path / 'hsw'
  config = ('--config', 'hsw.yaml')
  _run(
    'gematria-style',
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    *config,
    '--data-train',
    'data/train.tfrecord.gz',
    '--max-steps',
    '10',
    '--seed',
    '1',
  )
  assert (output / 'model' / 'saved_model.pb').exists()
  _run(
    'gematria-style',
    '-m',
    'tensorfx',
    'predict',
    '--module',
    'trainer',
    '--job-dir',
    str(output),
    *config,
    '--input',
    'data/predict.tfrecord.gz',
    '--output',
    str(tmp_path / 'predicted.tfrecord'),
  )
  data = os.path.join(SAMPLES, 'gematria-style', 'data', 'predict.tfrecord.gz')
  given = [tf.train.Example.FromString(r) for r in _records(data)]
  predicted = [
    tf.train.Example.FromString(r)
    for r in _records(tmp_path / 'predicted.tfrecord')
  ]
  assert len(predicted) == len(given) > 0
  for source, result in zip(given, predicted):
    # Each record as given, with the model's block key and value added.
    features = result.features.feature
    for name, feature in source.features.feature.items():
      assert features[name] == feature
    assert features['block'] == source.features.feature['block_id']
    assert features['value'].float_list.value[0] > 0
