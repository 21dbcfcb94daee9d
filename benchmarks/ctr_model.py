"""The reference model, trained every way the comparison needs.

The model: each categorical hashed into its vocabulary size and looked up in
a 16-dimensional embedding, concatenated with the z-scored reals, an MLP
256-128-64 and a sigmoid output (binary cross-entropy on the logit), Adam.
`CtrNet` is that model; every variant below trains the same one:

- `tensorfx`: a `ModelBuilder` driven by `ModelTrainer`, reading the
  TFRecords through `ExamplesDataSet` (tf.Transform does the hashing and
  z-scores, per batch, in the input pipeline).
- `keras-naive`: `fit` on a pipeline that parses each record, then batches.
- `keras-tuned`: `fit` on interleave -> batch -> `parse_example` (AUTOTUNE)
  -> prefetch, with `steps_per_execution`.
- `loop`: a hand-written `tf.function` running several steps per call on
  the tuned pipeline.
- `loop-xla`: the same loop with the step compiled by XLA
  (`tf.function(jit_compile=True)`: gradients and Adam's update).
- `loop-cache`: the loop over the tuned pipeline's batches cached in memory
  after the first epoch (`cache().repeat()`).
- `loop-xla-cache`: both.
- `ceiling`: the same step on one cached batch, no input pipeline.

Run as a script it is the start-up probe: `python ctr_model.py tensorfx|
hand-written ...` trains a few steps and reports `step 1` on stderr.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

sys.path.insert(0, HERE)
# Run as a script (the start-up probe), this checkout's tensorfx, not
# whichever one is installed.
sys.path.insert(1, ROOT)
if __name__ == '__main__' and sys.argv[1:2] == ['tensorfx']:
  # The tensorfx probe starts as a tensorfx job does (`tensorfx train`, a
  # trainer module): tensorfx is imported before TensorFlow.
  import tensorfx  # noqa: F401

import ctr_data
import tensorflow as tf
import tf_keras

LEARNING_RATE = 1e-3
STEPS_PER_EXECUTION = 50


class CtrNet(tf_keras.Model):
  """Embeddings of the hashed categoricals + reals -> MLP -> one logit.

  `tables`: None, Keras `Embedding` layers (a `tf.Variable` each, looked up
  by `tf.nn.embedding_lookup`; split over parameter servers by the
  strategy's partitioner); `'hand-exact'`, exact keys by hand
  (`exact_tables.ExactEmbeddings`: `tf.lookup` tables beside the split
  variables); `'hashed'` or `'exact'`, a tensorfx `EmbeddingTable` each
  (`hashing='mod'` or `'exact'`), trained by the builder's sparse
  optimizer.
  """

  def __init__(self, tables=None):
    super().__init__(name='ctr')
    if tables is None:
      self.embeddings = [
        tf_keras.layers.Embedding(
          ctr_data.VOCABULARIES[c],
          ctr_data.EMBEDDING_DIM,
          name=f'{c}_embedding',
        )
        for c in ctr_data.CATEGORICALS
      ]
    elif tables == 'hand-exact':
      import exact_tables

      # One layer for all the tables: a lock a server, not one a table.
      self.embeddings = [
        exact_tables.ExactEmbeddings(
          [ctr_data.VOCABULARIES[c] for c in ctr_data.CATEGORICALS],
          ctr_data.EMBEDDING_DIM,
        )
      ]
    else:
      from tensorfx import embeddings

      self.embeddings = [
        embeddings.EmbeddingTable(
          c,
          dim=ctr_data.EMBEDDING_DIM,
          capacity=int(ctr_data.VOCABULARIES[c]),
          hashing='mod' if tables == 'hashed' else 'exact',
        )
        for c in ctr_data.CATEGORICALS
      ]
    self._tables = tables
    self.hidden = [
      tf_keras.layers.Dense(units, activation='relu')
      for units in (256, 128, 64)
    ]
    self.logit = tf_keras.layers.Dense(1)

  def call(self, inputs, training=False):
    if self._tables is None:
      columns = [
        layer(inputs[c])
        for layer, c in zip(self.embeddings, ctr_data.CATEGORICALS)
      ]
    elif self._tables == 'hand-exact':
      columns = list(
        self.embeddings[0](
          [inputs[c] for c in ctr_data.CATEGORICALS], training=training
        )
      )
    else:
      from tensorfx import embeddings

      # All 26 tables in one step's lookup: exact keys send each parameter
      # server one call, as the hand-written reference does.
      columns = embeddings.lookup_tables(
        [
          (table, tf.cast(inputs[c], tf.int64))
          for table, c in zip(self.embeddings, ctr_data.CATEGORICALS)
        ],
        training=training,
      )
    columns.append(tf.stack([inputs[r] for r in ctr_data.REALS], axis=1))
    x = tf.concat(columns, axis=1)
    for layer in self.hidden:
      x = layer(x)
    return self.logit(x)


def loss_of(labels, logits):
  labels = tf.cast(tf.reshape(labels, [-1, 1]), tf.float32)
  return tf.reduce_mean(
    tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
  )


# Hand-written pipelines.


def _raw_spec():
  spec = {'label': tf.io.FixedLenFeature([], tf.int64)}
  spec.update(
    {r: tf.io.FixedLenFeature([], tf.float32) for r in ctr_data.REALS}
  )
  spec.update(
    {c: tf.io.FixedLenFeature([], tf.string) for c in ctr_data.CATEGORICALS}
  )
  return spec


def _preprocess(stats):
  """Raw parsed features -> (model inputs, label): what the transform does."""
  mean = dict(zip(ctr_data.REALS, stats['mean']))
  std = dict(zip(ctr_data.REALS, stats['std']))

  def preprocess(raw):
    inputs = {r: (raw[r] - mean[r]) / std[r] for r in ctr_data.REALS}
    for c in ctr_data.CATEGORICALS:
      inputs[c] = tf.strings.to_hash_bucket_fast(
        raw[c], ctr_data.VOCABULARIES[c]
      )
    return inputs, raw['label']

  return preprocess


def cached_pipeline(files, batch, stats, compression=''):
  """The tuned pipeline's batches, read once, then replayed from memory."""
  ds = tuned_pipeline(files, batch, stats, compression, repeat=False)
  return ds.cache().repeat().prefetch(tf.data.AUTOTUNE)


def naive_pipeline(files, batch, stats, compression=''):
  """Parse each record, then batch: what a first attempt looks like."""
  spec = _raw_spec()
  preprocess = _preprocess(stats)
  ds = tf.data.TFRecordDataset(files, compression)
  ds = ds.map(
    lambda record: preprocess(tf.io.parse_single_example(record, spec))
  )
  return ds.batch(batch).repeat()


def tuned_pipeline(
  files, batch, stats, compression='', repeat=True, preprocess=True
):
  """Interleave, batch, vectorized parse (AUTOTUNE), prefetch."""
  spec = _raw_spec()
  transform = _preprocess(stats)
  ds = tf.data.Dataset.from_tensor_slices(files)
  ds = ds.interleave(
    lambda f: tf.data.TFRecordDataset(f, compression),
    cycle_length=min(len(files), 16),
    num_parallel_calls=tf.data.AUTOTUNE,
    deterministic=True,
  )
  if repeat:
    ds = ds.repeat()
  ds = ds.batch(batch, drop_remainder=repeat)

  def parse(records):
    features = tf.io.parse_example(records, spec)
    return transform(features) if preprocess else features

  ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return ds.prefetch(tf.data.AUTOTUNE)


class _Timer(tf_keras.callbacks.Callback):
  """Times `fit` from the end of the warm-up batches to the end."""

  def __init__(self, warmup):
    super().__init__()
    self.warmup = warmup
    self.start = None
    self.start_batch = None
    self.last_batch = None
    self.end = None

  def on_train_batch_end(self, batch, logs=None):
    # With steps_per_execution, `batch` is the last step of an execution.
    if self.start is None and batch + 1 >= self.warmup:
      self.start, self.start_batch = time.perf_counter(), batch + 1
    self.last_batch = batch + 1
    self.end = time.perf_counter()

  def rate(self, batch):
    return (
      (self.last_batch - self.start_batch) * batch / (self.end - self.start)
    )


def keras_fit(dataset, batch, warmup, steps, steps_per_execution=1):
  """examples/s of `fit` after `warmup` steps."""
  model = CtrNet()
  model.compile(
    optimizer=tf_keras.optimizers.Adam(LEARNING_RATE),
    loss=tf_keras.losses.BinaryCrossentropy(from_logits=True),
    steps_per_execution=steps_per_execution,
  )
  timer = _Timer(warmup)
  model.fit(
    dataset,
    epochs=1,
    steps_per_epoch=warmup + steps,
    verbose=0,
    callbacks=[timer],
  )
  return timer.rate(batch)


def _train_step(model, optimizer):
  def step(inputs, labels):
    with tf.GradientTape() as tape:
      loss = loss_of(labels, model(inputs))
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss

  return step


def hand_step():
  """A fresh `CtrNet` and Adam: `step(inputs, labels) -> loss`."""
  return _train_step(CtrNet(), tf_keras.optimizers.Adam(LEARNING_RATE))


def loop_runner(dataset, jit_compile=False):
  """`run(count)`: the hand-written `tf.function` loop, `count` steps a call.

  With `jit_compile`, the step (forward, gradients, Adam's update) is a
  `tf.function(jit_compile=True)` called by the loop: what a user adds to
  get XLA.
  """
  model = CtrNet()
  optimizer = tf_keras.optimizers.Adam(LEARNING_RATE)
  step = _train_step(model, optimizer)
  if jit_compile:
    # Variables first (an XLA function cannot create them).
    inputs, labels = next(iter(dataset.take(1)))
    model(inputs)
    optimizer.build(model.trainable_variables)
    step = tf.function(step, jit_compile=True)

  @tf.function
  def loop(iterator, count):
    loss = tf.constant(0.0)
    for _ in tf.range(count):
      inputs, labels = next(iterator)
      loss = step(inputs, labels)
    return loss

  iterator = iter(dataset)
  return lambda count: loop(iterator, tf.constant(count)).numpy()


def function_loop(
  dataset, batch, warmup, steps, per_call=STEPS_PER_EXECUTION, jit_compile=False
):
  """examples/s of a hand-written tf.function loop, `per_call` steps a call.

  The loop is `loop_runner`'s (with or without XLA).
  """
  run = loop_runner(dataset, jit_compile)
  run(warmup)
  start = time.perf_counter()
  done = 0
  while done < steps:
    count = min(per_call, steps - done)
    run(count)
    done += count
  return steps * batch / (time.perf_counter() - start)


def compute_ceiling(
  dataset, batch, warmup, steps, per_call=STEPS_PER_EXECUTION
):
  """examples/s of the same step on one cached batch: no input pipeline."""
  model = CtrNet()
  optimizer = tf_keras.optimizers.Adam(LEARNING_RATE)
  step = _train_step(model, optimizer)
  inputs, labels = next(iter(dataset))

  @tf.function
  def loop(count):
    loss = tf.constant(0.0)
    for _ in tf.range(count):
      loss = step(inputs, labels)
    return loss

  loop(tf.constant(warmup)).numpy()
  start = time.perf_counter()
  done = 0
  while done < steps:
    count = min(per_call, steps - done)
    loop(tf.constant(count)).numpy()
    done += count
  return steps * batch / (time.perf_counter() - start)


# tensorfx.


def tensorfx_builder_type(tables=None):
  """The `ModelBuilder` of the reference model (tensorfx imported late).

  `tables`: as `CtrNet`'s (None: Keras `Embedding` layers).
  """
  from tensorfx import training

  class CtrBuilder(training.ModelBuilder):
    """CtrNet as a ModelBuilder: the transform graph feeds it."""

    evaluation_metric = ('auc', 'max')

    def build_inference(self, inputs, training):
      if not hasattr(self, 'net'):
        self.net = CtrNet(tables)
      return self.net(inputs, training=training)

    def build_training(self, global_steps, inputs, inferences):
      del global_steps
      return loss_of(inputs['label'], inferences), self.optimizer

    def build_output(self, inferences):
      return {'probability': tf.sigmoid(inferences[:, 0])}

    def build_evaluation(self, inputs, outputs):
      if not hasattr(self, 'auc'):
        self.auc = tf_keras.metrics.AUC(name='auc')
      self.auc.update_state(inputs['label'], outputs['probability'])
      return {'auc': self.auc}

  return CtrBuilder


def tensorfx_dataset(files, analysis, compression='auto', train=None):
  from tensorfx import data

  return data.ExamplesDataSet(
    files['schema'],
    metadata=analysis,
    features=files['features'],
    compression=compression,
    train=train or files['tfrecord'],
  )


def tensorfx_train(
  files, analysis, output, batch, steps, log_every, extra=(), train=None
):
  """Trains with ModelTrainer; returns the trained `prediction.Model`.

  `train` (default: every TFRecord shard) are the training files; `extra`
  more flags (`--jit-compile`, `--cache none`, ...).
  """
  from tensorfx import training

  args, job = training.ModelArguments.parse(
    [
      '--output',
      output,
      '--batch-size',
      str(batch),
      '--max-steps',
      str(steps),
      '--log-interval-steps',
      str(log_every),
      '--checkpoint-interval-secs',
      '100000',
      # The hand-written pipelines read in order: so does this one.
      '--no-shuffle',
      *extra,
    ],
    parse_job=True,
  )
  builder = tensorfx_builder_type()(
    args, tensorfx_dataset(files, analysis, train=train)
  )
  return training.ModelTrainer().train(builder, job)


def analyze(files, output):
  """The tf.Transform analysis (z-score statistics) of the first shard."""
  from tensorfx import data

  marker = os.path.join(output, 'metadata.json')
  if not os.path.exists(marker):
    dataset = data.ExamplesDataSet(
      files['schema'], features=files['features'], train=files['tfrecord'][:1]
    )
    dataset.analyze(output)
  return output


# The start-up probe.


def _probe(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('kind', choices=['tensorfx', 'hand-written'])
  parser.add_argument('--data', required=True)
  parser.add_argument('--rows', type=int, required=True)
  parser.add_argument('--shards', type=int, required=True)
  parser.add_argument('--analysis', required=True)
  parser.add_argument('--output', required=True)
  parser.add_argument('--batch', type=int, default=1024)
  args = parser.parse_args(argv)
  files = ctr_data.paths(args.data, args.rows, args.shards)
  if args.kind == 'tensorfx':
    tensorfx_train(files, args.analysis, args.output, args.batch, 2, 1)
    return 0
  with open(files['stats']) as f:
    stats = json.load(f)
  dataset = tuned_pipeline(files['tfrecord'], args.batch, stats)
  model = CtrNet()
  step = tf.function(
    _train_step(model, tf_keras.optimizers.Adam(LEARNING_RATE))
  )
  for number, (inputs, labels) in enumerate(dataset.take(2), start=1):
    loss = float(step(inputs, labels))
    print(f'step {number}  loss {loss:.4f}', file=sys.stderr, flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(_probe(sys.argv[1:]))
