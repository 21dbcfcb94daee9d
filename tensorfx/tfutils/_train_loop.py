"""`train_params['train_loop']`: tfutils' custom inner loop, one step a call.

tfutils let a user replace the inner loop with `func(sess, train_targets,
**loop_params)`, called for each step, `train_targets` a list of one dict
per model: it ran `sess.run(train_targets)` (and whatever else it wanted
around it) and returned the results, a list too. Here the
engine's loop still runs (guards, checkpoints, validation, callbacks
around every step), with one step per call, and calls the function at each
step with a `StepSession` as `sess` and a list of one dict (one model):
`sess.run(train_targets)` runs the engine's training step and returns the
targets' values in the same structure (`loss`,
`learning_rate`, `train_params['targets']`'s names; `optimizer` is None,
as the value of an update op was).
"""

from collections.abc import Callable
import dataclasses
from typing import Any

from tensorfx._errors import ConfigurationError
from tensorfx.tfutils import _functions
from tensorfx.training import internal as _training


@dataclasses.dataclass(frozen=True)
class TrainTarget:
  """A name in `train_targets`, fetched by `StepSession.run`."""

  name: str


class StepSession:
  """The `sess` a custom train_loop receives: `run` runs a training step.

  Example:
    >>> def train_loop(sess, train_targets, **loop_params):
    ...   results = sess.run(train_targets)   # one engine step
    ...   return results                       # [{'loss': ..., ...}]
    >>> train_params['train_loop'] = {'func': train_loop}

  Args:
    steps: the engine's `steps(num_steps) -> StepResult`.
    values: `values(result) -> dict` of the targets after a step.
    where: the path of the loop function, for errors.
  """

  def __init__(
    self,
    steps: Callable[[int], _training.loop.StepResult],
    values: Callable[[_training.loop.StepResult], dict[str, Any]],
    where: str,
  ):
    self._steps = steps
    self._values = values
    self._where = where
    self.results: list[_training.loop.StepResult] = []

  def run(
    self, fetches: Any, feed_dict: dict | None = None, **kwargs: Any
  ) -> Any:
    """Runs one training step; returns `fetches` with their values.

    Args:
      fetches: `train_targets`, some of its values, or a list or dict of
        them.
      feed_dict: not supported (there are no placeholders).
      **kwargs: `options`, `run_metadata`: ignored.

    Raises:
      ConfigurationError: a feed_dict, or a fetch that is not a training
        target.
    """
    del kwargs
    if feed_dict:
      raise ConfigurationError(
        f'{self._where}: sess.run(feed_dict=...) has no equivalent: the '
        'data function feeds the step.'
      )
    if self.results and self.results[-1].bad_loss:
      # The guards decide what follows a bad loss, before another step.
      return _fetch(fetches, self._values(self.results[-1]), self._where)
    result = self._steps(1)
    self.results.append(result)
    return _fetch(fetches, self._values(result), self._where)


def wrap(
  steps: Callable[[int], _training.loop.StepResult],
  function: _functions.Function,
  values: Callable[[_training.loop.StepResult], dict[str, Any]],
  names: list[str],
) -> Callable[[int], _training.loop.StepResult]:
  """The engine's steps, each call driven by the user's train_loop.

  Args:
    steps: the engine's step function.
    function: `train_params['train_loop']` (`func` and its keys).
    values: the targets' values after a step.
    names: the names in the model's dict of `train_targets`.

  Returns:
    `steps(num_steps) -> StepResult` running one call of the function.
  """
  targets = {name: TrainTarget(name) for name in names}

  def run(num_steps: int) -> _training.loop.StepResult:
    del num_steps  # One step per call (--steps-per-loop 1).
    session = StepSession(steps, values, function.where)
    # A list of one dict per model, as tfutils gave it (one model here).
    function.func(session, [dict(targets)], **function.kwargs)
    if not session.results:
      raise ConfigurationError(
        f"{function.where}['func'] ran no training step: call "
        'sess.run(train_targets) in it once per call.'
      )
    last = session.results[-1]
    return _training.loop.StepResult(
      step=last.step,
      ran=sum(r.ran for r in session.results),
      loss=last.loss,
      bad_loss=any(r.bad_loss for r in session.results),
    )

  return run


def _fetch(fetches: Any, values: dict[str, Any], where: str) -> Any:
  if isinstance(fetches, TrainTarget):
    return values.get(fetches.name)
  if isinstance(fetches, str) and fetches in values:
    return values[fetches]
  if isinstance(fetches, dict):
    return {k: _fetch(v, values, where) for k, v in fetches.items()}
  if isinstance(fetches, (list, tuple)):
    return type(fetches)(_fetch(v, values, where) for v in fetches)
  raise ConfigurationError(
    f"{where}['func']: sess.run fetches the training targets (the "
    'train_targets it receives, or their names); there is no graph to '
    f'run other operations in. Received: {fetches!r}'
  )
