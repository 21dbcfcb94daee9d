"""Sparse optimizers for embedding tables: only the looked-up rows change.

The gradient of a lookup is a `tf.IndexedSlices` holding the rows a step
read. Keras' Adam decays the moments of *every* row each step (a pass over
the whole table); `LazyAdam` reads, updates and writes back the moments of
the step's rows only, so a step costs what its batch touches, whatever the
table's size, and an untouched row's moments stay as they were (zero for a
row never trained). `SparseAdagrad` and `SparseFtrl` do the same for
Adagrad's accumulator and FTRL-proximal's accumulator and linear term.

They are `tf_keras` optimizers: they run under every distribution strategy
(each parameter-server shard of a table gets its slots beside it on the
same server, saved whole so that checkpoints re-shard), take learning-rate
schedules, and clip. A dense gradient (a table read by a dense op, or
all-reduced by synchronous replicas) updates the rows where it is not
zero.
"""

import tensorflow as tf
import tf_keras

from tensorfx._errors import ConfigurationError
from tensorfx.embeddings import _args
from tensorfx.embeddings import _sharding

OPTIMIZERS = _args.OPTIMIZERS


class _SparseOptimizer(tf_keras.optimizers.Optimizer):
  """Applies IndexedSlices gradients row by row; resets rows' slots."""

  def __init__(self, learning_rate, name, **kwargs):
    kwargs.setdefault('jit_compile', False)
    # Keras' base default (0) would apply a zero weight decay to every row,
    # a pass over the whole table each step.
    kwargs.setdefault('weight_decay', None)
    super().__init__(name=name, **kwargs)
    self._learning_rate = self._build_learning_rate(learning_rate)
    # Exact-key tables whose rows' slots their checkpoints hold, by key.
    self._keyed_tables = self._no_dependency([])
    self._keyed_children = self._no_dependency({})

  def build(self, var_list):
    super().build(var_list)
    if getattr(self, '_built', False):
      return
    self._built = True
    for slot, initial in self._slot_specs():
      values = []
      for var in var_list:
        if var.shape[0] is None:
          values.append(self._growing_slot(var, slot, initial))
          continue
        values.append(
          self.add_variable_from_reference(
            var,
            slot,
            initial_value=tf.fill(var.shape, tf.cast(initial, var.dtype))
            if initial
            else None,
          )
        )
      # One list attribute per slot: Keras saves each list's shards of a
      # ShardedVariable as one whole variable.
      setattr(self, f'_{slot}_slots', values)

  def _growing_slot(self, var, slot, initial):
    """The slot of a table with dynamic expansion: it grows with the rows."""
    with tf.init_scope():
      variable = tf.Variable(
        tf.fill(tf.shape(var), tf.cast(initial or 0, var.dtype)),
        shape=tf.TensorShape([None]).concatenate(var.shape[1:]),
        # The name without its ':0' (TensorFlow's `_shared_name`).
        name=f'{slot}/{var.name.partition(":")[0]}',
        dtype=var.dtype,
        trainable=False,
      )
    self._variables.append(variable)
    return variable

  def grow_slots(self, variable, added):
    """Appends `added` rows, at their initial values, to a table's slots.

    `EmbeddingTable` calls it when a table with dynamic expansion grows.

    Returns:
      The slots' updates (for control dependencies).
    """
    if self._var_key(variable) not in getattr(self, '_index_dict', {}):
      return []
    updates = []
    for slot, initial in self._slot_specs():
      values = self._slot(slot, variable)
      shape = tf.concat(
        [tf.reshape(tf.cast(added, tf.int32), [1]), tf.shape(values)[1:]], 0
      )
      updates.append(
        values.assign(
          tf.concat(
            [
              values.read_value(),
              tf.fill(shape, tf.cast(initial, values.dtype)),
            ],
            0,
          )
        )
      )
    return updates

  def _slot(self, slot, variable):
    return getattr(self, f'_{slot}_slots')[
      self._index_dict[self._var_key(variable)]
    ]

  def update_step(self, gradient, variable):
    lr = tf.cast(self.learning_rate, variable.dtype)
    if isinstance(gradient, tf.IndexedSlices):
      # Keras has summed duplicate indices already.
      self._sparse_update(
        gradient.values, tf.cast(gradient.indices, tf.int64), variable, lr
      )
    else:
      # A dense gradient (an all-reduced one, under synchronous replicas)
      # updates the rows where it is not zero: the same rows.
      rows = tf.where(
        tf.reduce_any(
          tf.not_equal(gradient, 0), axis=list(range(1, gradient.shape.rank))
        )
      )[:, 0]
      self._sparse_update(tf.gather(gradient, rows), rows, variable, lr)

  def reset_slots(self, variable, rows):
    """Returns the slots of some rows of a table to their initial values.

    `EmbeddingTable` calls it for the rows it resets (hashed keys) or gives
    to a new key (exact keys).

    Args:
      variable: the table's variable (a `ShardedVariable` or a variable).
      rows: int64 [N] global row numbers.

    Returns:
      The list of the slots' updates (for control dependencies).
    """
    updates = []
    for shard, local in _sharding.split_rows(variable, rows):
      if self._var_key(shard) not in getattr(self, '_index_dict', {}):
        continue  # Not trained by this optimizer.
      for slot, initial in self._slot_specs():
        values = tf.fill(
          tf.stack([tf.size(local, out_type=tf.int64), shard.shape[1]]),
          tf.cast(initial, shard.dtype),
        )
        updates.append(
          self._slot(slot, shard).scatter_update(
            tf.IndexedSlices(values, local)
          )
        )
    return updates

  def slot_shards(self, variable):
    """The slots of a table's variable: `[(name, [slot of each shard])]`.

    Empty when this optimizer has not been built for the variable.

    Example:
      >>> [name for name, _ in LazyAdam().slot_shards(table.embeddings)]
      ['m', 'v']   # once built
    """
    parts = _sharding.shards(variable)
    index = getattr(self, '_index_dict', {})
    if not all(self._var_key(p) in index for p in parts):
      return []
    return [
      (slot, [self._slot(slot, p) for p in parts])
      for slot, _ in self._slot_specs()
    ]

  def save_slots_by_key(self, table):
    """Leaves an exact-key table's slots to the table's checkpoint.

    `EmbeddingTable` calls it when bound to this optimizer: the table saves
    its rows' slots by key, with the rows, so that it can restore them into
    a larger table; this optimizer's own checkpoint leaves them out.
    """
    if all(t is not table for t in self._keyed_tables):
      self._keyed_tables.append(table)

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint' or not self._keyed_tables:
      return children
    left_out = set()
    for table in self._keyed_tables:
      if not table.built:
        continue
      for _, slots in self.slot_shards(table.embeddings):
        for slot in slots:
          left_out.add(id(slot))
          container = getattr(slot, '_sharded_container', None)
          if container is not None and container() is not None:
            left_out.add(id(container()))
    if not left_out:
      return children
    # Checkpoints match objects by identity: the same filtered lists each
    # call, as long as the slots left out are the same.
    key = frozenset(left_out)
    if key not in self._keyed_children:
      kept = {}
      for name, value in children.items():
        if isinstance(value, (list, tuple)):
          kept[name] = tf.__internal__.tracking.wrap(
            [v for v in value if id(v) not in left_out]
          )
        elif id(value) not in left_out:
          kept[name] = value
      self._keyed_children.clear()
      self._keyed_children[key] = kept
    return self._keyed_children[key]

  def _slot_specs(self):
    """(slot name, initial value) pairs, in creation order."""
    raise NotImplementedError

  def _sparse_update(self, grad, rows, variable, lr):
    raise NotImplementedError

  def _base_config(self, **values):
    config = super().get_config()
    config['learning_rate'] = self._serialize_hyperparameter(
      self._learning_rate
    )
    config.update(values)
    return config


