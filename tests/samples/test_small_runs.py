"""Samples at their smallest size: trained, exported, reloaded, predicting.

The standard tier's proof that each sample runs end to end as its README
says, through its own command line. The full-size runs, which also check
what the models learned, are the release tier's (test_census.py,
test_original_census.py, test_gematria.py, test_gematria_style.py,
test_gematria_tasks.py).
"""

import ast
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from conftest import ROOT
import gematria_upstream
from tensorfx import prediction

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
  # Records as Gematria's own classes (protoc, from Gematria's .proto files)
  # write them: fingerprints, annotations, several sources, prefixes.
  gematria = gematria_upstream.classes()['BasicBlockWithThroughputProto']
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
  for name in ('blocks.tfrecord', 'eval_blocks.tfrecord'):
    records = []
    for index, record in enumerate(_records(tmp_path / name)):
      block = gematria.FromString(record)
      block.basic_block.fingerprint = f'{name}:{index}'
      for instruction in block.basic_block.canonicalized_instructions:
        instruction.instruction_annotations.add(
          name='cache_miss_freq', value=0.5
        )
      for throughput in block.inverse_throughputs:
        throughput.prefix_inverse_throughputs.add(
          inverse_throughput_cycles=throughput.inverse_throughput_cycles
        )
      records.append(block.SerializeToString())
    with tf.io.TFRecordWriter(str(tmp_path / name)) as writer:
      for record in records:
        writer.write(record)
  model = tmp_path / 'hlstm_model'
  _run(
    'gematria',
    'trainer.py',
    '--gematria_action=train',
    '--gematria_tokens_file',
    str(tmp_path / 'tokens.txt'),
    f'--gematria_checkpoint_dir={model}',
    '--gematria_input_file',
    str(tmp_path / 'blocks.tfrecord'),
    f'--gematria_throughput_source_filter={HASWELL}',
    '--gematria_training_num_epochs=2',
    '--gematria_max_blocks_in_batch=100',
    '--gematria_block_embedding_size=16',
    '--gematria_output_layers=8',
  )
  assert (model / 'model' / 'saved_model.pb').exists()
  # Gematria's inference guide: the checkpoint file, no checkpoint dir, and
  # the model's flags as in training.
  _run(
    'gematria',
    'trainer.py',
    '--gematria_action=predict',
    f'--gematria_input_file={tmp_path / "eval_blocks.tfrecord"}',
    f'--gematria_output_file={tmp_path / "predicted.tfrecord"}',
    f'--gematria_tokens_file={tmp_path / "tokens.txt"}',
    f'--gematria_checkpoint_file={model / "checkpoints" / "ckpt-2"}',
    '--gematria_block_embedding_size=16',
    '--gematria_output_layers=8',
  )
  given = _records(tmp_path / 'eval_blocks.tfrecord')
  predicted = _records(tmp_path / 'predicted.tfrecord')
  assert len(predicted) == len(given) > 0
  for before, after in zip(given, predicted):
    before, after = gematria.FromString(before), gematria.FromString(after)
    assert after.basic_block == before.basic_block
    assert list(after.inverse_throughputs)[:-1] == list(
      before.inverse_throughputs
    )
    added = after.inverse_throughputs[-1]
    assert added.source == 'hierarchical-lstm'
    assert len(added.inverse_throughput_cycles) == 1


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


def test_census_generates_trains_and_predicts_with_its_key(tmp_path):
  data, output = tmp_path / 'data', tmp_path / 'output'
  _run(
    'census',
    'generate.py',
    '--train',
    '200',
    '--eval',
    '50',
    '--output',
    str(data),
  )
  # No --data-metadata: the trainer analyzes its training data first.
  trained = _run(
    'census',
    '-m',
    'tensorfx',
    'train',
    '--module',
    'trainer',
    '--output',
    str(output),
    '--data-train',
    str(data / 'train-*.tfrecord.gz'),
    '--data-eval',
    str(data / 'eval.tfrecord.gz'),
    '--data-schema',
    'schema.yaml',
    '--data-features',
    'features.yaml',
    '--max-steps',
    '20',
  )
  with open(data / 'predict.csv') as f:
    ids = [int(line.split(',')[0]) for line in f if line.strip()]
  # The trainer loads the exported model back and predicts predict.csv.
  predictions = ast.literal_eval(trained.stdout.strip().splitlines()[-1])
  assert [p['person'] for p in predictions] == ids
  assert {p['label'] for p in predictions} <= {'>50K', '<=50K'}


def test_original_census_runs_its_run_sh_and_reads_empty_cells(tmp_path):
  output = tmp_path / 'output'
  result = subprocess.run(
    ['sh', 'original_census/run.sh', '--output', str(output)]
    + ['--max-steps', '20', '--seed', '1'],
    cwd=SAMPLES,
    capture_output=True,
    text=True,
    timeout=600,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(SAMPLES, 'original_census', 'data', 'eval.csv')) as f:
    holes = [line.strip() for line in f if ',,' in line][:3]
  model = prediction.Model.load(str(output / 'model'))
  # Lines without their label (the first column), empty cells kept.
  predicted = model.predict([line.split(',', 1)[1] for line in holes])
  assert len(predicted) == len(holes) == 3
  assert all(sum(p['scores']) == pytest.approx(1.0) for p in predicted)
