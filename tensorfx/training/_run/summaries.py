"""TensorBoard summaries: `summaries/train`, `summaries/eval` and the run's.

Scalars and text are written with `tf.summary.write` and the metadata
TensorBoard's scalar and text plugins read, not with `tf.summary.scalar`
and `tf.summary.text`: those import `tensorboard.summary` (its every
plugin, and boto3), about 0.3 s of each training process's start.
"""

import functools
import os

import tensorflow as tf


class Summaries:
  """Writes scalars (and the training graph) for TensorBoard.

  A phase is a subdirectory of `summaries/` (a run of TensorBoard's);
  the phase '' is `summaries/` itself, where the run's hyperparameters go.

  Args:
    directory: the job's `summaries/` directory.
  """

  def __init__(self, directory):
    self._writers = {}
    self._directory = directory

  @property
  def directory(self):
    """The job's `summaries/` directory."""
    return self._directory

  def _writer(self, phase):
    if phase not in self._writers:
      self._writers[phase] = tf.summary.create_file_writer(
        os.path.join(self._directory, phase) if phase else self._directory
      )
    return self._writers[phase]

  def as_default(self, phase):
    """The writer of `phase` as the default, for `tf.summary` calls."""
    return self._writer(phase).as_default()

  def scalars(self, phase, step, values):
    """Writes `values` (name -> number) for `phase` at `step`."""
    with self._writer(phase).as_default():
      for name, value in values.items():
        with tf.summary.experimental.summary_scope(name, 'scalar_summary') as (
          tag,
          _,
        ):
          tf.summary.write(
            tag, tf.cast(value, tf.float32), step=step, metadata=_scalar()
          )

  def text(self, phase, step, name, markdown):
    """Writes Markdown text (TensorBoard's Text tab) for `phase`."""
    with self._writer(phase).as_default():
      with tf.summary.experimental.summary_scope(name, 'text_summary') as (
        tag,
        _,
      ):
        tf.summary.write(
          tag, tf.constant(markdown, tf.string), step=step, metadata=_text()
        )

  def graph(self, phase, graph):
    """Writes a `tf.Graph` so TensorBoard's Graphs tab shows it."""
    if graph is None:
      return
    with self._writer(phase).as_default():
      tf.summary.graph(graph)

  def flush(self):
    for writer in self._writers.values():
      writer.flush()

  def close(self):
    for writer in self._writers.values():
      writer.close()
    self._writers.clear()


@functools.cache
def _scalar():
  """The metadata of a value TensorBoard's Scalars tab shows."""
  from tensorboard.plugins.scalar import plugin_data_pb2

  return _metadata('scalars', plugin_data_pb2.ScalarPluginData(version=0))


@functools.cache
def _text():
  """The metadata of a Markdown string TensorBoard's Text tab shows."""
  from tensorboard.plugins.text import plugin_data_pb2

  return _metadata('text', plugin_data_pb2.TextPluginData(version=0))


def _metadata(plugin, content):
  """The metadata the plugin's own summary op writes.

  It has no data class: TensorBoard tells it from the plugin's name.
  """
  from tensorboard.compat.proto import summary_pb2

  return summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(
      plugin_name=plugin, content=content.SerializeToString()
    )
  ).SerializeToString()
