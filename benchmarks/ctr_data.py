"""The reference workload: a synthetic click-through dataset.

13 real features (`r1`..`r13`), 26 categorical string features (`c1`..`c26`)
with vocabulary sizes spread geometrically from 10 to 100,000 and
Zipf-distributed values, and a binary `label` that depends on both (so a
model has something to learn). Written as sharded TFRecord of tf.Example,
plain and GZIP, and as CSV, with the tensorfx schema and features that
describe it. Nothing downloads; the same seed writes the same data.

  python benchmarks/ctr_data.py --rows 1000000 --output /tmp/ctr
"""

import argparse
import json
import os
import sys

import numpy as np

REALS = [f'r{i}' for i in range(1, 14)]
CATEGORICALS = [f'c{i}' for i in range(1, 27)]
# Geometric from 10 to 100,000: a few tiny vocabularies, a few huge ones.
VOCABULARIES = dict(
  zip(CATEGORICALS, np.geomspace(10, 100000, 26).astype(int).tolist())
)
EMBEDDING_DIM = 16
_ZIPF = 1.1
_CHUNK = 50000


def _zipf_ids(rng, vocabulary, count):
  """`count` ids in [0, vocabulary), Zipf-distributed (id 0 most common)."""
  weights = 1.0 / np.arange(1, vocabulary + 1) ** _ZIPF
  cumulative = np.cumsum(weights / weights.sum())
  return np.minimum(
    np.searchsorted(cumulative, rng.random(count)), vocabulary - 1
  )


def rows(count, seed):
  """A chunk of rows: (reals [count, 13] float32, ids [count, 26], labels)."""
  rng = np.random.default_rng(seed)
  reals = rng.lognormal(0.0, 1.0, (count, len(REALS))).astype(np.float32)
  ids = np.stack(
    [_zipf_ids(rng, VOCABULARIES[c], count) for c in CATEGORICALS], axis=1
  )
  # Clicks follow a few reals and whether some categories are common ones.
  logit = (
    0.8 * np.log(reals[:, 0])
    - 0.6 * np.log(reals[:, 1])
    + 0.7 * (ids[:, 3] < 2)
    - 0.9 * (ids[:, 10] % 3 == 0)
    + 0.5 * (ids[:, 20] < 50)
    - 0.4
  )
  labels = (rng.random(count) < 1 / (1 + np.exp(-logit))).astype(np.int64)
  return reals, ids, labels


_VOCABULARY_TEXT = {}


def _strings(ids):
  """The values of each categorical column ('c7_123'), as object arrays."""
  if not _VOCABULARY_TEXT:
    for name, size in VOCABULARIES.items():
      _VOCABULARY_TEXT[name] = np.array(
        [f'{name}_{i}' for i in range(size)], dtype=object
      )
  return [
    _VOCABULARY_TEXT[name][column] for name, column in zip(CATEGORICALS, ids.T)
  ]


def _varint(n):
  out = bytearray()
  while True:
    byte = n & 0x7F
    n >>= 7
    if n:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


_SMALL = [bytes([n]) for n in range(128)]


def _examples(reals, ids, labels):
  """Serialized tf.Examples, encoded directly.

  Protobuf objects take ~20x longer at this size (`check_encoding` proves
  the bytes equal).
  """
  strings = _strings(ids)
  real_bytes = reals.astype('<f4').tobytes()
  # An entry is `key: name, value: Feature`; a real's Feature is a packed
  # float list of one 4-byte value, so its entry is fixed but for the value.
  real_prefix = []
  for name in REALS:
    key = b'\x0a' + _SMALL[len(name)] + name.encode()
    body_size = len(key) + 2 + 8
    real_prefix.append(
      b'\x0a' + _SMALL[body_size] + key + b'\x12\x08\x12\x06\x0a\x04'
    )
  cat_keys = [b'\x0a' + _SMALL[len(c)] + c.encode() for c in CATEGORICALS]
  width = 4 * len(REALS)
  for n in range(len(labels)):
    label = _varint(int(labels[n]))
    feature = (
      b'\x1a' + _SMALL[len(label) + 2] + b'\x0a' + _SMALL[len(label)] + label
    )
    body = b'\x0a\x05label\x12' + _SMALL[len(feature)] + feature
    parts = [b'\x0a', _SMALL[len(body)], body]
    offset = n * width
    for j, prefix in enumerate(real_prefix):
      parts.append(prefix)
      parts.append(real_bytes[offset + 4 * j : offset + 4 * j + 4])
    for j, key in enumerate(cat_keys):
      text = strings[j][n].encode()
      size = len(text)
      # Feature{bytes_list{value: text}}: two nested length prefixes.
      body_size = len(key) + 6 + size
      parts += [
        b'\x0a',
        _SMALL[body_size],
        key,
        b'\x12',
        _SMALL[size + 4],
        b'\x0a',
        _SMALL[size + 2],
        b'\x0a',
        _SMALL[size],
        text,
      ]
    features = b''.join(parts)
    yield b'\x0a' + _varint(len(features)) + features


