"""Embedding tables: large, sharded, sparsely trained, with admission and eviction.

Names are imported on first use: `EmbeddingArguments` parses flags without
importing TensorFlow.
"""

import importlib

_EXPORTS = {
    'COMBINERS': 'tensorfx.embeddings._table',
    'EmbeddingArguments': 'tensorfx.embeddings._args',
    'EmbeddingTable': 'tensorfx.embeddings._table',
    'LazyAdam': 'tensorfx.embeddings._optimizers',
    'SparseAdagrad': 'tensorfx.embeddings._optimizers',
    'SparseFtrl': 'tensorfx.embeddings._optimizers',
    'build_sparse_optimizer': 'tensorfx.embeddings._optimizers',
    'find_tables': 'tensorfx.embeddings._table',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
  module = _EXPORTS.get(name)
  if module is None:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = getattr(importlib.import_module(module), name)
  globals()[name] = value
  return value


def __dir__():
  return list(__all__)
