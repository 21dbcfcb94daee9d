"""Where a job's outputs go when Vertex AI says where they should go.

A Vertex AI CustomJob with a base output directory (`--job-dir`) tells each
process where to write through environment variables:

- `AIP_MODEL_DIR`: the exported model (`JOB_DIR/model/`),
- `AIP_CHECKPOINT_DIR`: checkpoints (`JOB_DIR/checkpoints/`),
- `AIP_TENSORBOARD_LOG_DIR`: TensorBoard summaries (`JOB_DIR/logs/`).

During hyperparameter tuning each trial gets its own directories
(`JOB_DIR/TRIAL_ID/model/`, ...), so trials never overwrite each other even
though they all receive the same `--job-dir` argument. Outside Vertex the
variables are unset and the usual tensorfx layout under `--output` applies.
"""

import os

MODEL_DIR = 'AIP_MODEL_DIR'
CHECKPOINT_DIR = 'AIP_CHECKPOINT_DIR'
TENSORBOARD_LOG_DIR = 'AIP_TENSORBOARD_LOG_DIR'

# tensorfx's own layout under the output directory, and the variable that
# overrides each entry.
_LAYOUT = (
  ('model', 'model', MODEL_DIR),
  ('checkpoints', 'checkpoints', CHECKPOINT_DIR),
  ('summaries', 'summaries', TENSORBOARD_LOG_DIR),
)


def _join(base, name):
  # URIs (gs://, ram://) always use '/'; local paths use the OS separator.
  if '://' in base:
    return f'{base.rstrip("/")}/{name}'
  return os.path.join(base, name)


def output_dirs(output, environ=None):
  """The model, checkpoint and summary directories of a job.

  Each directory is the one Vertex AI names in its `AIP_*` variable when
  that is set, else the tensorfx layout under `output`.

  Example:
    >>> output_dirs('gs://b/iris', environ={})['model']
    'gs://b/iris/model'
    >>> output_dirs('gs://b/iris', environ={
    ...     'AIP_MODEL_DIR': 'gs://b/iris/7/model/'})['model']
    'gs://b/iris/7/model'

  Args:
    output: the job's output directory (`--output`/`--job-dir`), local or a
      URI.
    environ: the environment to read; by default `os.environ`.

  Returns:
    A dict with keys 'model', 'checkpoints' and 'summaries'. Paths have no
    trailing '/'.
  """
  environ = os.environ if environ is None else environ
  base = os.fspath(output)
  dirs = {}
  for key, name, variable in _LAYOUT:
    given = environ.get(variable, '').strip()
    if given:
      # Vertex writes 'gs://.../model/'; strip so every path looks alike.
      dirs[key] = given.rstrip('/') or given
    else:
      dirs[key] = _join(base, name)
  return dirs
