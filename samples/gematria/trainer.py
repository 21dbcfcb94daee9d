r"""Gematria's sequence model of basic-block throughput, trained by tensorfx.

Reads TFRecord files of Gematria's `BasicBlockWithThroughputProto` (see
`generate.py`, `proto/`), one example per inverse throughput of a block,
and trains a hierarchical LSTM as Gematria's `run_sequence_model` does: an
embedding per token (from `--gematria_tokens_file`), an LSTM over each
instruction's tokens, an LSTM over the block's instructions, a dense output.
Gematria's command line runs it unchanged (README.md):

  python trainer.py --gematria_action=train \
      --gematria_tokens_file data/tokens.txt \
      --gematria_input_file data/blocks.tfrecord \
      --gematria_throughput_source_filter="ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL" \
      --gematria_training_num_epochs=0 --gematria_learning_rate=0.01 \
      --gematria_loss_type=MEAN_ABSOLUTE_ERROR \
      --gematria_loss_normalization=PERCENTAGE_ERROR \
      --gematria_max_blocks_in_batch=100 --gematria_checkpoint_dir=/tmp/hlstm_model
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# After the path set-up above: the sample's own proto module.
import gematria_protos as protos  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

import tensorfx as tfx  # noqa: E402

# A canonicalized operand's tokens, as Gematria's token models read them.
_OPERAND = ['register_name', 'immediate_value=_IMMEDIATE_',
            'fp_immediate_value=_IMMEDIATE_', 'address=_ADDRESS_',
            'address.base_register', 'memory=_MEMORY_']
_INSTRUCTION = {'each': 'basic_block.canonicalized_instructions',
                'values': ['mnemonic', 'prefixes',
                           {'each': 'output_operands', 'values': _OPERAND},
                           {'each': 'input_operands', 'values': _OPERAND}]}
# Schema field -> path in the message (see tensorfx.data.ProtoFormat).
FIELDS = {
    'tokens': _INSTRUCTION,
    'instruction_tokens': dict(_INSTRUCTION, lengths=True),
    'source': 'inverse_throughputs.source',
    'throughput': {'path': 'inverse_throughputs.inverse_throughput_cycles',
                   'reduce': 'mean'},
}


def add_throughput(serialized, outputs, name):
  """Gematria's inference: the prediction as one more inverse throughput."""
  block = protos.BasicBlockWithThroughputProto.FromString(serialized)
  block.inverse_throughputs.add(
      source=name, inverse_throughput_cycles=[float(outputs['value'])])
  return block.SerializeToString()


BLOCKS = tfx.data.ProtoFormat(protos.BasicBlockWithThroughputProto, FIELDS,
                              examples='inverse_throughputs',
                              annotate=add_throughput)


