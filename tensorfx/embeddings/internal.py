"""The tables' internals that tensorfx's training engine uses; not public API.

Used by `tensorfx.training`: the engine's training step and graph
(`replicas`: how replicas of one process exchange a table's gradients and
keys), its warm start and model summary (`sharding`: the parts of a
variable split over parameter servers), and the training run (`expansion`:
the rows a table had grown to before a restart). Users' code reads tables
through `tensorfx.embeddings` (`EmbeddingTable`, `find_tables`).
"""

from tensorfx.embeddings import _expansion as expansion
from tensorfx.embeddings import _replicas as replicas
from tensorfx.embeddings import _sharding as sharding

__all__ = ['expansion', 'replicas', 'sharding']
