r"""Gematria's sequence model of basic-block throughput, trained by tensorfx.

Reads TFRecord files of Gematria's `BasicBlockWithThroughputProto` (see
`generate.py`, `proto/`), one example per inverse throughput of a block,
and trains a hierarchical LSTM as Gematria's `run_sequence_model` does: an
embedding per token (from `--gematria_tokens_file`), an LSTM over each
instruction's tokens, an LSTM over the block's instructions, a dense output.
Several `--gematria_throughput_source_filter` (with `--gematria_task_names`)
train one output per task, as Gematria's multi-task models: each block is
one example whose targets are the throughputs of the sources matching each
filter (see `tasks_of`). Gematria's command line runs it unchanged
(README.md):

  python trainer.py --gematria_action=train \
      --gematria_tokens_file data/tokens.txt \
      --gematria_input_file data/blocks.tfrecord \
      --gematria_throughput_source_filter="ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL" \
      --gematria_training_num_epochs=0 --gematria_learning_rate=0.01 \
      --gematria_loss_type=MEAN_ABSOLUTE_ERROR \
      --gematria_loss_normalization=PERCENTAGE_ERROR \
      --gematria_max_blocks_in_batch=100 --gematria_checkpoint_dir=/tmp/hlstm_model
"""

import functools
import os
import sys

# tensorfx before TensorFlow: importing it first keeps TensorFlow's start-up
# lines out of the output.
import tensorfx as tfx  # noqa: I001

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# After the path set-up above: the sample's own proto module.
import gematria_protos as protos  # noqa: E402
from model_flags import SequenceModelArguments  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

# A canonicalized operand's tokens, as Gematria's token models read them.
_OPERAND = [
  'register_name',
  'immediate_value=_IMMEDIATE_',
  'fp_immediate_value=_IMMEDIATE_',
  'address=_ADDRESS_',
  'address.base_register',
  'memory=_MEMORY_',
]
_INSTRUCTION = {
  'each': 'basic_block.canonicalized_instructions',
  'values': [
    'mnemonic',
    'prefixes',
    {'each': 'output_operands', 'values': _OPERAND},
    {'each': 'input_operands', 'values': _OPERAND},
  ],
}
# Schema field -> path in the message (see tensorfx.data.ProtoFormat).
FIELDS = {
  'tokens': _INSTRUCTION,
  'instruction_tokens': dict(_INSTRUCTION, lengths=True),
  'source': 'inverse_throughputs.source',
  'throughput': {
    'path': 'inverse_throughputs.inverse_throughput_cycles',
    'reduce': 'mean',
  },
}


def add_throughput(serialized, outputs, name):
  """Gematria's inference: the prediction as one more inverse throughput."""
  block = protos.BasicBlockWithThroughputProto.FromString(serialized)
  block.inverse_throughputs.add(
    source=name, inverse_throughput_cycles=[float(outputs['value'])]
  )
  return block.SerializeToString()


BLOCKS = tfx.data.ProtoFormat(
  protos.BasicBlockWithThroughputProto,
  FIELDS,
  examples='inverse_throughputs',
  annotate=add_throughput,
)


def add_task_throughputs(tasks, serialized, outputs, name):
  """Gematria's multi-task inference: one more inverse throughput per task."""
  block = protos.BasicBlockWithThroughputProto.FromString(serialized)
  for task in tasks:
    block.inverse_throughputs.add(
      source=f'{name}, task={task}',
      inverse_throughput_cycles=[float(outputs[f'value_{task}'])],
    )
  return block.SerializeToString()


def tasks_of(args):
  """`(task name, target field, source regex)` of each task; [] for one.

  `--task-sources` (Gematria's several source filters) makes one target
  per task, `throughput_N`: the mean of the first inverse throughput whose
  source matches the task's filter at its start, missing (NaN) when none
  does; a missing target is left out of its task's loss and metrics.
  """
  sources = list(args.task_sources or ())
  if not sources:
    return []
  names = list(args.task_names or ()) or (
    [f'task_{i}' for i in range(1, len(sources) + 1)]
    if len(sources) > 1
    else ['default']
  )
  return [
    (name, f'throughput_{index}', source)
    for index, (name, source) in enumerate(zip(names, sources), start=1)
  ]


