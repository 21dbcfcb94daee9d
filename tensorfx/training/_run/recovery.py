"""The steps a job ran again after failures: logged, and in `job.yaml`.

Steps run again in two ways:

- a chief that went down (killed, its machine lost, a parameter server
  lost) is started again and resumes from the last checkpoint: the steps
  the run before had reached past it run again. The chief writes its step
  into `job.yaml` as it trains (at log intervals, at most once a second,
  and at each checkpoint), so the next run knows how far the last got;
- under parameter servers, a worker lost with a closure in flight: the
  closure runs again on another worker, with the steps it had applied
  (`_engine.ps_loop` counts them), and the chief goes on.

Each event is logged when it is found, and `job.yaml` keeps them all,
across restarts, under `recovery`:

    recovery:
      steps_again: 57
      events:
      - {event: resumed, from_step: 400, reached_step: 450, steps_again: 50}
      - {event: worker lost, step: 980, steps_again: 7}

The figure for a restart is a floor: the steps past the last write (under
a second of training, or one log interval) are not known.
"""

import time

from tensorfx._logging import logger
from tensorfx.training._callbacks.base import Callback

# The most of a run's time the step's writes may take: they are spaced out
# to keep to it.
_SHARE = 0.02

# The statuses of a run that ended without finishing: its step is where a
# restart's steps run again from.
_UNFINISHED = ('running', 'failed', 'interrupted')


class Recovery:
  """The events of one job that made steps run again, kept in `job.yaml`.

  Args:
    record: the run's `JobRecord`.
    earlier: the record the job's last run left (a dict; {} for none).

  Example:
    >>> recovery = Recovery(record, cluster.job_record(path) or {})
    >>> record.write(**recovery.carried())
    >>> recovery.resumed(400, restored=True)  # the last reached 450: logs 50
    >>> recovery.fields()['recovery']['steps_again']
    50
  """

  def __init__(self, record, earlier):
    self._record = record
    kept = earlier.get('recovery') or {}
    self.events = list(kept.get('events') or [])
    self._reached = (
      earlier.get('global_step')
      if earlier.get('status') in _UNFINISHED
      else None
    )

  @property
  def steps_again(self):
    """The steps run again, in all the job's runs so far."""
    return sum(int(e.get('steps_again', 0)) for e in self.events)

  def fields(self):
    """`job.yaml`'s `recovery` field ({} when nothing ran again)."""
    if not self.events:
      return {}
    return {
      'recovery': {'steps_again': self.steps_again, 'events': self.events}
    }

  def carried(self):
    """The fields a new run's record starts with: the job's so far.

    The events, and the step the run before reached when it did not
    finish: a run that dies before it writes its own keeps both for the
    next.
    """
    fields = self.fields()
    if isinstance(self._reached, int):
      fields['global_step'] = self._reached
    return fields

  def resumed(self, step, restored=True):
    """This run starts at `step`: counts what the run before did past it.

    Args:
      step: the global step it starts at.
      restored: whether it restored a checkpoint (else it starts afresh).
    """
    reached = self._reached
    if isinstance(reached, int) and reached > step:
      start = (
        f'Resumed at step {step}'
        if restored
        else f'Started again at step {step}, with no checkpoint to resume'
      )
      self._add(
        {
          'event': 'resumed',
          'from_step': step,
          'reached_step': reached,
          'steps_again': reached - step,
        },
        f'{start}; the run before reached step {reached}: '
        f'{reached - step} steps run again',
      )

  def workers_lost(self, step, steps):
    """A lost worker's closures ran `steps` steps again, by `step`."""
    self._add(
      {'event': 'worker lost', 'step': step, 'steps_again': steps},
      None,  # `_engine.ps_loop` logged it as it happened.
    )

  def _add(self, event, message):
    self.events.append(event)
    if message:
      logger.warning('%s (%d in this job)', message, self.steps_again)
    self._record.progress(**self.fields())


class ProgressCallback(Callback):
  """Writes the chief's step into `job.yaml` as it trains.

  At log intervals and at each checkpoint, on the chief, with the steps a
  lost worker's closures ran again (`engine.run.steps_again`) added to the
  job's `recovery`. At log intervals at most once every `every_secs`, and
  never more often than keeps the writes to `_SHARE` of the run's time: a
  rewrite of `job.yaml` takes about a millisecond on a local disk (once a
  second), a tenth of a second or more on an object store (then once
  every few seconds).

  Args:
    record: the run's `JobRecord`.
    recovery: the job's `Recovery`.
    run: the engine's run-time state (its `steps_again` count).
    every_secs: the least time between two writes at log intervals.
  """

  def __init__(self, record, recovery, run, every_secs=1.0):
    super().__init__()
    self._record = record
    self._recovery = recovery
    self._run = run
    self._every = every_secs
    self._written = None
    self._counted = run.steps_again

  def on_step_end(self, step, logs):
    if self._written is None or time.monotonic() - self._written >= self._every:
      self._write(step)

  def on_checkpoint(self, step, path):
    self._write(step)

  def _write(self, step):
    start = time.monotonic()
    again = self._run.steps_again - self._counted
    if again > 0:
      self._counted = self._run.steps_again
      self._recovery.workers_lost(step, again)
    self._record.progress(global_step=step)
    self._written = time.monotonic()
    self._every = max(self._every, (self._written - start) / _SHARE)
