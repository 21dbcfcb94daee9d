"""Writes data/ in the original tensorfx iris sample's layout.

From tensorfx's own iris data (samples/iris/data), in the original's column
order: CSV files without a header, TFRecord files of tf.Example (a
bytes_list for the species, a float_list per measurement, as the original's
converter wrote them), the original's schema.yaml and its metadata.json
(per-field min/max/mean/std, and the species' entries). Not part of the
original layout; run it from anywhere: python samples/original_iris/generate.py
"""

import csv
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(HERE), 'iris', 'data')
# The original's order; tensorfx's iris sample has sepal first.
COLUMNS = [
  'species',
  'petal_length',
  'petal_width',
  'sepal_length',
  'sepal_width',
]
_SOURCE_COLUMNS = [
  'species',
  'sepal_length',
  'sepal_width',
  'petal_length',
  'petal_width',
]


def read(name):
  with open(os.path.join(SOURCE, name)) as f:
    rows = [dict(zip(_SOURCE_COLUMNS, row)) for row in csv.reader(f) if row]
  return [[row[c] for c in COLUMNS] for row in rows]


def write_csv(rows, path):
  with open(path, 'w', newline='') as f:
    csv.writer(f, lineterminator='\n').writerows(rows)


def write_tfrecord(rows, path):
  import tensorflow as tf  # Only the TFRecord files need it.

  with tf.io.TFRecordWriter(path) as writer:
    for row in rows:
      feature = {
        'species': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[row[0].encode()])
        )
      }
      for name, value in zip(COLUMNS[1:], row[1:]):
        feature[name] = tf.train.Feature(
          float_list=tf.train.FloatList(value=[float(value)])
        )
      writer.write(
        tf.train.Example(
          features=tf.train.Features(feature=feature)
        ).SerializeToString()
      )


def metadata(rows):
  """The original's metadata.json: statistics by field name."""
  result = {'species': {'entries': sorted({r[0] for r in rows})}}
  for index, name in enumerate(COLUMNS[1:], start=1):
    values = [float(r[index]) for r in rows]
    result[name] = {
      'min': min(values),
      'max': max(values),
      'mean': round(statistics.fmean(values), 6),
      'std': round(statistics.pstdev(values), 6),
    }
  return result


def main():
  data = os.path.join(HERE, 'data')
  os.makedirs(data, exist_ok=True)
  train, evaluation = read('train.csv'), read('eval.csv')
  for name, rows in (('train', train), ('eval', evaluation)):
    write_csv(rows, os.path.join(data, f'{name}.csv'))
    write_tfrecord(rows, os.path.join(data, f'{name}.tfrecord'))
  with open(os.path.join(data, 'metadata.json'), 'w') as f:
    json.dump(metadata(train), f, indent=2)
    f.write('\n')
  with open(os.path.join(data, 'schema.yaml'), 'w') as f:
    f.write(
      'fields:\n'
      + ''.join(
        f'- name: {c}\n  type: {"discrete" if c == "species" else "real"}\n'
        for c in COLUMNS
      )
    )


if __name__ == '__main__':
  main()
