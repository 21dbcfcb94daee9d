"""EmbeddingTable: a large embedding table over raw keys.

Rows for an unbounded space of keys (int64 ids or strings), plus a default
row. Two ways to give keys rows:
- hashed (`hashing='mod'` or `'fingerprint'`): a key's row is a hash of the
  key, so colliding keys share a row; admission counts and eviction stamps
  are per row (`_hashed.py`);
- exact (`hashing='exact'`): an index gives each admitted key a row of its
  own from a free list, and eviction returns it; counts and stamps are per
  key (`_exact.py`).
A key seen fewer than `admit_after` times in training reads the default row,
and keys not looked up for `evict_after_steps` steps are evicted, so a
long-running job keeps room for new keys.

Under `ParameterServerStrategy` with a variable partitioner (tensorfx sets
one when there are several parameter servers) the rows (and a hashed
table's counts and stamps) are `ShardedVariable`s: each parameter server
holds a block of rows, and a lookup reads only the rows it needs.
Checkpoints store each variable whole (with slice information), or an
exact table by key, so a table saved over N parameter servers restores
over M.
"""

import functools
import types
from typing import Any

import tensorflow as tf

from tensorfx._errors import ConfigurationError
from tensorfx.embeddings import _combine
from tensorfx.embeddings import _exact
from tensorfx.embeddings import _expansion
from tensorfx.embeddings import _hashed
from tensorfx.embeddings import _initial
from tensorfx.embeddings import _options
from tensorfx.embeddings import _sharding
from tensorfx.embeddings import _together

COMBINERS = _combine.COMBINERS
HASHINGS = _options.HASHINGS


