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

SAMPLE = os.path.join(ROOT, 'samples', 'gematria')
sys.path.insert(0, SAMPLE)
import gematria_protos as protos  # noqa: E402  (the sample's folder first)

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


def test_the_messages_are_wire_compatible_with_gematria():
  # Field numbers of Gematria's gematria/proto/*.proto.
  numbers = {
    protos.BasicBlockWithThroughputProto: {
      'basic_block': 1,
      'inverse_throughputs': 2,
    },
    protos.ThroughputWithSourceProto: {
      'source': 1,
      'inverse_throughput_cycles': 2,
      'prefix_inverse_throughputs': 3,
    },
    protos.BasicBlockProto: {
      'machine_instructions': 1,
      'canonicalized_instructions': 2,
      'fingerprint': 7,
    },
    protos.CanonicalizedInstructionProto: {
      'mnemonic': 1,
      'prefixes': 2,
      'llvm_mnemonic': 3,
      'output_operands': 4,
      'input_operands': 5,
      'implicit_output_operands': 6,
      'implicit_input_operands': 7,
    },
    protos.CanonicalizedOperandProto: {
      'register_name': 1,
      'immediate_value': 2,
      'fp_immediate_value': 3,
      'address': 4,
      'memory': 5,
    },
  }
  for message, fields in numbers.items():
    found = {f.name: f.number for f in message.DESCRIPTOR.fields}
    assert {name: found[name] for name in fields} == fields
  assert protos.BasicBlockWithThroughputProto.DESCRIPTOR.full_name == (
    'gematria.BasicBlockWithThroughputProto'
  )