def _task_data(args, tasks):
  """The format, schema and features of one example per block, per task."""
  fields = {
    name: spec
    for name, spec in FIELDS.items()
    if name not in ('source', 'throughput')
  }
  for _, field, source in tasks:
    fields[field] = {
      'path': 'inverse_throughputs.inverse_throughput_cycles',
      'where': 'inverse_throughputs.source',
      'match': source,
      'reduce': 'mean',
    }
  blocks = tfx.data.ProtoFormat(
    protos.BasicBlockWithThroughputProto,
    fields,
    annotate=functools.partial(
      add_task_throughputs, [name for name, _, _ in tasks]
    ),
  )
  schema = tfx.data.Schema.load(args.data_schema)
  schema = tfx.data.Schema(
    [f for f in schema if f.name not in ('source', 'throughput')]
    + [
      tfx.data.SchemaField.real(
        field,
        default=float('nan'),
        description=f'task {name}: the mean inverse throughput of the '
        f'first source matching {source!r}',
      )
      for name, field, source in tasks
    ]
  )
  features = tfx.data.FeatureSet.load(args.data_features)
  features = tfx.data.FeatureSet(
    [f for f in features if f.name != 'throughput']
    + [tfx.data.Feature.target(field, field) for _, field, _ in tasks]
  )
  return blocks, schema, features


