"""The command line that runs a trainer in a child process.

`tensorfx train --module MODULE --output DIR ...` with this process's
Python: what each task of a local cluster runs (`tools._launch`), what the
fault drill runs (`tools._chaos`), and what each local tuning trial runs
(`tuning._trialrun`).
"""

import sys


def train_command(module, output, rest=()):
  """The argv of `tensorfx train` for `module`, writing to `output`.

  Example:
    >>> train_command('trainer', '/tmp/job', ['--max-steps', '100'])[1:]
    ['-m', 'tensorfx', 'train', '--module', 'trainer', '--output', '/tmp/job', '--max-steps', '100']

  Args:
    module: the trainer (a module name, or a .py path).
    output: the job's output directory.
    rest: the flags after them (the launcher's, then the trainer's).
  """
  return [
    sys.executable,
    '-m',
    'tensorfx',
    'train',
    '--module',
    module,
    '--output',
    output,
    *rest,
  ]
