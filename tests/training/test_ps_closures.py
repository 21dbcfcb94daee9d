"""Parameter servers: how a call's steps become the workers' closures.

A call ends by joining every worker, so its closures are as even as they
can be, in rounds of one per worker: no worker waits on another's extra
closure, and none is longer than `--steps-per-closure`.
"""

import pytest

from tensorfx.training._engine.ps_loop import closure_steps


@pytest.mark.parametrize(
  'steps,per_closure,workers',
  [
    (50, 10, 2),
    (20, 10, 2),
    (3, 10, 2),
    (1, 10, 4),
    (100, 10, 3),
    (7, 10, 1),
    (99, 7, 5),
    (10, 1, 3),
  ],
)
def test_closures_are_even_in_rounds_of_the_workers(
  steps, per_closure, workers
):
  sizes = closure_steps(steps, per_closure, workers)
  assert sum(sizes) == steps
  assert min(sizes) >= 1 and max(sizes) <= per_closure
  assert max(sizes) - min(sizes) <= 1
  # Whole rounds, unless there are fewer steps than workers.
  assert len(sizes) % workers == 0 or len(sizes) == steps


def test_a_window_of_50_steps_on_two_workers_is_six_closures_not_five():
  # Five closures of 10 would leave one worker idle for a whole closure.
  assert closure_steps(50, 10, 2) == [9, 9, 8, 8, 8, 8]
  assert closure_steps(20, 10, 2) == [10, 10]


def test_no_steps_no_closures():
  assert closure_steps(0, 10, 2) == []
