"""Fault injection: kill this process at a named point, for tests.

The writes that must survive a kill (checkpoint choices, the exported
model, `job.yaml`, the evaluator's records, the analysis) call
`point(NAME)` at the moment a kill would hurt most: after the new version
is half written, before it is moved into place. With
`TENSORFX_FAULT=NAME` in the environment the process sends itself SIGKILL
there, so a test can kill a real process at a known point and check what
the next run finds; `NAME:N` kills at the N-th time the point is reached.
Unset (always, outside tests), `point` costs one dictionary lookup.

Example:
  >>> os.environ['TENSORFX_FAULT'] = 'export.written'  # doctest: +SKIP
  >>> _export.export(...)    # the process dies before the model is in place
"""

import os
import signal

VARIABLE = 'TENSORFX_FAULT'

_reached = {}


def point(name):
  """Kills the process (SIGKILL) if `TENSORFX_FAULT` names this point."""
  wanted = os.environ.get(VARIABLE)
  if not wanted:
    return
  target, _, count = wanted.partition(':')
  if target != name:
    return
  _reached[name] = _reached.get(name, 0) + 1
  if _reached[name] >= int(count or 1):
    os.kill(os.getpid(), signal.SIGKILL)