class LazyAdam(_SparseOptimizer):
  """Adam that updates the moments and values of the looked-up rows only.

  For the rows `i` of a step's gradient `g` (duplicates summed), with `t`
  the optimizer's update count:
  `m[i] = b1 m[i] + (1 - b1) g`, `v[i] = b2 v[i] + (1 - b2) g^2`,
  `w[i] -= lr sqrt(1 - b2^t) / (1 - b1^t) m[i] / (sqrt(v[i]) + eps)`.
  Other rows, and their moments, are not read or written. Sparse tables
  train about as well as with Adam, at a fraction of the cost per step.

  Example:
    >>> table = EmbeddingTable('items', dim=16, capacity=1 << 20,
    ...                        optimizer=LazyAdam(learning_rate=0.01))

  Args:
    learning_rate: a float or a `LearningRateSchedule`.
    beta_1: as Adam's.
    beta_2: as Adam's.
    epsilon: as Adam's.
    **kwargs: tf_keras optimizer arguments (clipnorm, global_clipnorm, ...).
  """

  def __init__(
    self,
    learning_rate=0.001,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-7,
    name='LazyAdam',
    **kwargs,
  ):
    super().__init__(learning_rate, name, **kwargs)
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon

  def _slot_specs(self):
    return (('m', 0.0), ('v', 0.0))

  def _sparse_update(self, grad, rows, variable, lr):
    m, v = self._slot('m', variable), self._slot('v', variable)
    dtype = variable.dtype
    step = tf.cast(self.iterations + 1, dtype)
    b1 = tf.cast(self.beta_1, dtype)
    b2 = tf.cast(self.beta_2, dtype)
    rate = lr * tf.sqrt(1 - tf.pow(b2, step)) / (1 - tf.pow(b1, step))
    m_rows = b1 * tf.gather(m, rows) + (1 - b1) * grad
    v_rows = b2 * tf.gather(v, rows) + (1 - b2) * tf.square(grad)
    m.scatter_update(tf.IndexedSlices(m_rows, rows))
    v.scatter_update(tf.IndexedSlices(v_rows, rows))
    variable.scatter_sub(
      tf.IndexedSlices(rate * m_rows / (tf.sqrt(v_rows) + self.epsilon), rows)
    )

  def get_config(self):
    return self._base_config(
      beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon
    )