class SequenceModelArguments(tfx.training.ModelArguments):
  """Gematria's hierarchical LSTM sequence model of basic-block throughput."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    parser.add_argument('--token-lstm-units', type=int, default=32)
    parser.add_argument('--instruction-lstm-units', type=int, default=32)
    parser.set_defaults(data_schema=os.path.join(HERE, 'schema.yaml'),
                        data_features=os.path.join(HERE, 'features.yaml'),
                        predict_source='hierarchical-lstm',
                        # Gematria's --gematria_collected_percentile_ranks.
                        percentile_ranks=[50, 90, 95, 99])
    return parser


class SequenceModel(tfx.training.ModelBuilder):
  """Tokens -> per-instruction LSTM -> per-block LSTM -> cycles.

  Outputs `value`, the predicted inverse throughput; evaluation reports
  `mape` (Gematria's figure of merit), `mae`, and the percentiles of the
  absolute and relative errors (`abs_error_p90`, `rel_error_p90`, ...) of
  `--percentile-ranks` (Gematria's `--gematria_collected_percentile_ranks`).
  """

  evaluation_metric = ('mape', 'min')

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    self._layers = None

  def _build_layers(self):
    tokens = self.dataset.transformed_features['tokens']
    self._layers = {
        'embedding': tf_keras.layers.Embedding(
            tokens.cardinality, tokens.embedding_dim, mask_zero=False,
            name='token_embedding'),
        'tokens': tf_keras.layers.LSTM(self.args.token_lstm_units,
                                       name='token_lstm'),
        'instructions': tf_keras.layers.LSTM(self.args.instruction_lstm_units,
                                             name='instruction_lstm'),
        'output': tf_keras.layers.Dense(1, name='output'),
    }

  def build_inference(self, inputs, training):
    if self._layers is None:
      self._build_layers()
    layers = self._layers
    tokens, lengths = inputs['tokens'], inputs['instruction_tokens']
    if isinstance(tokens, tf.SparseTensor):
      ids = tf.RaggedTensor.from_sparse(tokens)
      lengths = tf.cast(tf.RaggedTensor.from_sparse(lengths), tf.int64)
    else:
      # The first call (it creates the variables) passes a dense zero for
      # each feature: one instruction of one token.
      ids = tf.RaggedTensor.from_tensor(tokens)
      lengths = tf.RaggedTensor.from_tensor(tf.ones_like(tokens))
    # [instructions, (tokens)]: the block's tokens split per instruction.
    per_instruction = tf.RaggedTensor.from_row_lengths(
        ids.flat_values, lengths.flat_values)
    padded = per_instruction.to_tensor()
    mask = tf.sequence_mask(per_instruction.row_lengths(),
                            tf.shape(padded)[1])
    encoded = layers['tokens'](layers['embedding'](padded), mask=mask,
                               training=training)
    # [blocks, (instructions), units]
    blocks = tf.RaggedTensor.from_row_lengths(encoded, lengths.row_lengths())
    padded_blocks = blocks.to_tensor()
    block_mask = tf.sequence_mask(blocks.row_lengths(),
                                  tf.shape(padded_blocks)[1])
    state = layers['instructions'](padded_blocks, mask=block_mask,
                                   training=training)
    return layers['output'](state)[:, 0]

  def build_training(self, global_steps, inputs, inferences):
    del global_steps
    loss = tfx.training.regression_loss(
        inferences, tf.cast(inputs['throughput'], tf.float32),
        self.settings.loss)
    return loss, self.optimizer

  def build_output(self, inferences):
    return {'value': inferences}

  def build_evaluation(self, inputs, outputs):
    if not hasattr(self, '_metrics'):
      self._metrics = [
          tf_keras.metrics.MeanAbsolutePercentageError(name='mape'),
          tf_keras.metrics.MeanAbsoluteError(name='mae'),
          *tfx.training.error_percentiles(self.args.percentile_ranks)]
    target = tf.cast(inputs['throughput'], tf.float32)[:, tf.newaxis]
    value = outputs['value'][:, tf.newaxis]
    for metric in self._metrics:
      metric.update_state(target, value)
    return {metric.name: metric for metric in self._metrics}


def dataset_of(args):
  """The ProtoDataSet of the job's files, tokens from data/tokens.txt."""
  # Gematria's eval and predict actions name only the files they read;
  # tensorfx builds every action's graphs from the training source, so
  # those files stand in for it (the analysis is the training job's).
  train = args.data_train or args.data_eval or [
      p for p in args.predict_input or () if p != '-']
  dataset = tfx.data.ProtoDataSet(
      args.data_schema, BLOCKS, metadata=args.data_metadata,
      features=args.data_features, train=train or None,
      eval=args.data_eval)
  # The default vocabulary lies beside this file; --gematria_tokens_file
  # (--data-vocabulary tokens=PATH) replaces it.
  dataset.use_vocabulary_files({'tokens': os.path.join(HERE, 'data',
                                                       'tokens.txt')})
  return dataset


def main():
  args, job = SequenceModelArguments.parse(parse_job=True)
  tfx.training.ModelTrainer().train(SequenceModel(args, dataset_of(args)),
                                    job)


if __name__ == '__main__':
  main()
