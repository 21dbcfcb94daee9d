"""JobLayout: every path a job reads and writes, built in one place.

Training, the evaluator task, `tensorfx evaluate [--follow]` and `tensorfx
export` all take their paths from one `JobLayout`: the tensorfx layout
under the output directory, with the model, checkpoint and summary
directories Vertex AI names (`AIP_MODEL_DIR`, `AIP_CHECKPOINT_DIR`,
`AIP_TENSORBOARD_LOG_DIR`, per trial when tuning) where it names them.
"""

import dataclasses
import os
from typing import Dict, Mapping, Optional

from tensorfx import _jobdirs


@dataclasses.dataclass(frozen=True)
class JobLayout:
  """Where a job's outputs are.

  Example:
    >>> layout = JobLayout.of('/tmp/job', environ={})
    >>> layout.checkpoints, layout.evaluations
    ('/tmp/job/checkpoints', '/tmp/job/evaluations')

  Attributes:
    output: the job's output directory.
    checkpoints: the checkpoints (`AIP_CHECKPOINT_DIR`).
    model: the exported model (`AIP_MODEL_DIR`).
    summaries: the TensorBoard summaries (`AIP_TENSORBOARD_LOG_DIR`).
    analysis: the analysis of the training data (shared by all tasks).
    job: the job record, `job.yaml`.
    evaluations: the results of `tensorfx evaluate`, one file each.
    best_model: the evaluator's export of the best model, beside `model`.
    evaluator_state: what the evaluator has evaluated.
    grown_tables: the rows each embedding table that grew under parameter
      servers starts with, beside the checkpoints.
    scratch: a worker's own directory, removed at its end (None for the
      chief, which writes the job's outputs).
  """

  output: str
  checkpoints: str
  model: str
  summaries: str
  analysis: str
  job: str
  evaluations: str
  best_model: str
  evaluator_state: str
  grown_tables: str
  scratch: Optional[str] = None

  @classmethod
  def of(
    cls,
    output: str,
    worker: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
  ) -> 'JobLayout':
    """The layout of the job in `output`.

    Args:
      output: the job's output directory (local or a URI).
      worker: a worker that is not the chief (`'worker-1'`): it writes
        under `output/.workers/WORKER`, a scratch directory, and never to
        the directories Vertex AI names.
      environ: the environment to read `AIP_*` from; `os.environ` by
        default.
    """
    output = os.fspath(output)
    base = (
      output if worker is None else os.path.join(output, '.workers', worker)
    )
    dirs = _jobdirs.output_dirs(base, environ=environ if worker is None else {})
    return cls(
      output=output,
      checkpoints=dirs['checkpoints'],
      model=dirs['model'],
      summaries=dirs['summaries'],
      analysis=os.path.join(output, 'analysis'),
      job=os.path.join(base, 'job.yaml'),
      evaluations=os.path.join(output, 'evaluations'),
      best_model=os.path.join(os.path.dirname(dirs['model']), 'best_model'),
      evaluator_state=os.path.join(dirs['summaries'], 'eval', 'evaluated.json'),
      grown_tables=os.path.join(dirs['checkpoints'], 'grown_tables.json'),
      scratch=None if worker is None else base,
    )

  def paths(self) -> Dict[str, str]:
    """The paths callbacks read (`RunContext.paths`)."""
    return {
      'checkpoints': self.checkpoints,
      'model': self.model,
      'summaries': self.summaries,
      'analysis': self.analysis,
      'job': self.job,
      'evaluations': self.evaluations,
      'grown_tables': self.grown_tables,
    }
