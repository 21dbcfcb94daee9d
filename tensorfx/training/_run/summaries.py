"""TensorBoard summaries: `summaries/train`, `summaries/eval` and the run's."""

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
        tf.summary.scalar(name, value, step=step)

  def text(self, phase, step, name, markdown):
    """Writes Markdown text (TensorBoard's Text tab) for `phase`."""
    with self._writer(phase).as_default():
      tf.summary.text(name, markdown, step=step)

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
