"""TensorBoard: training and validation scalars, and the training graph."""

from typing import Any

from tensorfx.training._callbacks import base
from tensorfx.training._evaluation import slices as _slices
from tensorfx.training._settings import targets as _targets


class TensorBoardCallback(base.Callback):
  """Writes `summaries/train` and `summaries/eval[_TARGET]` for TensorBoard.

  Training scalars (loss, examples/s, steps/s, learning rate, gradient
  norm) at each log interval; each validation target's metrics at each validation; the
  training loop's graph once training has started (the Graphs tab).
  """

  def __init__(self) -> None:
    super().__init__()
    self._graph_written = False

  def on_step_end(self, step: int, logs: dict[str, Any]) -> None:
    summaries = self.context.summaries
    summaries.scalars(
      'train',
      step,
      {k: v for k, v in logs.items() if isinstance(v, (int, float))},
    )
    if not self._graph_written:
      # After the line of the first step (which this waits for): the
      # graph is traced by then.
      self._graph_written = True
      trace = self.context.training_graph
      if trace is not None:
        summaries.graph('train', trace())

  def on_evaluate_end(self, step: int, results: Any) -> None:
    summaries = self.context.summaries
    for name, values in results.items():
      summaries.scalars(
        _targets.summaries_dir(name),
        step,
        {k: v for k, v in values.items() if isinstance(v, (int, float))},
      )
    for name, slices in getattr(results, 'slices', {}).items():
      # --eval-slices: eval/slice/FIELD=VALUE/METRIC beside the target's.
      directory = _targets.summaries_dir(name)
      for label, entry in slices.items():
        summaries.scalars(
          directory, step, _slices.scalars(directory, label, entry)
        )
    summaries.flush()