class SparseAdagrad(_SparseOptimizer):
  """Adagrad on the looked-up rows: `a[i] += g^2`, `w[i] -= lr g / sqrt(a[i])`.

  Example:
    >>> SparseAdagrad(learning_rate=0.05, initial_accumulator_value=0.1)

  Args:
    learning_rate: a float or a `LearningRateSchedule`.
    initial_accumulator_value: the accumulators' start (and reset) value.
    epsilon: added to the root of the accumulator.
    **kwargs: tf_keras optimizer arguments.
  """

  def __init__(
    self,
    learning_rate=0.001,
    initial_accumulator_value=0.1,
    epsilon=1e-7,
    name='SparseAdagrad',
    **kwargs,
  ):
    if initial_accumulator_value < 0:
      raise ConfigurationError(
        'initial_accumulator_value must be >= 0. Received: '
        f'initial_accumulator_value={initial_accumulator_value}'
      )
    super().__init__(learning_rate, name, **kwargs)
    self.initial_accumulator_value = initial_accumulator_value
    self.epsilon = epsilon

  def _slot_specs(self):
    return (('accumulator', float(self.initial_accumulator_value)),)

  def _sparse_update(self, grad, rows, variable, lr):
    accumulator = self._slot('accumulator', variable)
    total = tf.gather(accumulator, rows) + tf.square(grad)
    accumulator.scatter_update(tf.IndexedSlices(total, rows))
    variable.scatter_sub(
      tf.IndexedSlices(lr * grad / (tf.sqrt(total) + self.epsilon), rows)
    )

  def get_config(self):
    return self._base_config(
      initial_accumulator_value=self.initial_accumulator_value,
      epsilon=self.epsilon,
    )


