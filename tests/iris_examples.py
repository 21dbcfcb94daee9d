"""Iris rows as tf.Example records, for the prediction tests."""

import os

import tensorflow as tf

from conftest import IRIS

FIELDS = [
  'species',
  'sepal_length',
  'sepal_width',
  'petal_length',
  'petal_width',
]


def eval_rows():
  """The rows of the iris eval data, as lists of strings."""
  with open(os.path.join(IRIS, 'data', 'eval.csv')) as f:
    return [line.strip().split(',') for line in f if line.strip()]


def example(row, **extra):
  """A serialized tf.Example of an iris row, with extra features."""
  features = {
    'species': tf.train.Feature(
      bytes_list=tf.train.BytesList(value=[row[0].encode()])
    )
  }
  for name, value in zip(FIELDS[1:], row[1:]):
    features[name] = tf.train.Feature(
      float_list=tf.train.FloatList(value=[float(value)])
    )
  for name, value in extra.items():
    if isinstance(value, bytes):
      features[name] = tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[value])
      )
    elif isinstance(value, float):
      features[name] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[value])
      )
    else:
      features[name] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=[value])
      )
  return tf.train.Example(
    features=tf.train.Features(feature=features)
  ).SerializeToString()


def write_records(path, records, compression=None):
  with tf.io.TFRecordWriter(str(path), compression) as writer:
    for record in records:
      writer.write(record)


def read_examples(path, compression=None):
  return [
    tf.train.Example.FromString(r.numpy())
    for r in tf.data.TFRecordDataset(str(path), compression)
  ]


def values(feature):
  """The values of a tf.train.Feature, as a list."""
  kind = feature.WhichOneof('kind')
  return list(getattr(feature, kind).value)
