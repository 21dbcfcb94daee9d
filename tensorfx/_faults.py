"""Fault injection: kill this process at a named point, for tests.

The writes that must survive a kill (checkpoint state, the exported model,
`job.yaml`, the evaluator's records, the analysis) call `point(NAME)` at
the moment a kill would hurt most: halfway through writing the new
version, or after it is written and before it is moved into place. With
`TENSORFX_FAULT=NAME` in the environment the process sends itself SIGKILL
there, so a test can kill a real process at a known point and check what
the next run finds:

- `NAME:N` kills the N-th time the point is reached (a point that counts
  for itself, the training step, at its N-th step);
- `NAME:N:TERM` sends SIGTERM instead (a preemption);
- several items, comma-separated (of one point or several), each kill
  once;
- with `TENSORFX_FAULT_ONCE=DIR`, an item that killed a process leaves a
  file in DIR and kills no other process (a task restarted with the same
  environment goes on, to the next item). `tensorfx chaos` kills at
  chosen steps this way.

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


def counts(name):
  """The N of each `NAME:N` that names `name` (where a caller stops to call)."""
  return [int(count or 1) for count, _ in _items(name)]


def point(name, reached=None):
  """Kills the process if `TENSORFX_FAULT` names this point.

  Args:
    name: the point.
    reached: how many times it is reached, for a point that counts for
      itself (the training step); None: this call counts one more.
  """
  items = _items(name) if name else []
  if reached is None and items:
    _reached[name] = _reached.get(name, 0) + 1
  reached_now = _reached.get(name, 0) if reached is None else reached
  for count, signum in items:
    if reached_now < int(count or 1):
      continue
    once = os.environ.get(ONCE)
    if once:
      # One marker per item: each of several kills of a point fires once.
      marker = os.path.join(once, f'{name}:{count or 1}')
      if os.path.exists(marker):
        continue
      with open(marker, 'w', encoding='utf-8') as f:
        f.write(f'{os.getpid()}\n')
    os.kill(os.getpid(), signum)
    return


def _items(name):
  """`[(N, signal)]` of the items of `TENSORFX_FAULT` that name `name`."""
  wanted = os.environ.get(VARIABLE)
  if not wanted:
    return []
  items = []
  for item in wanted.split(','):
    target, _, rest = item.strip().partition(':')
    if target != name:
      continue
    count, _, kind = rest.partition(':')
    items.append((count, signal.SIGTERM if kind == 'TERM' else signal.SIGKILL))
  return items
