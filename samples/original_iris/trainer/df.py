# A standalone client of the original tensorfx's last API: data in pandas
# DataFrames, the feature set and the arguments defined in code, training
# in this process, then predictions. Run from samples/original_iris:
#   python -m trainer.df [OUTPUT]

import json
import os
import sys
import tempfile

import pandas as pd

import tensorfx as tfx
import tensorfx.models.nn as nn

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = [
  'species',
  'petal_length',
  'petal_width',
  'sepal_length',
  'sepal_width',
]


def create_dataset():
  """The DataSet, built in code."""
  df_train = pd.read_csv(os.path.join(HERE, 'data', 'train.csv'), names=COLUMNS)
  df_eval = pd.read_csv(os.path.join(HERE, 'data', 'eval.csv'), names=COLUMNS)
  # A category column is a discrete field of the inferred schema.
  df_train['species'] = df_train['species'].astype('category')
  df_eval['species'] = df_eval['species'].astype('category')

  # The equivalent of features.yaml, in code. Names inside a concat may
  # repeat, as they did in the original's sample ('sl' twice).
  features = [
    tfx.data.Feature.concatenate(
      'X',
      tfx.data.Feature.scale('pl', 'petal_length'),
      tfx.data.Feature.scale('pw', 'petal_width'),
      tfx.data.Feature.scale('sl', 'sepal_length'),
      tfx.data.Feature.scale('sl', 'sepal_width'),
    ),
    tfx.data.Feature.target('Y', 'species'),
  ]
  return tfx.data.DataFrameDataSet(
    features=tfx.data.FeatureSet.create(features), train=df_train, eval=df_eval
  )


def create_args(max_steps=2000):
  """The arguments, from the defaults, set in code."""
  args = nn.FeedForwardClassificationArguments.default()
  args.batch_size = 5
  args.max_steps = max_steps
  args.checkpoint_interval_secs = 1
  args.hidden_layers = [('l1', 20, 'relu'), ('l2', 10, 'relu')]
  return args


def main(output=None, max_steps=2000):
  """Trains, then predicts three instances; returns the predictions."""
  args = create_args(max_steps)
  dataset = create_dataset()
  classification = nn.FeedForwardClassification(args)
  trainer = tfx.training.ModelTrainer()
  output = output or tempfile.mkdtemp(prefix='iris-df-')
  print('Training...')
  model = trainer.train(classification, dataset, output=output)

  print('Predicting...')
  instances = [
    '6.0,2.5,6.3,3.3',  # virginica
    '1.3,0.2,4.4,3.0',  # setosa
    '4.7,1.2,6.1,2.8',  # versicolor
  ]
  predictions = model.predict(instances)
  for instance, prediction in zip(instances, predictions):
    print(f'{instance} -> {json.dumps(prediction, indent=2)}')
  return predictions


if __name__ == '__main__':
  main(sys.argv[1] if len(sys.argv) > 1 else None)
