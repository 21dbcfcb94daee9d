"""The iris sample: a feed-forward classifier trained end to end.

Run it from this directory:

  tensorfx train --module trainer --output /tmp/iris \
      --data-train data/train.csv --data-eval data/eval.csv \
      --data-schema schema.yaml --data-features features.yaml \
      --hidden-layers:1 20 --hidden-layers:2 10
"""

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
model = tfx.training.ModelTrainer().train(classification, job)
print(model.predict(['6.3,3.3,6,2.5', '4.4,3,1.3,0.2', '6.1,2.8,4.7,1.2']))
