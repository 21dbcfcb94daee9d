"""TensorFlow's file APIs on one gs:// prefix; prints what came back as JSON.

Run by test_gcs_filesystem.py in the loopback GCS's namespace:
`python gcs_roundtrip.py gs://bucket/prefix`.
"""

import json
import sys

import tensorflow as tf

root = sys.argv[1]
gfile = tf.io.gfile
found = {}

# gfile: bytes in and out, listing, directories as prefixes, renames.
gfile.makedirs(f'{root}/files/sub')
for name, data in [
  ('empty', b''),
  ('two', b'ab'),
  ('big', bytes(range(256)) * 4000),
]:
  with gfile.GFile(f'{root}/files/{name}', 'wb') as f:
    f.write(data)
  with gfile.GFile(f'{root}/files/{name}', 'rb') as f:
    found[f'bytes_{name}'] = f.read() == data
with gfile.GFile(f'{root}/files/two', 'ab') as f:
  f.write(b'cd')
with gfile.GFile(f'{root}/files/two', 'rb') as f:
  found['appended'] = f.read().decode()
found['listdir'] = sorted(gfile.listdir(f'{root}/files'))
found['glob'] = sorted(p[len(root) :] for p in gfile.glob(f'{root}/files/*'))
found['isdir_sub'] = gfile.isdir(f'{root}/files/sub')
found['isdir_file'] = gfile.isdir(f'{root}/files/two')
found['size_big'] = gfile.stat(f'{root}/files/big').length
gfile.rename(f'{root}/files/two', f'{root}/files/moved')
found['renamed'] = [
  gfile.exists(f'{root}/files/two'),
  gfile.exists(f'{root}/files/moved'),
]
gfile.makedirs(f'{root}/tree/a/b')
with gfile.GFile(f'{root}/tree/a/b/leaf', 'w') as f:
  f.write('leaf')
gfile.rename(f'{root}/tree', f'{root}/renamed-tree')
with gfile.GFile(f'{root}/renamed-tree/a/b/leaf') as f:
  found['tree_renamed'] = [f.read(), gfile.exists(f'{root}/tree')]
gfile.rmtree(f'{root}/renamed-tree')
found['tree_removed'] = gfile.exists(f'{root}/renamed-tree')

# tf.data: text lines and TFRecords.
with gfile.GFile(f'{root}/data/lines.csv', 'w') as f:
  f.write(''.join(f'{i},{i * i}\n' for i in range(100)))
lines = tf.data.TextLineDataset(f'{root}/data/lines.csv')
found['lines'] = [int(x.numpy().split(b',')[1]) for x in lines][-1]
with tf.io.TFRecordWriter(f'{root}/data/records.tfrecord') as w:
  for i in range(10):
    w.write(str(i).encode())
records = tf.data.TFRecordDataset(
  tf.data.Dataset.list_files(f'{root}/data/*.tfrecord')
)
found['records'] = [int(r.numpy()) for r in records]

# Checkpoints: a manager keeping 2, restored into fresh variables.
v = tf.Variable([1.0, 2.0])
step = tf.Variable(0, dtype=tf.int64)
ckpt = tf.train.Checkpoint(v=v, step=step)
manager = tf.train.CheckpointManager(ckpt, f'{root}/ckpt', max_to_keep=2)
for i in range(3):
  step.assign(i + 1)
  v.assign_add([1.0, 1.0])
  manager.save(checkpoint_number=i + 1)
fresh = tf.train.Checkpoint(
  v=tf.Variable([0.0, 0.0]), step=tf.Variable(0, dtype=tf.int64)
)
latest = tf.train.latest_checkpoint(f'{root}/ckpt')
fresh.restore(latest).assert_consumed()
found['checkpoint'] = [
  latest[len(root) :],
  int(fresh.step.numpy()),
  fresh.v.numpy().tolist(),
]
found['checkpoints_kept'] = sorted(
  n for n in gfile.listdir(f'{root}/ckpt') if n.endswith('.index')
)


# SavedModel: saved, loaded back and called.
class Double(tf.Module):
  def __init__(self):
    super().__init__()
    self.k = tf.Variable(2.0)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
  def __call__(self, x):
    return x * self.k


tf.saved_model.save(Double(), f'{root}/model')
loaded = tf.saved_model.load(f'{root}/model')
found['saved_model'] = loaded(tf.constant([1.0, 3.0])).numpy().tolist()

# Summaries: an event file written, then read back.
writer = tf.summary.create_file_writer(f'{root}/logs')
with writer.as_default():
  for i in range(3):
    tf.summary.scalar('loss', 1.0 / (i + 1), step=i)
writer.close()
events = gfile.glob(f'{root}/logs/events.out.tfevents.*')
scalars = []
for record in tf.data.TFRecordDataset(events):
  event = tf.compat.v1.Event.FromString(record.numpy())
  for value in event.summary.value:
    scalars.append([event.step, value.tag])
found['summaries'] = scalars

print(json.dumps(found))
