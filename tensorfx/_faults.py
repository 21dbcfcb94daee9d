"""Fault injection: kill this process at a named point, for tests.

The writes that must survive a kill (checkpoint state, the exported model,
`job.yaml`, the evaluator's records, the analysis) call `point(NAME)` at
the moment a kill would hurt most: halfway through writing the new
version, or after it is written and before it is moved into place. With
`TENSORFX_FAULT=NAME` in the environment the process sends itself SIGKILL
there, so a test can kill a real process at a known point and check what
the next run finds:

- `NAME:N` kills the N-th time the point is reached;
- several points, comma-separated, each kill once;
- with `TENSORFX_FAULT_ONCE=DIR`, a point that killed a process leaves a
  file in DIR and kills no other process (a task restarted with the same
  environment goes on).

Unset (always, outside tests), `point` costs one dictionary lookup.

Example:
  >>> os.environ['TENSORFX_FAULT'] = 'export.model.written'  # doctest: +SKIP
  >>> _export.export(...)    # the process dies before the model is in place
"""

import os
import signal

VARIABLE = 'TENSORFX_FAULT'
ONCE = 'TENSORFX_FAULT_ONCE'

_reached: dict[str, int] = {}


def point(name):
  """Kills the process (SIGKILL) if `TENSORFX_FAULT` names this point."""
  wanted = os.environ.get(VARIABLE)
  if not wanted or not name:
    return
  for item in wanted.split(','):
    target, _, count = item.strip().partition(':')
    if target != name:
      continue
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] < int(count or 1):
      return
    once = os.environ.get(ONCE)
    if once:
      marker = os.path.join(once, name)
      if os.path.exists(marker):
        return
      with open(marker, 'w', encoding='utf-8') as f:
        f.write(f'{os.getpid()}\n')
    os.kill(os.getpid(), signal.SIGKILL)
