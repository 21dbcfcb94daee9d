r"""The recommendation sample: click-through from raw user and item ids.

Each raw id goes through an embedding table (`features.yaml`: `capacity`
rows, admission after 2 sightings, eviction after 20,000 idle steps); the
history shares the item table (mean of its items' vectors). The vectors feed
a feed-forward network that predicts the click. The tables train with the
sparse optimizer (`--embedding-optimizer`, lazy Adam by default), the dense
layers with `--optimizer`. Evaluation reports the AUC (and ranks models by
it). Run it from this directory (see README.md):

  tensorfx train --module trainer --output /tmp/recommend \
      --data-train 'data/train-*.tfrecord.gz' --data-eval data/eval.tfrecord.gz \
      --data-schema schema.yaml --data-features features.yaml \
      --hidden-layers:1 64 --hidden-layers:2 32
"""

import tensorflow as tf
import tf_keras

import tensorfx as tfx
import tensorfx.models.nn as nn


class RecommenderArguments(
  nn.FeedForwardClassificationArguments, tfx.embeddings.EmbeddingArguments
):
  """Feed-forward flags plus `--embedding-optimizer`/`-learning-rate`."""


class Recommender(nn.FeedForwardClassification):
  """A click model over embedding tables, evaluated by AUC."""

  evaluation_metric = ('auc', 'max')
  positive = 'yes'

  def build_evaluation(self, inputs, outputs):
    metrics = dict(super().build_evaluation(inputs, outputs))
    if not hasattr(self, '_auc'):
      self._auc = tf_keras.metrics.AUC(name='auc', num_thresholds=1000)
    positive = self.labels.index(self.positive)
    labels = inputs[self.target.name]
    self._auc.update_state(
      tf.equal(labels, positive),
      outputs['scores'][:, positive],
      sample_weight=tf.cast(labels >= 0, tf.float32),
    )
    metrics['auc'] = self._auc
    return metrics


def main():
  args, job = RecommenderArguments.parse(parse_job=True)
  dataset = tfx.data.ExamplesDataSet(
    args.data_schema,
    train=args.data_train,
    eval=args.data_eval,
    metadata=args.data_metadata,
    features=args.data_features,
  )
  tfx.training.ModelTrainer().train(Recommender(args, dataset), job)


if __name__ == '__main__':
  main()
