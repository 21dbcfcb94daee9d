# The iris classifier over CSV files, written against the original
# tensorfx's last API: parse(parse_job=True) returns the arguments (with
# `output`), the builder is made without the dataset, and the trainer takes
# the builder, the dataset and the output.

import tensorfx as tfx
import tensorfx.models.nn as nn

args = nn.FeedForwardClassificationArguments.parse(parse_job=True)
dataset = tfx.data.CsvDataSet(
  args.data_schema,
  train=args.data_train,
  eval=args.data_eval,
  metadata=args.data_metadata,
  features=args.data_features,
)

classification = nn.FeedForwardClassification(args)

trainer = tfx.training.ModelTrainer()
trainer.train(classification, dataset, args.output)
