"""TensorFlow's own GCS filesystem against a GCS-API server on loopback.

Every gs:// path tensorfx hands to TensorFlow goes through these calls:
gfile (renames are a copy and a delete, directories are prefixes),
tf.data, checkpoints, SavedModels and summaries. One child process runs
them all (`gcs_roundtrip.py`); the tests read what it reports and what the
bucket holds.
"""

import json
import os
import sys

import pytest

from gcs_loopback import gcs  # noqa: F401  (a fixture: pytest finds it by name)

pytestmark = [
  pytest.mark.slow,
  pytest.mark.xdist_group('gcs_loopback'),
  pytest.mark.release,
]

SCRIPT = os.path.join(os.path.dirname(__file__), 'gcs_roundtrip.py')


@pytest.fixture(scope='module')
def roundtrip(gcs):
  """What the round-trip script read back, and the objects it left."""
  prefix = 'roundtrip'
  result = gcs.run([sys.executable, SCRIPT, f'gs://{gcs.bucket}/{prefix}'])
  found = json.loads(result.stdout.strip().splitlines()[-1])
  names = [
    b.name[len(prefix) + 1 :]
    for b in gcs.client().list_blobs(gcs.bucket, prefix=prefix + '/')
  ]
  return found, names


def test_gfile_reads_back_what_it_wrote(roundtrip):
  found, names = roundtrip
  assert found['bytes_empty'] and found['bytes_two'] and found['bytes_big']
  assert found['size_big'] == 256 * 4000
  assert found['appended'] == 'abcd'
  assert 'files/big' in names and 'files/empty' in names


def test_gfile_directories_are_prefixes(roundtrip):
  found, names = roundtrip
  assert found['listdir'] == ['big', 'empty', 'sub/', 'two']
  assert found['glob'] == [
    '/files/big',
    '/files/empty',
    '/files/sub',
    '/files/two',
  ]
  assert found['isdir_sub'] and not found['isdir_file']
  assert 'files/sub/' in names  # The marker object TensorFlow writes.


def test_gfile_renames_copy_and_delete(roundtrip):
  found, names = roundtrip
  assert found['renamed'] == [False, True]
  assert 'files/moved' in names and 'files/two' not in names
  assert found['tree_renamed'] == ['leaf', False]
  assert found['tree_removed'] is False
  assert not any(n.startswith(('tree/', 'renamed-tree/')) for n in names)


def test_tf_data_reads_text_and_records(roundtrip):
  found, _ = roundtrip
  assert found['lines'] == 99 * 99
  assert found['records'] == list(range(10))


def test_checkpoints_are_kept_and_restored(roundtrip):
  found, names = roundtrip
  assert found['checkpoint'] == ['/ckpt/ckpt-3', 3, [4.0, 5.0]]
  assert found['checkpoints_kept'] == ['ckpt-2.index', 'ckpt-3.index']
  assert 'ckpt/checkpoint' in names
  assert not any(n.startswith('ckpt/ckpt-1.') for n in names)


def test_saved_model_is_loaded_and_called(roundtrip):
  found, names = roundtrip
  assert found['saved_model'] == [2.0, 6.0]
  assert 'model/saved_model.pb' in names
  assert any(n.startswith('model/variables/variables.data') for n in names)


def test_summaries_are_written_and_read(roundtrip):
  found, _ = roundtrip
  assert found['summaries'] == [[0, 'loss'], [1, 'loss'], [2, 'loss']]
