"""Embedding tables: large, sharded, sparsely trained, with admission and eviction.

Names are imported on first use: `EmbeddingArguments` parses flags without
importing TensorFlow.
"""

import typing

from tensorfx import _lazy

# Type checkers and IDEs see the names here; at run time they are imported
# on first use by __getattr__ below.
if typing.TYPE_CHECKING:
  from tensorfx.embeddings._args import EmbeddingArguments
  from tensorfx.embeddings._optimizers import LazyAdam
  from tensorfx.embeddings._optimizers import SparseAdagrad
  from tensorfx.embeddings._optimizers import SparseFtrl
  from tensorfx.embeddings._optimizers import build_sparse_optimizer
  from tensorfx.embeddings._table import COMBINERS
  from tensorfx.embeddings._table import EmbeddingTable
  from tensorfx.embeddings._table import find_tables
  from tensorfx.embeddings._together import lookup_tables

_EXPORTS = {
  'COMBINERS': 'tensorfx.embeddings._table',
  'EmbeddingArguments': 'tensorfx.embeddings._args',
  'EmbeddingTable': 'tensorfx.embeddings._table',
  'LazyAdam': 'tensorfx.embeddings._optimizers',
  'SparseAdagrad': 'tensorfx.embeddings._optimizers',
  'SparseFtrl': 'tensorfx.embeddings._optimizers',
  'build_sparse_optimizer': 'tensorfx.embeddings._optimizers',
  'find_tables': 'tensorfx.embeddings._table',
  'lookup_tables': 'tensorfx.embeddings._together',
}

__all__ = [
  'COMBINERS',
  'EmbeddingArguments',
  'EmbeddingTable',
  'LazyAdam',
  'SparseAdagrad',
  'SparseFtrl',
  'build_sparse_optimizer',
  'find_tables',
  'lookup_tables',
]


# Hidden from type checkers, so a misspelt name is an error there.
if not typing.TYPE_CHECKING:
  __getattr__, __dir__ = _lazy.exports(globals(), _EXPORTS)
