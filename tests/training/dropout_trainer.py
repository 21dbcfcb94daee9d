"""The iris classifier with dropout on its input: a step that draws randomness.

Run as `tensorfx train --module dropout_trainer` from this directory
(`test_exact_resume.py`), with the iris sample's data flags.
"""

import tf_keras

import tensorfx as tfx
import tensorfx.models.nn as nn


class DropoutClassification(nn.FeedForwardClassification):
  """`FeedForwardClassification` that drops half its inputs in training."""

  def build_inference(self, inputs, training):
    if not hasattr(self, 'dropout'):
      self.dropout = tf_keras.layers.Dropout(0.5)
    features = dict(inputs, X=self.dropout(inputs['X'], training=training))
    return super().build_inference(features, training)


def builder(argv=None):
  """The builder and job of the command line (`argv`, or sys.argv)."""
  args, job = nn.FeedForwardClassificationArguments.parse(argv, parse_job=True)
  dataset = tfx.data.CsvDataSet(
    args.data_schema,
    train=args.data_train,
    eval=args.data_eval,
    metadata=args.data_metadata,
    features=args.data_features,
  )
  return DropoutClassification(args, dataset), job


if __name__ == '__main__':
  tfx.training.ModelTrainer().train(*builder())
