"""The engine's input policy: what `ModelBuilder.build_input` does by default.

A source is read through the dataset, filtered (`--data-filter`, and the
slice being evaluated under `--eval-slices`), transformed per batch by the
tf.Transform graph, and, for training over several epochs, replayed from
memory after its first epoch (`--cache`).
"""

from tensorfx.data import _filters
from tensorfx.training._engine import cache as _cache


def read(builder, engine, source, batch, epochs, shuffle):
  """The transformed `tf.data.Dataset` of one of the dataset's sources.

  Args:
    builder: the `ModelBuilder` (its settings, dataset and transform layer).
    engine: its `EngineState` (the cache plan and the slice filter).
    source: the source's name ('train', 'eval' or a validation target's).
    batch: instances per batch.
    epochs: passes over the data (None: forever).
    shuffle: whether to shuffle.
  """
  settings = builder.settings
  dataset = builder.dataset
  # --cache: the training data's later epochs replay the first's
  # transformed batches from memory.
  memory = (
    source == 'train'
    and epochs != 1
    and _cache.plan(engine, settings, dataset, batch, epochs).cache
  )
  raw = dataset[source].read(
    batch,
    epochs=1 if memory else epochs,
    shuffle=shuffle,
    seed=settings.loop.seed,
  )
  if settings.data.filters:
    # --data-filter FIELD=REGEX: keep matching records (Gematria's filter).
    raw = _filters.filter_records(
      raw,
      _filters.parse_filters(settings.data.filters, dataset.schema),
      batch,
      forever=epochs is None and not memory,
    )
  if engine.run.slice_filter is not None:
    # --eval-slices: the records of the slice being evaluated.
    raw = engine.run.slice_filter(raw, batch)
  transformed = dataset.transform(raw, builder.transform_layer)
  if not memory:
    return transformed
  instances = dataset.metadata.instances if dataset.metadata is not None else 0
  return _cache.cached(
    transformed,
    batch,
    epochs,
    shuffle,
    seed=settings.loop.seed,
    batches=-(-instances // batch),
  )
