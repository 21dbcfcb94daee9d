"""A full disk during a checkpoint or an export: a clear error.

The previous checkpoint and model are still usable.

The job's checkpoints and model go to a real size-capped filesystem (a
tmpfs mounted for the test, through Vertex AI's AIP_CHECKPOINT_DIR and
AIP_MODEL_DIR, so the rest of the job has room), filled with a file to
leave as much room as each step needs. Mounting needs privileges: where
the test cannot mount, it is skipped.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import IRIS
from conftest import IRIS_INSTANCES
from tensorfx import prediction
from tensorfx.training._checkpoints import damaged as _damaged

pytestmark = [pytest.mark.slow, pytest.mark.release]


@pytest.fixture
def small_disk(tmp_path):
  """A 4 MiB tmpfs, unmounted after the test."""
  mount = tmp_path / 'disk'
  mount.mkdir()
  result = subprocess.run(
    ['mount', '-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', str(mount)],
    capture_output=True,
    text=True,
    check=False,
  )
  if result.returncode != 0:
    pytest.skip(f'cannot mount a size-capped tmpfs here: {result.stderr}')
  yield mount
  subprocess.run(['umount', '-l', str(mount)], check=False)


def _fill(mount, leave):
  """Fills `mount` with one file so that `leave` bytes stay free."""
  filler = mount / 'filler'
  if filler.exists():
    filler.unlink()
  stat = os.statvfs(mount)
  size = max(0, stat.f_bavail * stat.f_frsize - leave)
  with open(filler, 'wb') as f:
    f.write(b'\0' * size)


def _train(output, mount, max_steps, iris_analysis):
  env = dict(
    os.environ,
    AIP_CHECKPOINT_DIR=str(mount / 'checkpoints'),
    AIP_MODEL_DIR=str(mount / 'model'),
  )
  env.pop('TENSORFX_FAULT', None)
  return subprocess.run(
    [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      str(output),
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      iris_analysis,
      '--hidden-layers:1',
      '8',
      '--seed',
      '9',
      '--checkpoint-interval-steps',
      '50',
      '--max-steps',
      str(max_steps),
    ],
    cwd=IRIS,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
    check=False,
  )


def _last_line(result):
  return result.stderr.strip().splitlines()[-1]


def test_full_disk_during_checkpoint_and_export(
  small_disk, tmp_path, iris_analysis
):
  output = tmp_path / 'job'
  checkpoints = small_disk / 'checkpoints'
  result = _train(output, small_disk, 100, iris_analysis)
  assert result.returncode == 0, result.stderr[-3000:]
  before = [
    p['scores']
    for p in prediction.Model.load(str(small_disk / 'model')).predict(
      IRIS_INSTANCES
    )
  ]

  # No room at all: the checkpoint of step 150 cannot be written.
  _fill(small_disk, 0)
  result = _train(output, small_disk, 200, iris_analysis)
  assert result.returncode == 1
  assert 'Traceback' not in result.stderr
  assert _last_line(result) == (
    f'tensorfx train: error: Cannot write the checkpoint {checkpoints}/'
    'ckpt-150: the disk is full (No space left on device). Free space (or '
    'write --output to a larger disk) and run the same command again: it '
    f'resumes from {checkpoints}/ckpt-100, which is intact.'
  )
  assert not (checkpoints / 'ckpt-150_temp').exists()
  assert _damaged.problem(str(checkpoints / 'ckpt-100')) is None
  record = yaml.safe_load((output / 'job.yaml').read_text())
  assert record['status'] == 'failed'
  assert 'the disk is full' in record['error']

  # Room for checkpoints, not for a model: training resumes from step 100
  # and ends; the export fails and the previous model stays.
  _fill(small_disk, 48 << 10)
  result = _train(output, small_disk, 200, iris_analysis)
  assert result.returncode == 1
  assert f'Resumed from {checkpoints}/ckpt-100 at step 100' in result.stderr
  assert 'Traceback' not in result.stderr
  assert _last_line(result).startswith(
    f'tensorfx train: error: Cannot export the model to {small_disk}/model:'
    ' the disk is full (No space left on device).'
  )
  assert not (small_disk / 'model.partial').exists()
  assert _damaged.problem(str(checkpoints / 'ckpt-200')) is None
  kept = [
    p['scores']
    for p in prediction.Model.load(str(small_disk / 'model')).predict(
      IRIS_INSTANCES
    )
  ]
  np.testing.assert_allclose(kept, before, rtol=1e-6)

  # Room again: the same command exports the last checkpoint.
  (small_disk / 'filler').unlink()
  result = _train(output, small_disk, 200, iris_analysis)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Already trained to step 200' in result.stderr
  after = [
    p['scores']
    for p in prediction.Model.load(str(small_disk / 'model')).predict(
      IRIS_INSTANCES
    )
  ]
  assert not np.allclose(after, before)
  assert (
    yaml.safe_load((output / 'job.yaml').read_text())['status'] == 'completed'
  )
