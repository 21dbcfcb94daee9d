"""EmbeddingTable: a large embedding table over raw keys.

One row per hash bucket of the key space plus a default row. Keys (int64
ids or strings, any number of them) hash to `capacity` rows; a key seen
fewer than `admit_after` times in training reads the default row, and a
row not looked up for `evict_after_steps` steps is reset (re-initialized,
its count and its optimizer state cleared), so a long-running job keeps
room for new keys. The counts and last-seen steps are variables: they are
checkpointed and exported with the rows.

Under `ParameterServerStrategy` with a variable partitioner (tensorfx sets
one when there are several parameter servers) the rows, counts and stamps
are `ShardedVariable`s: each parameter server holds a block of rows, and a
lookup reads only the rows it needs. Checkpoints store each variable whole
(with slice information), so a table saved over N parameter servers
restores over M.
"""

import functools
import types
import zlib

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.embeddings import _combine
from tensorfx.embeddings import _sharding

COMBINERS = _combine.COMBINERS
HASHINGS = ('mod', 'fingerprint')
KEY_DTYPES = ('int64', 'string')

# The default initializer: uniform in [-0.05, 0.05], as tf_keras' Embedding.
_INIT_SCALE = 0.05


class EmbeddingTable(tf.Module):
  """A table of embeddings over an unbounded space of int64 or string keys.

  Keys map to rows by hashing: strings with `tf.strings.to_hash_bucket_fast`,
  int64 ids by `mod` (id modulo `capacity`: dense ids below `capacity`
  never collide) or `fingerprint` (FarmHash, for ids with structure). Size
  `capacity` several times the number of live keys to keep collisions rare.
  Row `capacity` is the default row: keys not admitted yet read it (it starts
  at zero and is trained like any other row).

  Variables are made on the first `lookup` (or `build()`), under the
  distribution strategy's scope that is current then, as Keras layers do;
  inside a `ModelBuilder` that is the first call of `build_inference`.
  A `ModelBuilder` trains the rows with its sparse optimizer (see
  `ModelBuilder.build_sparse_optimizer`), or with this table's own
  `optimizer`, and gives the table its global step as the clock of
  admission and eviction.

  Example:
    >>> users = EmbeddingTable('users', dim=16, capacity=1 << 20,
    ...                        admit_after=2, evict_after_steps=100000)
    >>> vectors = users.lookup(tf.constant([7, 123456789]))          # [2, 16]
    >>> histories = tf.ragged.constant([[1, 2, 3], [4]], tf.int64)
    >>> users.lookup(histories, combiner='sqrtn', training=True)     # [2, 16]

  Args:
    name: the table's name (letters, digits, underscores); its variables
      are `NAME/embeddings`, `NAME/counts`, ...
    dim: the embedding dimension.
    capacity: the number of rows keys hash to (the default row is extra).
    key_dtype: `tf.int64` (or 'int64') or `tf.string` (or 'string').
    initializer: a `tf_keras` initializer or a callable `(shape, dtype)` for
      the rows, also used to re-initialize evicted rows. Default: uniform in
      [-0.05, 0.05], drawn statelessly from `seed`, so every worker of a
      multi-worker job resets an evicted row to the same values (pass a
      seeded initializer for the same guarantee).
    combiner: how `lookup` reduces the keys of one instance: 'sum', 'mean'
      or 'sqrtn'.
    hashing: for int64 keys, 'mod' or 'fingerprint'.
    admit_after: a key reads its own row once it has been looked up this
      many times in training (1: at once). Before that, and for keys never
      seen in training (at serving time too), it reads the default row.
    evict_after_steps: reset the rows not looked up in training for this
      many steps (None: never).
    evict_every_steps: how often to look for rows to evict (default: every
      `evict_after_steps // 10` steps, at least 1). A sweep reads every
      row's stamp, so it is not done every step.
    optimizer: this table's own optimizer (default: the builder's sparse
      optimizer).
    step_counter: the int64 variable counting training steps, the clock of
      eviction (default: the builder's global step).
    seed: the seed of the default initializer (default: from the name).

  Raises:
    ConfigurationError: an argument is invalid; the message names it.
  """

  def __init__(self, name, dim, capacity, *, key_dtype=tf.int64,
               initializer=None, combiner='mean', hashing='mod',
               admit_after=1, evict_after_steps=None, evict_every_steps=None,
               optimizer=None, step_counter=None, seed=None):
    if not isinstance(name, str) or not name.isidentifier():
      raise ConfigurationError(
          'name must be letters, digits and underscores, not starting with '
          f'a digit. Received: name={name!r}')
    super().__init__(name=name)
    self._dim = _positive('dim', dim)
    self._capacity = _positive('capacity', capacity)
    self._key_dtype = _key_dtype(key_dtype)
    if combiner not in COMBINERS:
      raise ConfigurationError(f'combiner must be one of '
                               f'{", ".join(COMBINERS)}. Received: '
                               f'combiner={combiner!r}')
    self._combiner = combiner
    if hashing not in HASHINGS:
      raise ConfigurationError(f'hashing must be one of {", ".join(HASHINGS)}.'
                               f' Received: hashing={hashing!r}')
    self._hashing = hashing
    self._admit_after = _positive('admit_after', admit_after)
    self._evict_after = (None if evict_after_steps is None else
                         _positive('evict_after_steps', evict_after_steps))
    if evict_every_steps is not None:
      _positive('evict_every_steps', evict_every_steps)
      if self._evict_after is None:
        raise ConfigurationError(
            'evict_every_steps needs evict_after_steps. Received: '
            f'evict_every_steps={evict_every_steps}, evict_after_steps=None')
    self._evict_every = evict_every_steps or (
        max(1, self._evict_after // 10) if self._evict_after else None)
    if initializer is not None and not callable(initializer):
      import tf_keras  # pylint: disable=g-import-not-at-top
      try:
        initializer = tf_keras.initializers.get(initializer)
      except ValueError:
        raise ConfigurationError(
            'initializer must be a tf_keras initializer, its name, or a '
            f'callable (shape, dtype). Received: initializer={initializer!r}'
        ) from None
    self._initializer = initializer
    self._seed = int(seed) if seed is not None else (
        zlib.crc32(name.encode('utf-8')) & 0x7fffffff)
    if optimizer is not None:
      # Tracked: checkpointed with the table.
      self._own_optimizer = optimizer
    # Not tracked: whoever bound them (the builder) checkpoints them.
    self._bound = types.SimpleNamespace(optimizer=optimizer,
                                        step_counter=step_counter)
    self._built = False

  # Configuration.

  @property
  def dim(self):
    """The embedding dimension."""
    return self._dim

  @property
  def capacity(self):
    """The number of rows keys hash to; the default row is row `capacity`."""
    return self._capacity

  @property
  def default_row(self):
    """The row keys read before they are admitted: `capacity`."""
    return self._capacity

  @property
  def key_dtype(self):
    """`tf.int64` or `tf.string`."""
    return self._key_dtype

  @property
  def combiner(self):
    """The default combiner of `lookup`."""
    return self._combiner

  @property
  def admit_after(self):
    """Training lookups a key needs before it reads its own row."""
    return self._admit_after

  @property
  def evict_after_steps(self):
    """Steps without a training lookup after which a row is reset, or None."""
    return self._evict_after

  @property
  def optimizer(self):
    """The optimizer that trains the rows (None until bound)."""
    return self._bound.optimizer

  @property
  def step_counter(self):
    """The step variable that stamps lookups (None until bound)."""
    return self._bound.step_counter

  def bind(self, step_counter=None, optimizer=None):
    """Gives the table a clock and an optimizer where it has none.

    `ModelBuilder` calls it with its global step and sparse optimizer once
    the variables exist; values given to the constructor win.

    Example:
      >>> table.bind(step_counter=global_step, optimizer=LazyAdam(0.01))

    Args:
      step_counter: an int64 variable counting training steps.
      optimizer: the optimizer that applies the rows' gradients.
    """
    if self._bound.step_counter is None:
      self._bound.step_counter = step_counter
    if self._bound.optimizer is None:
      self._bound.optimizer = optimizer

  # Variables.

  @property
  def built(self):
    """Whether the variables exist."""
    return self._built

  def build(self):
    """Creates the variables (once), under the current strategy's scope."""
    if self._built:
      return
    rows, dim = self._capacity + 1, self._dim
    with self.name_scope:
      self.embeddings = tf.Variable(
          functools.partial(self._initial_rows, shape=(rows, dim)),
          shape=(rows, dim), dtype=tf.float32, name='embeddings')
      self.counts = tf.Variable(
          functools.partial(_zeros, shape=(self._capacity,), dtype=tf.int32),
          shape=(self._capacity,), dtype=tf.int32, trainable=False,
          name='counts')
      if self._evict_after is not None:
        self.last_seen = tf.Variable(
            functools.partial(_zeros, shape=(self._capacity,),
                              dtype=tf.int64),
            shape=(self._capacity,), dtype=tf.int64, trainable=False,
            name='last_seen')
        self.next_sweep = tf.Variable(
            tf.constant(self._evict_every, tf.int64), trainable=False,
            name='next_sweep')
        self.evicted = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                                   name='evicted')
    self._built = True

  @property
  def shards(self):
    """The variables holding the rows: one per parameter server, or one."""
    self._require_built('shards')
    return _sharding.shards(self.embeddings)

  def _require_built(self, what):
    if not self._built:
      raise ConfigurationError(
          f'EmbeddingTable {self.name!r}: {what} needs the variables, which '
          'the first lookup (or build()) makes.')

  def _initial_rows(self, shape, partition_shape=None, partition_offset=None):
    # Called once per shard under a partitioner (with the shard's shape and
    # offset), so no parameter server materializes the whole table.
    shape = tuple(partition_shape or shape)
    first = int(partition_offset[0]) if partition_offset else 0
    values = self._draw(shape, tf.constant(first, tf.int64))
    default = self._capacity - first
    if 0 <= default < shape[0]:
      # The default row starts at zero: "no key" adds nothing until trained.
      values = tf.tensor_scatter_nd_update(
          values, [[default]], tf.zeros([1, self._dim], values.dtype))
    return values

  def _draw(self, shape, salt):
    if self._initializer is not None:
      return tf.cast(self._initializer(shape, dtype=tf.float32), tf.float32)
    seed = tf.stack([tf.constant(self._seed, tf.int64),
                     tf.cast(salt, tf.int64)])
    return tf.random.stateless_uniform(shape, seed, minval=-_INIT_SCALE,
                                       maxval=_INIT_SCALE)

  # Lookups.

  def rows(self, keys):
    """The row of each key (before admission), int64 in [0, capacity).

    Example:
      >>> EmbeddingTable('t', dim=4, capacity=10).rows(
      ...     tf.constant([3, 13, -1], tf.int64)).numpy().tolist()
      [3, 3, 9]

    Args:
      keys: a tensor of keys of `key_dtype` (int32 is accepted for int64).
    """
    keys = self._check_keys(keys)
    if self._key_dtype == tf.string:
      return tf.strings.to_hash_bucket_fast(keys, self._capacity)
    if self._hashing == 'fingerprint':
      flat = tf.reshape(keys, [-1])
      hashed = tf.bitcast(tf.fingerprint(flat), tf.int64)
      keys = tf.reshape(hashed, tf.shape(keys))
    return tf.math.floormod(keys, tf.constant(self._capacity, tf.int64))

  def lookup(self, keys, combiner=None, training=False):
    """Looks keys up: one vector per key, or per instance's list of keys.

    Called anywhere a tensor is computed: in a `ModelBuilder` hook (inside
    `tf.function`, once per replica), or eagerly. A training lookup counts
    each key (admission), stamps its row with the step (eviction) and, when
    a sweep is due, evicts stale rows first. Only the rows looked up get a
    gradient, as `tf.IndexedSlices`.

    Example:
      >>> table.lookup(tf.constant([1, 2]))                          # [2, dim]
      >>> table.lookup(tf.sparse.from_dense([[1, 2], [3, 0]]), 'sum')
      >>> table.lookup(tf.ragged.constant([['a', 'b'], []]))         # string keys

    Args:
      keys: [B] keys (one per instance: no combiner), or a list per instance:
        [B, N] keys, a [B, None] `tf.RaggedTensor` or a [B, None]
        `tf.SparseTensor` (an instance without keys gets zeros).
      combiner: 'sum', 'mean' or 'sqrtn' (default: the table's).
      training: whether this is a training step's lookup.

    Returns:
      float32 [B, dim].
    """
    self.build()
    combiner = combiner or self._combiner
    if combiner not in COMBINERS:
      raise ConfigurationError(f'combiner must be one of '
                               f'{", ".join(COMBINERS)}. Received: '
                               f'combiner={combiner!r}')
    bag = None
    if isinstance(keys, tf.SparseTensor):
      bag = tf.RaggedTensor.from_sparse(keys)
    elif isinstance(keys, tf.RaggedTensor):
      bag = keys
    else:
      keys = tf.convert_to_tensor(keys)
      if keys.shape.rank == 2:
        bag = tf.RaggedTensor.from_tensor(keys)
      elif keys.shape.rank != 1:
        raise ConfigurationError(
            f'EmbeddingTable {self.name!r} looks up [B] keys or lists of '
            f'keys ([B, N], ragged or sparse). Received: keys of shape '
            f'{keys.shape}')
    if bag is not None and bag.ragged_rank != 1:
      raise ConfigurationError(
          f'EmbeddingTable {self.name!r} looks up one list of keys per '
          f'instance. Received: a ragged tensor of ragged_rank '
          f'{bag.ragged_rank}')
    flat = bag.flat_values if bag is not None else keys
    rows = self.rows(flat)
    if training:
      self._record(rows)
    rows = self._admitted(rows, training)
    vectors = tf.nn.embedding_lookup(self.embeddings, rows)
    if bag is None:
      return vectors
    return _combine.combine(vectors, bag.value_rowids(), bag.nrows(),
                            combiner)

  def _check_keys(self, keys):
    keys = tf.convert_to_tensor(keys)
    if self._key_dtype == tf.string:
      if keys.dtype != tf.string:
        raise ConfigurationError(
            f'EmbeddingTable {self.name!r} has string keys. Received: keys '
            f'of dtype {keys.dtype.name}')
      return keys
    if not keys.dtype.is_integer:
      raise ConfigurationError(
          f'EmbeddingTable {self.name!r} has int64 keys. Received: keys of '
          f'dtype {keys.dtype.name}')
    return tf.cast(keys, tf.int64)

  def _admitted(self, rows, training):
    """Rows of keys not admitted yet become the default row."""
    if training and self._admit_after == 1:
      return rows  # Just counted: every key is admitted.
    counts = tf.nn.embedding_lookup(self.counts, rows)
    return tf.where(counts >= self._admit_after, rows,
                    tf.constant(self._capacity, tf.int64))

  def _record(self, rows):
    """Counts and stamps the rows of a training batch; evicts when due."""
    context = tf.distribute.get_replica_context()
    if (context is not None and context.num_replicas_in_sync > 1 and
        not isinstance(tf.distribute.get_strategy(),
                       tf.distribute.ParameterServerStrategy)):
      self._record_replicated(context, rows)
    else:
      self.counts.scatter_add(
          tf.IndexedSlices(tf.ones_like(rows, tf.int32), rows))
      if self._evict_after is not None:
        self.last_seen.scatter_update(
            tf.IndexedSlices(tf.fill(tf.shape(rows), self._now()), rows))
    if self._evict_after is None:
      return
    now = self._now()
    due = now >= tf.convert_to_tensor(self.next_sweep)
    tf.cond(due, lambda: self.evict(now), lambda: tf.constant(0, tf.int64))

  def _record_replicated(self, context, rows):
    """Synchronous replicas: every copy counts the keys of all replicas.

    Each replica keeps its own copy of the statistics and applies the same
    update, the sum of every replica's counts. The sum is a dense
    all-reduce over the rows: collectives of varying sizes (an all-gather
    of the keys) fail inside a training loop's `tf.while_loop`. Parameter
    servers, which hold one copy, count sparsely instead.
    """
    seen = tf.math.unsorted_segment_sum(
        tf.ones_like(rows, tf.int32), rows, self._capacity)
    seen = context.all_reduce(tf.distribute.ReduceOp.SUM, seen)
    self.counts.assign_add(seen)
    if self._evict_after is not None:
      self.last_seen.assign(tf.where(
          seen > 0, self._now(), tf.convert_to_tensor(self.last_seen)))

  def _now(self):
    counter = self._bound.step_counter
    if counter is None:
      raise ConfigurationError(
          f'EmbeddingTable {self.name!r} evicts rows after '
          f'evict_after_steps={self._evict_after} steps, so its training '
          'lookups need a clock: pass step_counter= (an int64 variable '
          'counting steps), or train it from a ModelBuilder, which binds '
          'its global step. Received: step_counter=None')
    return tf.cast(tf.convert_to_tensor(counter), tf.int64)

  def evict(self, now=None):
    """Resets the rows not looked up in training for `evict_after_steps`.

    Runs by itself from training lookups every `evict_every_steps` steps;
    call it to sweep at another time. A reset row gets fresh initial values,
    a count of zero (its keys start admission again) and cleared optimizer
    state (with the tensorfx sparse optimizers).

    Example:
      >>> int(table.evict(now=tf.constant(50_000, tf.int64)))
      1234

    Args:
      now: the current step (default: the step counter's value).

    Returns:
      int64: the number of rows reset.
    """
    if self._evict_after is None:
      raise ConfigurationError(
          f'EmbeddingTable {self.name!r} does not evict: give it '
          'evict_after_steps. Received: evict_after_steps=None')
    self._require_built('evict()')
    now = self._now() if now is None else tf.cast(now, tf.int64)
    counts = tf.convert_to_tensor(self.counts)
    last = tf.convert_to_tensor(self.last_seen)
    stale = tf.where((counts > 0) & (now - last >= self._evict_after))[:, 0]
    size = tf.shape(stale, out_type=tf.int64)[0]
    self.embeddings.scatter_update(tf.IndexedSlices(
        self._draw(tf.stack([size, self._dim]), now), stale))
    self.counts.scatter_update(
        tf.IndexedSlices(tf.zeros_like(stale, tf.int32), stale))
    self.last_seen.scatter_update(
        tf.IndexedSlices(tf.zeros_like(stale), stale))
    optimizer = self._bound.optimizer
    if hasattr(optimizer, 'reset_slots'):
      optimizer.reset_slots(self.embeddings, stale)
    self.next_sweep.assign(now + self._evict_every)
    self.evicted.assign_add(size)
    return size

  def live_rows(self):
    """The number of rows with admitted keys (count >= admit_after).

    Example:
      >>> int(table.live_rows())
      40213
    """
    self._require_built('live_rows()')
    counts = tf.convert_to_tensor(self.counts)
    return tf.reduce_sum(tf.cast(counts >= self._admit_after, tf.int64))


def find_tables(module):
  """The `EmbeddingTable`s a `tf.Module` (a ModelBuilder) holds, in order.

  Example:
    >>> [t.name for t in find_tables(builder)]
    ['items', 'users']
  """
  found = {}
  for table in module._flatten(  # pylint: disable=protected-access
      predicate=lambda m: isinstance(m, EmbeddingTable),
      with_path=False):
    found.setdefault(id(table), table)
  return list(found.values())


def _zeros(shape, dtype, partition_shape=None, partition_offset=None):
  del partition_offset
  return tf.zeros(partition_shape or shape, dtype)


def _positive(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ConfigurationError(f'{name} must be a positive integer. '
                             f'Received: {name}={value!r}')
  return value


def _key_dtype(value):
  try:
    dtype = tf.as_dtype(value)
  except TypeError:
    dtype = None
  if dtype in (tf.int64, tf.int32):
    return tf.int64
  if dtype == tf.string:
    return tf.string
  raise ConfigurationError(f'key_dtype must be one of {", ".join(KEY_DTYPES)}.'
                           f' Received: key_dtype={value!r}')
