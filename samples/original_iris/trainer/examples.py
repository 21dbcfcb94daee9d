# The iris classifier over TFRecord files of tf.Example, written against the
# original tensorfx's last API (see csv.py).

import tensorfx as tfx
import tensorfx.models.nn as nn

args = nn.FeedForwardClassificationArguments.parse(parse_job=True)
dataset = tfx.data.ExamplesDataSet(
  args.data_schema,
  train=args.data_train,
  eval=args.data_eval,
  metadata=args.data_metadata,
  features=args.data_features,
)

classification = nn.FeedForwardClassification(args)

trainer = tfx.training.ModelTrainer()
trainer.train(classification, dataset, args.output)