class EmbeddingTable(tf.Module):
  """A table of embeddings over an unbounded space of int64 or string keys.

  Hashed keys (the default): strings hash with
  `tf.strings.to_hash_bucket_fast`, int64 ids by `mod` (id modulo
  `capacity`: dense ids below `capacity` never collide) or `fingerprint`
  (FarmHash, for ids with structure). Size `capacity` several times the
  number of live keys to keep collisions rare.

  Exact keys (`hashing='exact'`): each admitted key owns a row (an index
  maps keys to rows; rows come from a free list), so keys never share a
  row; admission counts and eviction stamps are per key, eviction frees a
  key's row for another, and a key admitted to a row starts from fresh
  initial values. `capacity` is the number of keys that can hold a row at
  once; when all rows are taken, new keys read the default row until an
  eviction frees one. Restoring a checkpoint into a table with a larger
  `capacity` keeps every key's row, vector and optimizer slots. Exact keys
  train on one device, under parameter servers, or on synchronous replicas
  one per process (`MultiWorkerMirroredStrategy`, one device a worker:
  each step's new keys are gathered from every replica and recorded by
  all in one order, so every copy holds the same key -> row map).

  Row `capacity` is the default row: keys not admitted yet read it (it
  starts at zero and is trained like any other row).

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
    >>> items = EmbeddingTable('items', dim=tf.TensorShape([16]),   # mxRec's
    ...                        capacity=500_000, hashing='exact')    # spelling

  Args:
    name: the table's name (letters, digits, underscores); its variables
      are `NAME/embeddings`, `NAME/counts`, ...
    dim: the embedding dimension: an int, or a `tf.TensorShape` of one known
      dimension (`tf.TensorShape([16])`, as mxRec's `create_table` takes).
    capacity: the number of rows keys get (the default row is extra).
    key_dtype: `tf.int64` (or 'int64') or `tf.string` (or 'string').
    initializer: a `tf_keras` initializer, its name or config, or a callable
      `(shape, dtype)` for the rows, also used to re-initialize evicted
      rows. Default: uniform in [-0.05, 0.05], drawn statelessly from
      `seed`, so every worker of a multi-worker job resets an evicted row
      to the same values (pass a seeded initializer for the same
      guarantee).
    combiner: how `lookup` reduces the keys of one instance: 'sum', 'mean'
      or 'sqrtn'.
    hashing: 'mod' or 'fingerprint' (int64 keys; string keys always hash
      the same way), or 'exact' (int64 or string keys: no collisions).
    admit_after: a key reads its own row once it has been looked up this
      many times in training (1: at once). Before that, and for keys never
      seen in training (at serving time too), it reads the default row.
    evict_after_steps: evict the keys (hashed: rows) not looked up in
      training for this many steps (None: never).
    evict_every_steps: how often to look for keys to evict (default: every
      `evict_after_steps // 10` steps, at least 1). A sweep reads every
      row's stamp (or every key's), so it is not done every step.
    evict_after_secs: instead of `evict_after_steps`, evict the keys not
      looked up in training for this many seconds of wall-clock time
      (mxRec's `eviction_threshold`): lookups stamp keys with the time.
    evict_every_secs: how often (seconds) to look for keys to evict by
      time (default: `evict_after_secs // 10`, at least 1).
    dynamic_expansion: (exact keys) grow the capacity while training,
      without a restart, when the keys holding rows fill more than
      `expansion_threshold` of it (mxRec's `use_dynamic_expansion`): the
      capacity doubles inside the training step, the rows, optimizer slots
      and keys already there are kept, and `current_capacity()` tells the
      capacity now; `capacity` stays the starting one (its default row).
      Under parameter servers the chief doubles it at a log interval by
      saving a checkpoint and restarting in place (a pause of seconds).
    expansion_threshold: the share of the key rows held past which a table
      with `dynamic_expansion` grows (default 0.8).
    optimizer: this table's own optimizer (default: the builder's sparse
      optimizer).
    step_counter: the int64 variable counting training steps, the clock of
      eviction (default: the builder's global step).
    seed: the seed of the default initializer (default: from the name).

  Raises:
    ConfigurationError: an argument is invalid; the message names it.
  """

  def __init__(
    self,
    name,
    dim,
    capacity,
    *,
    key_dtype=tf.int64,
    initializer=None,
    combiner='mean',
    hashing='mod',
    admit_after=1,
    evict_after_steps=None,
    evict_every_steps=None,
    optimizer=None,
    step_counter=None,
    seed=None,
    evict_after_secs=None,
    evict_every_secs=None,
    dynamic_expansion=False,
    expansion_threshold=_expansion.EXPANSION_THRESHOLD,
  ):
    if not isinstance(name, str) or not name.isidentifier():
      raise ConfigurationError(
        'name must be letters, digits and underscores, not starting with '
        f'a digit. Received: name={name!r}'
      )
    super().__init__(name=name)
    self._dim = _options.dimension(dim)
    self._capacity = _options.positive('capacity', capacity)
    self._key_dtype = _options.key_dtype(key_dtype)
    self._combiner = _options.one_of('combiner', combiner, COMBINERS)
    self._hashing = _options.one_of('hashing', hashing, HASHINGS)
    self._admit_after = _options.positive('admit_after', admit_after)
    self._clock, self._evict_after, self._evict_every = _options.eviction(
      evict_after_steps, evict_every_steps, evict_after_secs, evict_every_secs
    )
    if not isinstance(dynamic_expansion, bool):
      raise ConfigurationError(
        'dynamic_expansion must be True or False. Received: '
        f'dynamic_expansion={dynamic_expansion!r}'
      )
    if dynamic_expansion and hashing != 'exact':
      raise ConfigurationError(
        'dynamic_expansion grows a table of exact keys (a hashed table '
        "spreads keys over all its rows): give hashing='exact'. Received: "
        f'hashing={hashing!r}'
      )
    self._dynamic_expansion = dynamic_expansion
    if (
      isinstance(expansion_threshold, bool)
      or not isinstance(expansion_threshold, (int, float))
      or not 0 < expansion_threshold <= 1
    ):
      raise ConfigurationError(
        'expansion_threshold must be a share of the rows in (0, 1]. '
        f'Received: expansion_threshold={expansion_threshold!r}'
      )
    self._expansion_threshold = float(expansion_threshold)
    self._initializer = _options.initializer(initializer)
    self._initial = _initial.InitialValues(
      name, self._capacity, self._dim, self._initializer, seed
    )
    if optimizer is not None:
      # Tracked: checkpointed with the table.
      self._own_optimizer = optimizer
    # Not tracked: whoever bound them (the builder) checkpoints them. The
    # key mode holds an exact table's index, which is checkpointed by key.
    self._bound = types.SimpleNamespace(optimizer=None, step_counter=None)
    self._keys: Any = (
      _exact.ExactKeys if hashing == 'exact' else _hashed.HashedKeys
    )(self, self._initial, self._evict_every)
    self._eviction = self._keys.eviction
    self._built = False
    self._grows_in_step = False
    self.bind(step_counter=step_counter, optimizer=optimizer)

  @classmethod
  def from_params(cls, name, params, key_dtype=tf.int64):
    """The table an `embedding` feature of features.yaml describes.

    Reads the table's parameters (`dim`, `capacity`, `combiner`,
    `initializer`, `hashing`, `admit_after`, `evict_after_steps`,
    `evict_every_steps`, `evict_after_secs`, `evict_every_secs`,
    `dynamic_expansion`) and ignores the feature's others.

    Example:
      >>> table = EmbeddingTable.from_params(
      ...     'item', {'dim': 8, 'capacity': 1000, 'hashing': 'exact'})
      >>> table.hashing
      'exact'

    Args:
      name: the table's name (the feature owning it).
      params: the feature's parameters (a mapping).
      key_dtype: the dtype of the field's raw values.

    Raises:
      ConfigurationError: naming the feature and the parameter.
    """
    try:
      return cls(name, key_dtype=key_dtype, **_options.table_kwargs(params))
    except ConfigurationError as e:
      raise ConfigurationError(
        f'Feature {name!r} (features.yaml): {e}'
      ) from None

  # Configuration.

  @property
  def dim(self):
    """The embedding dimension."""
    return self._dim

  @property
  def capacity(self):
    """The number of rows keys get; the default row is row `capacity`."""
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
  def hashing(self):
    """'mod', 'fingerprint' or 'exact'."""
    return self._hashing

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
    """Steps without a training lookup after which a key is evicted, or None."""
    return self._evict_after if self._clock == 'steps' else None

  @property
  def evict_after_secs(self):
    """Seconds without a training lookup after which a key is evicted, or None."""
    return self._evict_after if self._clock == 'seconds' else None

  @property
  def eviction_clock(self):
    """What stamps lookups: 'steps', 'seconds', or None (no eviction)."""
    return self._clock

  @property
  def eviction_threshold(self):
    """The eviction threshold in the clock's unit, or None."""
    return self._evict_after

  @property
  def dynamic_expansion(self):
    """Whether the capacity grows while training (exact keys)."""
    return self._dynamic_expansion

  @property
  def expansion_threshold(self):
    """The share of key rows held past which the table grows."""
    return self._expansion_threshold

  @property
  def grows_in_step(self):
    """Whether the table grows inside a training step.

    True for a built table with dynamic expansion off parameter servers;
    under parameter servers the chief grows it between steps, by a restart
    in place.
    """
    return self._grows_in_step

  def current_capacity(self):
    """The number of rows keys can hold now (grown or not), an int.

    Example:
      >>> table.capacity, table.current_capacity()   # grown twice
      (1000, 4000)
    """
    if not self._built or not self._dynamic_expansion:
      return self._capacity
    return int(_expansion.key_capacity(self))

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
    if self._bound.optimizer is None and optimizer is not None:
      if self._dynamic_expansion and not hasattr(optimizer, 'grow_slots'):
        raise ConfigurationError(
          f'EmbeddingTable {self.name!r} has dynamic_expansion: its '
          'optimizer must grow its slots with the rows, as the tensorfx '
          'sparse optimizers do (lazy-adam, adagrad, ftrl). Received: '
          f'optimizer={type(optimizer).__name__}'
        )
      self._bound.optimizer = optimizer
      if self._keys.exact and hasattr(optimizer, 'save_slots_by_key'):
        # Checkpoints hold the rows' slots by key, with the rows.
        optimizer.save_slots_by_key(self)

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
    # Remote eager execution cannot pass variables whose shape is not
    # fully known (TensorFlow aborts the server): under parameter servers
    # a table with dynamic expansion has fixed rows, which the chief grows
    # by restarting in place (see _expansion).
    self._grows_in_step = self._dynamic_expansion and not isinstance(
      tf.distribute.get_strategy(), tf.distribute.ParameterServerStrategy
    )
    if self._dynamic_expansion and not self._grows_in_step:
      rows = _expansion.rows_to_build(self)
    with self.name_scope:
      # Rows a table with dynamic expansion appends to: the first
      # dimension is not fixed.
      self.embeddings = tf.Variable(
        functools.partial(self._keys.initial_rows, shape=(rows, dim)),
        shape=((None, dim) if self._grows_in_step else (rows, dim)),
        dtype=tf.float32,
        name='embeddings',
      )
      if self._dynamic_expansion:
        self.expansions = tf.Variable(
          tf.constant(0, tf.int64), trainable=False, name='expansions'
        )
      self._keys.build()
      if self._evict_after is not None:
        self._eviction.build()
    self._built = True

  @property
  def shards(self):
    """The variables holding the rows: one per parameter server, or one."""
    self._require_built('shards')
    return _sharding.shards(self.embeddings)

  @property
  def index_tables(self):
    """The hash tables of an exact-key table's index (hashed keys: none).

    A SavedModel that serves the table must track them, as it tracks the
    variables its functions read.
    """
    if not (self._built and self._keys.exact):
      return []
    return [index.table for index in self._keys.indexes]

  def _require_built(self, what):
    if not self._built:
      raise ConfigurationError(
        f'EmbeddingTable {self.name!r}: {what} needs the variables, which '
        'the first lookup (or build()) makes.'
      )

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if not (self._built and self._keys.exact):
      return children
    if save_type == 'checkpoint':
      return self._keys.checkpoint_children(children)
    return self._keys.saved_model_children(children)

  # Lookups.

  def rows(self, keys):
    """The row of each key: its hash bucket, or (exact keys) its own row.

    Hashed keys: int64 in [0, capacity), before admission. Exact keys: the
    row the key owns, -1 for a key without one (never seen in training, not
    admitted yet, or evicted).

    Example:
      >>> EmbeddingTable('t', dim=4, capacity=10).rows(
      ...     tf.constant([3, 13, -1], tf.int64)).numpy().tolist()
      [3, 3, 9]

    Args:
      keys: a tensor of keys of `key_dtype` (int32 is accepted for int64).
    """
    keys = self._check_keys(keys)
    if self._keys.exact:
      self.build()
    return self._keys.rows(keys)

  def statistics(self, keys):
    """The admission count and last training step behind each key.

    Exact keys: the key's own (`row` -1 while it has none). Hashed keys:
    its row's, shared by every key that hashes there.

    Example:
      >>> stats = table.statistics(tf.constant([7, 9], tf.int64))
      >>> stats['count'].numpy().tolist(), stats['last_seen'].numpy().tolist()
      ([3, 1], [120, 118])

    Args:
      keys: [N] keys of `key_dtype`.

    Returns:
      A dict of int64 [N] tensors: `row`, `count`, `last_seen` (0 when the
      table does not evict).
    """
    self.build()
    return self._keys.statistics(self._check_keys(keys))

  def lookup(self, keys, combiner=None, training=False):
    """Looks keys up: one vector per key, or per instance's list of keys.

    Called anywhere a tensor is computed: in a `ModelBuilder` hook (inside
    `tf.function`, once per replica), or eagerly. A training lookup counts
    each key (admission), stamps it with the step (eviction) and, when a
    sweep is due, evicts stale keys first. Only the rows looked up get a
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
    return self.prepare_lookup(keys, combiner, training).finish()

  def prepare_lookup(self, keys, combiner=None, training=False):
    """A lookup ready to read, for `lookup_tables` to record with others.

    `lookup` is `prepare_lookup(...).finish()`; `lookup_tables` prepares
    several tables' lookups, records their exact keys together (one call
    per parameter server) and finishes each.
    """
    self.build()
    combiner = _options.one_of(
      'combiner', combiner or self._combiner, COMBINERS
    )
    keys, bag = _combine.as_bag(keys, f'EmbeddingTable {self.name!r}')
    return _together.Prepared(
      self._keys,
      self.embeddings,
      self._check_keys(keys),
      bag,
      combiner,
      training,
    )

  def _check_keys(self, keys):
    keys = tf.convert_to_tensor(keys)
    if self._key_dtype == tf.string:
      if keys.dtype != tf.string:
        raise ConfigurationError(
          f'EmbeddingTable {self.name!r} has string keys. Received: keys '
          f'of dtype {keys.dtype.name}'
        )
      return keys
    if not keys.dtype.is_integer:
      raise ConfigurationError(
        f'EmbeddingTable {self.name!r} has int64 keys. Received: keys of '
        f'dtype {keys.dtype.name}'
      )
    return tf.cast(keys, tf.int64)

  def evict(self, now=None):
    """Evicts the keys (hashed: rows) not looked up for `evict_after_steps`.

    Runs by itself from training lookups every `evict_every_steps` steps;
    call it to sweep at another time. Hashed keys: a stale row gets fresh
    initial values, a count of zero (its keys start admission again) and
    cleared optimizer state (with the tensorfx sparse optimizers). Exact
    keys: a stale key is forgotten (its count starts over) and its row
    returns to the free list; the next key admitted to it starts fresh.

    Example:
      >>> int(table.evict(now=tf.constant(50_000, tf.int64)))
      1234

    Args:
      now: the current step, or second with `evict_after_secs` (default:
        the clock's value).

    Returns:
      int64: the number of rows reset (hashed) or freed (exact).
    """
    if self._evict_after is None:
      raise ConfigurationError(
        f'EmbeddingTable {self.name!r} does not evict: give it '
        'evict_after_steps or evict_after_secs. Received: '
        'evict_after_steps=None'
      )
    self._require_built('evict()')
    return self._eviction.sweep(now)

  def live_rows(self):
    """The number of rows held by admitted keys.

    Hashed keys: rows with a count of at least `admit_after`. Exact keys:
    rows not on the free list.

    Example:
      >>> int(table.live_rows())
      40213
    """
    self._require_built('live_rows()')
    return self._keys.live_rows()


def find_tables(module):
  """The `EmbeddingTable`s a `tf.Module` (a ModelBuilder) holds, in order.

  Example:
    >>> [t.name for t in find_tables(builder)]
    ['items', 'users']
  """
  found: dict[Any, Any] = {}
  # `submodules` walks the attributes in name order, recursively.
  for table in module.submodules:
    if isinstance(table, EmbeddingTable):
      found.setdefault(id(table), table)
  return list(found.values())