def check_encoding(count=5, seed=1):
  """Raises unless `_examples` encodes what tf.train.Example would."""
  import tensorflow as tf

  reals, ids, labels = rows(count, seed)
  strings = _strings(ids)
  for n, record in enumerate(_examples(reals, ids, labels)):
    parsed = tf.train.Example.FromString(record)
    feature = parsed.features.feature
    assert feature['label'].int64_list.value == [labels[n]]
    for j, name in enumerate(REALS):
      assert feature[name].float_list.value == [reals[n, j]]
    for j, name in enumerate(CATEGORICALS):
      assert feature[name].bytes_list.value == [strings[j][n].encode()]


def _csv_lines(reals, ids, labels):
  columns = [labels.astype(str)]
  columns += list(np.char.mod('%.6g', reals).T)
  columns += _strings(ids)
  for values in zip(*columns):
    yield ','.join(values) + '\n'


def paths(directory, rows_count, shards):
  """The files of a dataset: {'tfrecord': [...], 'tfrecord-gzip', 'csv'}."""
  base = os.path.join(directory, f'ctr-{rows_count}-{shards}')
  return {
    'tfrecord': [f'{base}/part-{i:03d}.tfrecord' for i in range(shards)],
    'tfrecord-gzip': [
      f'{base}/part-{i:03d}.tfrecord.gz' for i in range(shards)
    ],
    'csv': [f'{base}/part-{i:03d}.csv' for i in range(shards)],
    'schema': f'{base}/schema.yaml',
    'features': f'{base}/features.yaml',
    'stats': f'{base}/stats.json',
  }


def generate(directory, rows_count, shards=8, seed=0, log=sys.stderr):
  """Writes the dataset once (a `complete` marker says it is whole).

  Returns:
    `paths(directory, rows_count, shards)`.
  """
  import tensorflow as tf

  files = paths(directory, rows_count, shards)
  check_encoding()
  base = os.path.dirname(files['schema'])
  marker = os.path.join(base, 'complete')
  if os.path.exists(marker):
    return files
  os.makedirs(base, exist_ok=True)
  per_shard = -(-rows_count // shards)
  total = np.zeros(len(REALS))
  total_sq = np.zeros(len(REALS))
  for shard in range(shards):
    count = min(per_shard, rows_count - shard * per_shard)
    with (
      tf.io.TFRecordWriter(files['tfrecord'][shard]) as plain,
      tf.io.TFRecordWriter(files['tfrecord-gzip'][shard], 'GZIP') as gz,
      open(files['csv'][shard], 'w') as csv,
    ):
      for start in range(0, count, _CHUNK):
        reals, ids, labels = rows(
          min(_CHUNK, count - start), seed=(seed, shard, start)
        )
        total += reals.sum(axis=0)
        total_sq += np.square(reals.astype(np.float64)).sum(axis=0)
        for record in _examples(reals, ids, labels):
          plain.write(record)
          gz.write(record)
        csv.writelines(_csv_lines(reals, ids, labels))
    print(f'wrote shard {shard + 1}/{shards}', file=log)
  mean = total / rows_count
  std = np.sqrt(np.maximum(total_sq / rows_count - mean**2, 1e-12))
  with open(files['stats'], 'w') as f:
    json.dump(
      {
        'rows': rows_count,
        'mean': mean.tolist(),
        'std': std.tolist(),
        'vocabularies': VOCABULARIES,
      },
      f,
    )
  with open(files['schema'], 'w') as f:
    f.write(
      'fields:\n- name: label\n  type: integer\n'
      + ''.join(f'- name: {r}\n  type: real\n' for r in REALS)
      + ''.join(f'- name: {c}\n  type: discrete\n' for c in CATEGORICALS)
    )
  with open(files['features'], 'w') as f:
    f.write(
      'features:\n- name: label\n  type: target\n'
      + ''.join(f'- name: {r}\n  type: zscore\n' for r in REALS)
      + ''.join(
        f'- name: {c}\n  type: hash\n  buckets: {VOCABULARIES[c]}\n'
        for c in CATEGORICALS
      )
    )
  open(marker, 'w').close()
  return files


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', type=int, default=1000000)
  parser.add_argument('--shards', type=int, default=8)
  parser.add_argument('--output', required=True)
  args = parser.parse_args(argv)
  print(json.dumps(generate(args.output, args.rows, args.shards), indent=2))


if __name__ == '__main__':
  main()
