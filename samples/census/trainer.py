"""The census sample: income from categorical and numeric columns.

Reads CSV or GZIP TFRecord files of tf.Example (by their names), trains a
feed-forward classifier over every kind of feature (z-score, bucketize,
scale, log, one-hot, embedding, hash, cross, a key), and prints predictions
for the predict.csv beside the eval data. Run it from this directory (see README.md):

  tensorfx train --module trainer --output /tmp/census \
      --data-train 'data/train-*.tfrecord.gz' --data-eval data/eval.tfrecord.gz \
      --data-schema schema.yaml --data-features features.yaml \
      --data-metadata /tmp/census-analysis --hidden-layers:1 32 \
      --hidden-layers:2 16
"""

import os

import tensorfx as tfx
import tensorfx.models.nn as nn


def is_tfrecord(paths):
  return all(p.endswith(('.tfrecord', '.tfrecord.gz')) for p in paths)


args, job = nn.FeedForwardClassificationArguments.parse(parse_job=True)
DataSet = (
  tfx.data.ExamplesDataSet
  if is_tfrecord(args.data_train)
  else tfx.data.CsvDataSet
)
dataset = DataSet(
  args.data_schema,
  train=args.data_train,
  eval=args.data_eval,
  metadata=args.data_metadata,
  features=args.data_features,
)
classification = nn.FeedForwardClassification(args, dataset)
model = tfx.training.ModelTrainer().train(classification, job)

# Raw CSV lines without the income column, written by generate.py beside
# the eval data: the exported model parses and transforms them itself.
with open(os.path.join(os.path.dirname(args.data_eval[0]), 'predict.csv')) as f:
  print(model.predict([line.strip() for line in f if line.strip()]))
