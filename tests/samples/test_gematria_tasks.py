"""The Gematria sample with two tasks, from Gematria's own flags.

Two `--gematria_throughput_source_filter` with `--gematria_task_names`
train one output per task (Haswell, Skylake) on the blocks generate.py
writes: the evaluation reports each task's metrics, the exported model
has one output per task and is reloaded and called, and
`--gematria_action=predict` adds one inverse throughput per task, as
Gematria's multi-task inference does.
"""

import glob
import math
import os
import subprocess
import sys

import pytest
import tensorflow as tf
import yaml

from conftest import ROOT
import gematria_sample
from tensorfx import prediction

SAMPLE = os.path.join(ROOT, 'samples', 'gematria')
protos = gematria_sample.module('gematria_protos')

HASWELL = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL'
SKYLAKE = 'ithemal: kind=KIND_MEASURED, uarch=ARCH_SKYLAKE'
TASKS = [
  '--gematria_throughput_source_filter',
  HASWELL,
  f'--gematria_throughput_source_filter={SKYLAKE}',
  '--gematria_task_names=hsw',
  '--gematria_task_names',
  'skl',
]
pytestmark = [
  pytest.mark.slow,
  pytest.mark.timeout(1800),
  pytest.mark.xdist_group('test_gematria_tasks'),
  pytest.mark.release,
]


def _run(*argv, check=True):
  result = subprocess.run(
    [sys.executable, 'trainer.py', *argv],
    check=False,
    cwd=SAMPLE,
    capture_output=True,
    text=True,
    timeout=900,
    env=dict(
      os.environ,
      TF_CPP_MIN_LOG_LEVEL='3',
      PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]),
    ),
  )
  if check:
    assert result.returncode == 0, result.stderr[-3000:]
  return result


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """Generates, trains two tasks (evaluating them) and predicts."""
  work = tmp_path_factory.mktemp('gematria_tasks')
  subprocess.run(
    [
      sys.executable,
      'generate.py',
      '--output',
      str(work),
      '--blocks',
      '100',
      '--seed',
      '3',
    ],
    cwd=SAMPLE,
    check=True,
    timeout=300,
    env=dict(os.environ, PYTHONPATH=ROOT),
  )
  model = work / 'model'
  # As with Gematria, every action takes the model's flags as trained.
  common = [
    '--gematria_tokens_file',
    str(work / 'tokens.txt'),
    *TASKS,
    '--gematria_collected_percentile_ranks=50,90',
    f'--gematria_checkpoint_dir={model}',
  ]
  _run(
    '--gematria_action=train',
    '--gematria_input_file',
    str(work / 'blocks.tfrecord'),
    '--gematria_training_num_epochs=20',
    '--gematria_loss_type=MEAN_ABSOLUTE_ERROR',
    '--gematria_loss_normalization=PERCENTAGE_ERROR',
    '--gematria_max_blocks_in_batch=50',
    *common,
    # tensorfx's flags beside Gematria's: evaluate in the loop.
    '--data-eval',
    str(work / 'eval_blocks.tfrecord'),
  )
  _run(
    '--gematria_action=predict',
    '--gematria_input_file',
    str(work / 'eval_blocks.tfrecord'),
    '--gematria_output_file',
    str(work / 'predicted.tfrecord'),
    *common,
  )
  return work


def _blocks(path):
  return [
    protos.BasicBlockWithThroughputProto.FromString(r.numpy())
    for r in tf.data.TFRecordDataset(str(path))
  ]


def test_each_task_has_its_metrics(run):
  metrics = yaml.safe_load((run / 'model' / 'job.yaml').read_text())['metrics']
  for task in ('hsw', 'skl'):
    for name in (
      'mape',
      'mae',
      'rmse',
      'abs_error_p50',
      'abs_error_p90',
      'rel_error_p90',
    ):
      assert math.isfinite(metrics[f'{name}_{task}']), (name, task)
  assert math.isfinite(metrics['mape'])
  tags = set()
  for path in glob.glob(str(run / 'model' / 'summaries' / 'eval' / 'events.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  assert {'mape_hsw', 'mape_skl', 'rel_error_p90_skl'} <= tags


def test_the_saved_model_has_one_output_per_task(run):
  model = prediction.Model.load(str(run / 'model' / 'model'))
  # A block's fields as the model reads them (batch prediction of the
  # proto records feeds it the same): two instructions of three tokens.
  block = tf.train.Example(
    features=tf.train.Features(
      feature={
        'tokens': tf.train.Feature(
          bytes_list=tf.train.BytesList(
            value=[b'ADD', b'RAX', b'RBX', b'MOV', b'RCX', b'_IMMEDIATE_']
          )
        ),
        'instruction_tokens': tf.train.Feature(
          int64_list=tf.train.Int64List(value=[3, 3])
        ),
      }
    )
  )
  [outputs] = model.predict([block.SerializeToString()])
  assert {'value_hsw', 'value_skl'} <= set(outputs)
  assert 'value' not in outputs
  assert all(math.isfinite(outputs[f'value_{t}']) for t in ('hsw', 'skl'))


def test_predict_adds_one_throughput_per_task(run):
  given = _blocks(run / 'eval_blocks.tfrecord')
  predicted = _blocks(run / 'predicted.tfrecord')
  assert len(predicted) == len(given) > 0
  for before, after in zip(given, predicted):
    assert after.basic_block == before.basic_block
    count = len(before.inverse_throughputs)
    assert list(after.inverse_throughputs)[:count] == list(
      before.inverse_throughputs
    )
    added = after.inverse_throughputs[count:]
    # Gematria's inference: 'MODEL, task=TASK', in the tasks' order.
    assert [t.source for t in added] == [
      'hierarchical-lstm, task=hsw',
      'hierarchical-lstm, task=skl',
    ]
    assert all(len(t.inverse_throughput_cycles) == 1 for t in added)


def test_task_names_must_match_the_filters(tmp_path):
  result = _run(
    '--gematria_action=train',
    '--gematria_input_file',
    str(tmp_path / 'none.tfrecord'),
    '--gematria_throughput_source_filter',
    HASWELL,
    '--gematria_throughput_source_filter',
    SKYLAKE,
    '--gematria_task_names=hsw',
    f'--gematria_checkpoint_dir={tmp_path / "model"}',
    check=False,
  )
  assert result.returncode != 0
  assert (
    '--gematria_task_names must have as many names as '
    '--gematria_throughput_source_filter has filters. Received: '
    '1 names (hsw), 2 filters'
  ) in result.stderr
