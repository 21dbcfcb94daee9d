"""Fingerprints of what an analysis read, to skip analyzing the same again.

An analysis depends on the schema, the feature set, how the source reads
(its class and options) and the data. The fingerprint holds a hash of the
first three (of their normalized text, so reformatting a YAML file changes
nothing) and, per data file, its path, size and modification time (as make
does: reading every byte again would cost what the analysis costs). A
DataFrame source is hashed by content. `analysis/fingerprint.json` stores it
beside the analysis; a later run with an equal fingerprint reuses the
analysis instead of running it again.
"""

import hashlib
import json
import os
import posixpath

FILE = 'fingerprint.json'
_VERSION = 1


def _digest(text):
  return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def fingerprint(dataset, source):
  """The fingerprint (a JSON-able dict) of analyzing `dataset[source]`."""
  import tensorflow as tf

  data_source = dataset[source]
  files = []
  for path in data_source.files():
    if '://' in path:
      stat = tf.io.gfile.stat(path)
      size, mtime = stat.length, stat.mtime_nsec
    else:
      # gfile rounds local times to the second; os does not.
      stat = os.stat(path)
      size, mtime = stat.st_size, stat.st_mtime_ns
    files.append({'path': path, 'size': int(size), 'mtime_nsec': int(mtime)})
  result = {
    'version': _VERSION,
    'schema': _digest(dataset.schema.format()),
    'features': _digest(dataset.features.format()),
    'reader': _digest(
      json.dumps(data_source.reading_options(), sort_keys=True, default=str)
    ),
    'files': files,
  }
  content = data_source.content_digest()
  if content is not None:
    result['content'] = content
  return result


def difference(old, new):
  """What differs between two fingerprints, in words; None when equal."""
  if old is None:
    return 'no fingerprint of a previous analysis'
  if old.get('version') != new.get('version'):
    return 'the analysis format changed'
  for key, what in (
    ('schema', 'the schema'),
    ('features', 'the features'),
    ('reader', 'how the data is read'),
    ('content', 'the data'),
  ):
    if old.get(key) != new.get(key):
      return f'{what} changed'
  before = {f['path']: f for f in old.get('files', ())}
  after = {f['path']: f for f in new.get('files', ())}
  for path in sorted(set(before) | set(after)):
    if path not in before:
      return f'{path} is new'
    if path not in after:
      return f'{path} is no longer read'
    if before[path] != after[path]:
      return f'{path} changed (size or modification time)'
  return None


def load(directory):
  """The fingerprint stored in an analysis directory, or None."""
  import tensorflow as tf

  path = posixpath.join(directory, FILE)
  try:
    with tf.io.gfile.GFile(path) as f:
      return json.load(f)
  except (tf.errors.NotFoundError, ValueError):
    return None


def save(directory, value):
  import tensorflow as tf

  with tf.io.gfile.GFile(posixpath.join(directory, FILE), 'w') as f:
    json.dump(value, f, indent=2)
