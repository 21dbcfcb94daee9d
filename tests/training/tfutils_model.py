"""A small model written as tfutils users write them: plain functions.

The data function takes `batch_size` (and its own arguments) and returns
batches of a dict of inputs; the model function takes `inputs`, `train`
and `seed` (and its own arguments), makes its variables with
`tf.compat.v1.get_variable` in variable scopes, and returns its outputs
and a config to record; target functions take `(inputs, outputs)` and
return dicts of tensors.

The data: three classes of points in 4 dimensions, shaped as tiny 2x2
"images", overlapping (so accuracy is high but not perfect), with
unbalanced classes.
"""

import numpy as np
import tensorflow as tf

_SPLITS = {'train': (0, 600), 'valid': (1, 300), 'test': (2, 200)}
_CENTERS = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], np.float32)


def blobs_arrays(split):
  """The examples of a split, as arrays: images [n, 2, 2], labels [n]."""
  seed, size = _SPLITS[split]
  rng = np.random.default_rng(seed)
  labels = rng.choice(3, size, p=[0.5, 0.3, 0.2])
  points = _CENTERS[labels] + rng.normal(0.0, 0.8, (size, 4))
  return {
    'images': points.astype(np.float32).reshape(-1, 2, 2),
    'labels': labels.astype(np.int64),
  }


def blobs(batch_size, split='train', shuffle=True):
  """tfutils' data function: batches of `split`."""
  data = tf.data.Dataset.from_tensor_slices(blobs_arrays(split))
  if shuffle and split == 'train':
    data = data.shuffle(1000, seed=0)
  return data.batch(batch_size)


def mlp(inputs, train=True, seed=0, hidden=16, activation='relu'):
  """tfutils' model function: a hidden layer, then 3 logits."""
  del train  # No dropout or batch norm here.
  x = tf.reshape(inputs['images'], [-1, 4])
  with tf.compat.v1.variable_scope('hidden'):
    weights = tf.compat.v1.get_variable(
      'weights',
      [4, hidden],
      initializer=tf.compat.v1.glorot_uniform_initializer(seed=seed),
    )
    biases = tf.compat.v1.get_variable(
      'biases', [hidden], initializer=tf.compat.v1.zeros_initializer()
    )
  x = getattr(tf.nn, activation)(tf.matmul(x, weights) + biases)
  with tf.compat.v1.variable_scope('logits'):
    weights = tf.compat.v1.get_variable(
      'weights',
      [hidden, 3],
      initializer=tf.compat.v1.glorot_uniform_initializer(seed=seed + 1),
    )
    biases = tf.compat.v1.get_variable(
      'biases', [3], initializer=tf.compat.v1.zeros_initializer()
    )
  logits = tf.matmul(x, weights) + biases
  return logits, {'hidden': hidden, 'activation': activation}


def _correct(inputs, outputs):
  return tf.cast(
    tf.equal(tf.argmax(outputs, axis=1), inputs['labels']), tf.float32
  )


def train_accuracy(inputs, outputs):
  """An extra training target: the batch's accuracy."""
  return {'train_accuracy': tf.reduce_mean(_correct(inputs, outputs))}


def top1(inputs, outputs):
  """A validation target: accuracy."""
  return {'top1': tf.reduce_mean(_correct(inputs, outputs))}


def confidence(inputs, outputs, classes=3):
  """Another validation target: what the model predicts, not whether right.

  The mean top probability, and how many examples each class is
  predicted for (an array per batch).
  """
  del inputs
  probabilities = tf.nn.softmax(outputs)
  predicted = tf.argmax(probabilities, axis=1)
  return {
    'confidence': tf.reduce_mean(tf.reduce_max(probabilities, axis=1)),
    'predicted': tf.math.bincount(
      tf.cast(predicted, tf.int32), minlength=classes, maxlength=classes
    ),
  }


def count_predictions(aggregate, results, step):
  """tfutils' online_agg_func: (aggregate, new result, step) -> aggregate."""
  del step
  if aggregate is None:
    return {
      'confidence': [results['confidence']],
      'predicted': np.array(results['predicted']),
    }
  aggregate['confidence'].append(results['confidence'])
  aggregate['predicted'] = aggregate['predicted'] + results['predicted']
  return aggregate


def summarize_predictions(aggregate):
  """tfutils' agg_func: the aggregate -> the result recorded."""
  total = aggregate['predicted'].sum()
  return {
    'confidence': float(np.mean(aggregate['confidence'])),
    'predicted_share': (aggregate['predicted'] / total).tolist(),
  }


# What tfutils users took from tfutils.utils and tfutils.defaults, written
# here with the semantics those modules give them.


def append_and_return(aggregate, result, step):
  """tfutils' default online_agg_func: the list of each batch's result."""
  del step
  if aggregate is None:
    aggregate = []
  aggregate.append(result)
  return aggregate


def mean_dict(batches):
  """tfutils' utils.mean_dict: a list of per-batch dicts -> each key's mean.

  NumPy's means, as tfutils returned them (`numpy.float64`).
  """
  means = {}
  for key in batches[0]:
    values = [batch[key] for batch in batches]
    if key == 'validation_step':
      means[key] = [min(values), max(values)]
    else:
      means[key] = np.mean(values)
  return means


def mean_and_reg_loss(loss, which_device, model_prefix=None):
  """tfutils' default loss agg_func: the mean, plus regularization.

  The regularization losses of the variables' copy on device
  `which_device` (none here: TensorFlow 2 collects none).
  """
  del model_prefix
  loss = tf.reduce_mean(loss)
  regularization = [
    r
    for r in tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES
    )
    if f'__var_copy_{which_device}' in r.name
  ]
  if regularization:
    loss += tf.add_n(regularization)
  return loss