class SparseFtrl(_SparseOptimizer):
  """FTRL-proximal (McMahan et al., 2013) on the looked-up rows.

  Per row `i`: `n' = n + g^2`, `z += g - (n'^-p - n^-p) / lr * w`,
  `w = (sign(z) l1 - z) / (n'^-p / lr + 2 l2)` where `|z| > l1`, else 0,
  with `p = learning_rate_power` (-0.5). As in TensorFlow's FTRL, a row's
  first update replaces its initial value by the closed form (zero-
  initialized tables are usual with FTRL).

  Example:
    >>> SparseFtrl(learning_rate=0.05, l1_regularization_strength=0.001)

  Args:
    learning_rate: a float or a `LearningRateSchedule`.
    learning_rate_power: <= 0.
    initial_accumulator_value: >= 0, the accumulators' start (and reset).
    l1_regularization_strength: >= 0.
    l2_regularization_strength: >= 0.
    **kwargs: tf_keras optimizer arguments.
  """

  def __init__(
    self,
    learning_rate=0.001,
    learning_rate_power=-0.5,
    initial_accumulator_value=0.1,
    l1_regularization_strength=0.0,
    l2_regularization_strength=0.0,
    name='SparseFtrl',
    **kwargs,
  ):
    for arg, value, ok in (
      ('learning_rate_power', learning_rate_power, learning_rate_power <= 0),
      (
        'initial_accumulator_value',
        initial_accumulator_value,
        initial_accumulator_value >= 0,
      ),
      (
        'l1_regularization_strength',
        l1_regularization_strength,
        l1_regularization_strength >= 0,
      ),
      (
        'l2_regularization_strength',
        l2_regularization_strength,
        l2_regularization_strength >= 0,
      ),
    ):
      if not ok:
        expected = '<= 0' if arg == 'learning_rate_power' else '>= 0'
        raise ConfigurationError(
          f'{arg} must be {expected}. Received: {arg}={value}'
        )
    super().__init__(learning_rate, name, **kwargs)
    self.learning_rate_power = learning_rate_power
    self.initial_accumulator_value = initial_accumulator_value
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength

  def _slot_specs(self):
    return (
      ('accumulator', float(self.initial_accumulator_value)),
      ('linear', 0.0),
    )

  def _sparse_update(self, grad, rows, variable, lr):
    accumulator = self._slot('accumulator', variable)
    linear = self._slot('linear', variable)
    power = -tf.cast(self.learning_rate_power, variable.dtype)
    l1 = tf.cast(self.l1_regularization_strength, variable.dtype)
    l2 = tf.cast(self.l2_regularization_strength, variable.dtype)
    n = tf.gather(accumulator, rows)
    n_new = n + tf.square(grad)
    w = tf.gather(variable, rows)
    z = (
      tf.gather(linear, rows)
      + grad
      - (tf.pow(n_new, power) - tf.pow(n, power)) / lr * w
    )
    quadratic = tf.pow(n_new, power) / lr + 2 * l2
    w_new = tf.where(
      tf.abs(z) > l1, (tf.sign(z) * l1 - z) / quadratic, tf.zeros_like(z)
    )
    accumulator.scatter_update(tf.IndexedSlices(n_new, rows))
    linear.scatter_update(tf.IndexedSlices(z, rows))
    variable.scatter_update(tf.IndexedSlices(w_new, rows))

  def get_config(self):
    return self._base_config(
      learning_rate_power=self.learning_rate_power,
      initial_accumulator_value=self.initial_accumulator_value,
      l1_regularization_strength=self.l1_regularization_strength,
      l2_regularization_strength=self.l2_regularization_strength,
    )


def build_sparse_optimizer(args, learning_rate=None):
  """The optimizer of embedding tables that the arguments describe.

  `--embedding-optimizer` (lazy-adam by default; adam is Keras' Adam, which
  decays every row's moments each step) at `--embedding-learning-rate`, or
  else at `learning_rate`. Arguments without these flags (a plain
  `ModelArguments`) get LazyAdam.

  Example:
    >>> args = Arguments.parse(['--embedding-optimizer', 'ftrl'])  # a mix
    >>> type(build_sparse_optimizer(args)).__name__                 # of
    'SparseFtrl'                                                    # EmbeddingArguments

  Args:
    args: the parsed arguments.
    learning_rate: the rate when `--embedding-learning-rate` is not given: a
      float or a `LearningRateSchedule` (`ModelBuilder` passes the dense
      optimizer's, schedule included). Default: `--learning-rate`.

  Returns:
    A `tf_keras.optimizers.Optimizer`.
  """
  settings = _args.EmbeddingSettings.from_args(args)
  if settings.learning_rate is not None:
    learning_rate = settings.learning_rate
  elif learning_rate is None:
    learning_rate = float(getattr(args, 'learning_rate', None) or 0.001)
  name = settings.optimizer
  if name == 'lazy-adam':
    return LazyAdam(learning_rate=learning_rate)
  if name == 'adam':
    return tf_keras.optimizers.Adam(
      learning_rate=learning_rate, jit_compile=False
    )
  if name == 'adagrad':
    return SparseAdagrad(learning_rate=learning_rate)
  if name == 'ftrl':
    return SparseFtrl(learning_rate=learning_rate)
  if name == 'sgd':
    # Keras' SGD without momentum subtracts the IndexedSlices: sparse.
    return tf_keras.optimizers.SGD(
      learning_rate=learning_rate, jit_compile=False
    )
  raise ConfigurationError(
    f'--embedding-optimizer must be one of {", ".join(OPTIMIZERS)}. '
    f'Received: --embedding-optimizer={name}'
  )
