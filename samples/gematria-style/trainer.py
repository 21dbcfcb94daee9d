"""The Gematria-style sample: inverse throughput of basic blocks, regressed.

Reads TFRecord files of tf.Example (one basic block and one measurement
each), keeps the records of one source with --data-filter, and trains a
feed-forward regression with Gematria's loss flags. The same module serves
`tensorfx evaluate --follow` and `tensorfx predict` (see README.md). Run it
from this directory:

  tensorfx train --module trainer --output /tmp/hsw \
      --data-train data/train.tfrecord.gz --data-schema schema.yaml \
      --data-features features.yaml \
      --data-filter 'source=kind=KIND_MEASURED, uarch=ARCH_HASWELL' \
      --loss MEAN_ABSOLUTE_ERROR --loss-normalization PERCENTAGE_ERROR \
      --batch-size 100 --learning-rate 0.01 --max-steps 0
"""

import tensorfx as tfx
import tensorfx.models.nn as nn

args, job = nn.FeedForwardRegressionArguments.parse(parse_job=True)
dataset = tfx.data.ExamplesDataSet(
  args.data_schema,
  train=args.data_train,
  eval=args.data_eval,
  metadata=args.data_metadata,
  features=args.data_features,
)
regression = nn.FeedForwardRegression(args, dataset)
tfx.training.ModelTrainer().train(regression, job)
