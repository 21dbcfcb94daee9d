"""The Gematria sample, run with Gematria's own command line.

Gematria's documented example command (only the paths changed, and a
finite --gematria_training_num_epochs) trains the hierarchical LSTM on
BasicBlockWithThroughputProto files that generate.py writes; then
--gematria_action=eval evaluates the checkpoints and
--gematria_action=predict writes the blocks back with one more inverse
throughput each, far closer to the measurements than the median is.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import ROOT
import gematria_sample

SAMPLE = os.path.join(ROOT, 'samples', 'gematria')
protos = gematria_sample.module('gematria_protos')

HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'
# Four trainer processes on a shared machine: more than the default 900 s.
pytestmark = [
  pytest.mark.timeout(2400),
  pytest.mark.xdist_group('test_gematria'),
]


def _run(*argv, timeout=900):
  result = subprocess.run(
    [sys.executable, 'trainer.py', *argv],
    check=False,
    cwd=SAMPLE,
    capture_output=True,
    text=True,
    timeout=timeout,
    env=dict(
      os.environ,
      TF_CPP_MIN_LOG_LEVEL='3',
      PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
    ),
  )
  assert result.returncode == 0, result.stderr[-3000:]
  return result


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """Generates, trains, follows and predicts: (data dir, model dir)."""
  work = tmp_path_factory.mktemp('gematria')
  subprocess.run(
    [
      sys.executable,
      'generate.py',
      '--output',
      str(work),
      '--blocks',
      '300',
      '--seed',
      '3',
    ],
    cwd=SAMPLE,
    check=True,
    timeout=300,
    env=dict(os.environ, PYTHONPATH=ROOT),
  )
  model = work / 'hlstm_model'
  # The documented command line, verbatim but for the paths and epochs.
  _run(
    '--gematria_action=train',
    '--gematria_tokens_file',
    str(work / 'tokens.txt'),
    '--gematria_input_file',
    str(work / 'blocks.tfrecord'),
    '--gematria_throughput_source_filter=ithemal: kind=KIND_MEASURED, '
    'uarch=ARCH_HASWELL',
    '--gematria_training_num_epochs=150',
    '--gematria_learning_rate=0.01',
    '--gematria_loss_type=MEAN_ABSOLUTE_ERROR',
    '--gematria_loss_normalization=PERCENTAGE_ERROR',
    '--gematria_max_blocks_in_batch=100',
    f'--gematria_checkpoint_dir={model}',
  )
  followed = _run(
    '--gematria_action=eval',
    '--gematria_tokens_file',
    str(work / 'tokens.txt'),
    '--gematria_input_file',
    str(work / 'eval_blocks.tfrecord'),
    '--gematria_throughput_source_filter',
    HASWELL,
    '--gematria_eval_interval_secs=1',
    f'--gematria_checkpoint_dir={model}',
  )
  _run(
    '--gematria_action=predict',
    '--gematria_tokens_file',
    str(work / 'tokens.txt'),
    '--gematria_input_file',
    str(work / 'eval_blocks.tfrecord'),
    '--gematria_output_file',
    str(work / 'predicted.tfrecord'),
    f'--gematria_checkpoint_dir={model}',
  )
  return work, followed.stdout


def _blocks(path):
  return [
    protos.BasicBlockWithThroughputProto.FromString(r.numpy())
    for r in tf.data.TFRecordDataset(str(path))
  ]


@pytest.mark.slow
@pytest.mark.release
def test_predict_adds_one_throughput_to_each_block(run):
  work, _ = run
  given = _blocks(work / 'eval_blocks.tfrecord')
  predicted = _blocks(work / 'predicted.tfrecord')
  assert len(predicted) == len(given) == 60
  for before, after in zip(given, predicted):
    assert after.basic_block == before.basic_block
    assert list(after.inverse_throughputs)[:-1] == list(
      before.inverse_throughputs
    )
    added = after.inverse_throughputs[-1]
    assert added.source == 'hierarchical-lstm'
    assert len(added.inverse_throughput_cycles) == 1


@pytest.mark.slow
@pytest.mark.release
def test_the_model_learned_the_haswell_throughputs(run):
  work, _ = run
  measured, predicted = [], []
  for block in _blocks(work / 'predicted.tfrecord'):
    for throughput in block.inverse_throughputs[:-1]:
      if throughput.source == HASWELL:
        measured.append(np.mean(throughput.inverse_throughput_cycles))
        predicted.append(
          block.inverse_throughputs[-1].inverse_throughput_cycles[0]
        )
  measured, predicted = np.array(measured), np.array(predicted)
  mape = np.mean(np.abs(predicted - measured) / measured)
  median = np.mean(np.abs(np.median(measured) - measured) / measured)
  assert mape < median / 3, (mape, median)


@pytest.mark.slow
@pytest.mark.release
def test_the_follower_evaluated_the_checkpoints(run):
  _, stdout = run
  lines = [
    json.loads(line) for line in stdout.splitlines() if line.startswith('{')
  ]
  assert [line['step'] for line in lines][-1] == 150
  assert lines[-1]['results']['eval']['mape'] < 50


@pytest.mark.slow
@pytest.mark.release
def test_export_graph_def_exports_a_checkpoint_without_input_files(run):
  # Gematria's TFLite guide: the action and the checkpoint file, no data.
  work, _ = run
  model = work / 'hlstm_model'
  (model / 'model' / 'saved_model.pb').unlink()
  result = _run(
    '--gematria_action=export_graph_def',
    f'--gematria_checkpoint_file={model / "checkpoints" / "ckpt-150"}',
  )
  assert 'Exported' in result.stderr
  loaded = tf.saved_model.load(str(model / 'model'))
  assert 'serving_default' in loaded.signatures
