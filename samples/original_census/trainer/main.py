# The census income classifier, written against the original tensorfx API:
# arguments, a CSV dataset described by the schema, features and metadata
# files, a feed-forward classification model and the trainer.

import tensorfx as tfx
import tensorfx.models.nn as nn

args, job = nn.FeedForwardClassificationArguments.parse(parse_job=True)
dataset = tfx.data.CsvDataSet(
  args.data_schema,
  train=args.data_train,
  eval=args.data_eval,
  metadata=args.data_metadata,
  features=args.data_features,
)

classification = nn.FeedForwardClassification(args, dataset)

trainer = tfx.training.ModelTrainer()
trainer.train(classification, job)