class SequenceModel(tfx.training.ModelBuilder):
  """Tokens -> per-instruction LSTM -> per-block LSTM -> decoder -> cycles.

  Gematria's hierarchical LSTM: a token embedding; an LSTM over each
  instruction's tokens, whose last output and state make the instruction's
  embedding; an LSTM over the block's instructions (both ways with
  `--bidirectional`), whose last output and state make the block's; then
  shared dense ReLU layers (`--output-layers`) and per task more
  (`--task-output-layers`) and one linear output. With `--seq2seq` the
  decoder reads each instruction's output of the block LSTM instead and
  the block's prediction is the sum of the instructions' deltas.

  Outputs `value`, the predicted inverse throughput; evaluation reports
  `mape` (Gematria's figure of merit), `mae`, and the percentiles of the
  absolute and relative errors (`abs_error_p90`, `rel_error_p90`, ...) of
  `--percentile-ranks` (Gematria's `--gematria_collected_percentile_ranks`).
  With several tasks (`tasks_of`), one output `value_TASK` per task, the
  tasks' losses summed, and each metric per task too (`mape_TASK`, ...).
  """

  evaluation_metric = ('mape', 'min')

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    self._layers = None
    self.tasks = tuple((name, field) for name, field, _ in tasks_of(args))

  def _build_layers(self):
    args = self.args
    tokens = self.dataset.transformed_features['tokens']
    block_lstm = tf_keras.layers.LSTM(
      args.block_embedding_size // 2,
      return_sequences=args.seq2seq,
      return_state=not args.seq2seq,
      name='instruction_lstm',
    )
    if args.bidirectional:
      block_lstm = tf_keras.layers.Bidirectional(block_lstm)
    heads = []
    for name in [name for name, _ in self.tasks] or ['value']:
      head = tf_keras.Sequential(name=f'head_{name}')
      for size in args.task_output_layers:
        head.add(tf_keras.layers.Dense(size, activation='relu'))
      head.add(tf_keras.layers.Dense(1))
      heads.append(head)
    shared = tf_keras.Sequential(name='output_layers')
    for size in args.output_layers:
      shared.add(tf_keras.layers.Dense(size, activation='relu'))
    self._layers = {
      'embedding': tf_keras.layers.Embedding(
        tokens.cardinality,
        args.token_embedding_size or tokens.embedding_dim,
        mask_zero=False,
        name='token_embedding',
      ),
      'tokens': tf_keras.layers.LSTM(
        args.instruction_embedding_size // 2,
        return_state=True,
        name='token_lstm',
      ),
      'instructions': block_lstm,
      'shared': shared,
      'heads': heads,
    }
    # The vocabulary's out-of-vocabulary bucket (features.yaml's one) is the
    # last id: Gematria's replacement token.
    self._oov_id = tokens.cardinality - 1

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
    flat = ids.flat_values
    if training and self.args.oov_injection_probability > 0:
      # Gematria's out-of-vocabulary injection: the model learns what to
      # do with tokens it has not seen.
      injected = (
        tf.random.uniform(tf.shape(flat)) < self.args.oov_injection_probability
      )
      flat = tf.where(injected, tf.cast(self._oov_id, flat.dtype), flat)
    # [instructions, (tokens)]: the block's tokens split per instruction.
    per_instruction = tf.RaggedTensor.from_row_lengths(
      flat, lengths.flat_values
    )
    padded = per_instruction.to_tensor()
    mask = tf.sequence_mask(per_instruction.row_lengths(), tf.shape(padded)[1])
    _, last, cell = layers['tokens'](
      layers['embedding'](padded), mask=mask, training=training
    )
    instructions = tf.concat([last, cell], axis=1)
    # [blocks, (instructions), embedding]
    blocks = tf.RaggedTensor.from_row_lengths(
      instructions, lengths.row_lengths()
    )
    padded_blocks = blocks.to_tensor()
    block_mask = tf.sequence_mask(
      blocks.row_lengths(), tf.shape(padded_blocks)[1]
    )
    encoded = layers['instructions'](
      padded_blocks, mask=block_mask, training=training
    )
    if self.args.seq2seq:
      # One delta per instruction (the padding's masked out), summed.
      hidden = layers['shared'](encoded)
      deltas = tf.concat([head(hidden) for head in layers['heads']], axis=-1)
      mask = tf.cast(block_mask, deltas.dtype)[:, :, tf.newaxis]
      outputs = tf.reduce_sum(deltas * mask, axis=1)
    else:
      # The last output and cell state (of both directions), concatenated.
      hidden = layers['shared'](tf.concat(encoded[1:], axis=1))
      outputs = tf.concat([head(hidden) for head in layers['heads']], axis=1)
    return outputs if self.tasks else outputs[:, 0]

  def _targets(self, inputs):
    return tf.stack(
      [tf.cast(inputs[field], tf.float32) for _, field in self.tasks], axis=1
    )

  def build_training(self, global_steps, inputs, inferences):
    del global_steps
    if self.tasks:
      return (
        tfx.training.task_loss(
          inferences, self._targets(inputs), self.settings.loss
        ),
        self.optimizer,
      )
    loss = tfx.training.regression_loss(
      inferences, tf.cast(inputs['throughput'], tf.float32), self.settings.loss
    )
    return loss, self.optimizer

  def build_output(self, inferences):
    if self.tasks:
      return {
        f'value_{name}': inferences[:, index]
        for index, (name, _) in enumerate(self.tasks)
      }
    return {'value': inferences}

  def build_evaluation(self, inputs, outputs):
    if self.tasks:
      if not hasattr(self, '_task_metrics'):
        self._task_metrics = tfx.training.TaskMetrics(
          [name for name, _ in self.tasks], self.args.percentile_ranks
        )
      return self._task_metrics.update(
        self._targets(inputs),
        tf.stack([outputs[f'value_{name}'] for name, _ in self.tasks], axis=1),
      )
    if not hasattr(self, '_metrics'):
      self._metrics = [
        tf_keras.metrics.MeanAbsolutePercentageError(name='mape'),
        tf_keras.metrics.MeanAbsoluteError(name='mae'),
        *tfx.training.error_percentiles(self.args.percentile_ranks),
      ]
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
  # Export reads no data at all: the sample's own blocks stand in.
  train = (
    args.data_train
    or args.data_eval
    or [p for p in args.predict_input or () if p != '-']
    or [os.path.join(HERE, 'data', 'blocks.tfrecord')]
  )
  blocks, schema, features = BLOCKS, args.data_schema, args.data_features
  tasks = tasks_of(args)
  if tasks:
    blocks, schema, features = _task_data(args, tasks)
  dataset = tfx.data.ProtoDataSet(
    schema,
    blocks,
    metadata=args.data_metadata,
    features=features,
    train=train,
    eval=args.data_eval,
  )
  # The default vocabulary lies beside this file; --gematria_tokens_file
  # (--data-vocabulary tokens=PATH) replaces it.
  dataset.use_vocabulary_files(
    {'tokens': os.path.join(HERE, 'data', 'tokens.txt')}
  )
  return dataset


def main():
  args, job = SequenceModelArguments.parse(parse_job=True)
  tfx.training.ModelTrainer().train(SequenceModel(args, dataset_of(args)), job)


if __name__ == '__main__':
  main()
