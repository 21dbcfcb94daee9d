"""`--action evaluate --follow`: the evaluator task, run as a command.

Gematria runs continuous evaluation as its own binary beside training
(`--gematria_action=eval`). `tensorfx evaluate --follow` is that: the
engine of the evaluator task (`EvaluatorRun`), with its state file (each
checkpoint evaluated once, across restarts), its summaries, best model and
best checkpoints, printing each evaluation as one JSON line, until the job
records its end in `job.yaml` (completed, failed or interrupted).
"""

import json
import os

from tensorfx.training import _callbacks
from tensorfx.training._cluster.config import Configuration
from tensorfx.training._run import actions as _actions
from tensorfx.training._run import evaluator as _evaluator


class PrintResults(_callbacks.Callback):
  """Prints each evaluation as a JSON line and writes it to `evaluations/`.

  Runs after each checkpoint is evaluated, in the following process; the
  line is what `tensorfx evaluate` prints for one checkpoint:
  `{"checkpoint", "step", "results": {TARGET: {METRIC: value}}}`, with
  `"slices": {TARGET: {LABEL: {"examples", "flagged", "metrics"}}}` under
  `--eval-slices`.
  """

  def on_evaluate_end(self, step, results):
    name = f'ckpt-{step}'
    summary = {
      'checkpoint': os.path.join(self.context.paths['checkpoints'], name),
      'step': step,
      'results': {target: dict(values) for target, values in results.items()},
    }
    if getattr(results, 'slices', None):
      summary['slices'] = results.slices
    _actions.write_evaluation(self.context.paths['evaluations'], summary)
    print(json.dumps(summary), flush=True)


def follow(builder, output, callbacks=(), poll_secs=1.0, timeout_secs=300.0):
  """Evaluates each new checkpoint of the job in `output` until it ends.

  A job that has already ended when this starts has its remaining
  checkpoints evaluated, then the call returns. Ctrl-C (KeyboardInterrupt)
  stops it; the checkpoints evaluated so far stay recorded.

  Args:
    builder: the `ModelBuilder`, with the job's arguments and dataset.
    output: the job's output directory.
    callbacks: the user's callbacks.
    poll_secs: seconds between looks for new checkpoints.
    timeout_secs: how long to wait for the job's analysis.

  Returns:
    The evaluator's state: `evaluated` (steps), `best`, `best_step`.
  """
  run = _evaluator.EvaluatorRun(
    builder,
    output,
    Configuration.local(),
    poll_secs=poll_secs,
    timeout_secs=timeout_secs,
    callbacks=[*callbacks, PrintResults()],
    since=0.0,
  )
  return run.run()
