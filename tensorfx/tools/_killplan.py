"""The kill plan of a fault drill: which task dies, at which step, how.

`tensorfx chaos --kill ROLE[@STEP][:SIGNAL]` names one kill:

- ROLE: `chief`; `worker-N`, `ps-N` or `evaluator` of a `--cluster` (or
  `worker`, `ps`: one of them, drawn); `job`: every task at once (a
  machine lost under a single-node run, a cluster lost as a whole);
- STEP: the global step, or `random` (the default): drawn from the
  drill's seed between a tenth and nine tenths of the trainer's
  `--max-steps`;
- SIGNAL: `KILL` (the default; SIGKILL, a crash or a lost machine) or
  `TERM` (SIGTERM, a preemption: the task may save first).

`--random-kills N` adds N kills of drawn roles, steps and signals.

Example:
  >>> plan = parse(['chief@120:TERM', 'worker'], {'chief': 1, 'worker': 2,
  ...     'ps': 1, 'evaluator': 0}, max_steps=600, random_kills=1, seed=3)
  >>> [str(k) for k in plan]      # doctest: +SKIP
  ['chief SIGTERM at step 120', 'worker-1 SIGKILL at step 377', ...]
"""

import dataclasses
import random
import re
import signal

from tensorfx._errors import ConfigurationError

_SPEC = re.compile(
  r'^(?P<role>[a-z]+(?:-\d+)?)(?:@(?P<step>\d+|random))?'
  r'(?::(?P<signal>KILL|TERM))?$'
)
_SIGNALS = {'KILL': signal.SIGKILL, 'TERM': signal.SIGTERM}


@dataclasses.dataclass
class Kill:
  """One kill of the plan.

  Attributes:
    role: the task killed (`chief`, `worker-0`, `ps-0`, `evaluator`), or
      `job` for every task at once.
    step: the global step it is due at.
    signum: `signal.SIGKILL` or `signal.SIGTERM`.
  """

  role: str
  step: int
  signum: int

  @property
  def signal_name(self):
    return signal.Signals(self.signum).name

  def __str__(self):
    return f'{self.role} {self.signal_name} at step {self.step}'


def parse(specs, counts, max_steps, random_kills=0, seed=0):
  """The kill plan of `--kill` specs and `--random-kills`, by step.

  Args:
    specs: the `--kill` values.
    counts: the job's tasks by kind (`_launch.parse_cluster`'s; a single
      node is `{'chief': 1}`).
    max_steps: the trainer's `--max-steps` (None when not given).
    random_kills: how many kills to draw besides.
    seed: the seed of every draw.

  Returns:
    The `Kill`s, sorted by step.

  Raises:
    ConfigurationError: naming the spec that is wrong and what is allowed.
  """
  rng = random.Random(seed)
  tasks = _tasks(counts)
  kills = []
  for spec in specs:
    match = _SPEC.match(spec.strip())
    if match is None:
      raise ConfigurationError(
        f'--kill takes ROLE[@STEP][:SIGNAL], e.g. chief@120:TERM or '
        f'worker-0@300; SIGNAL is KILL or TERM. Received: {spec!r}'
      )
    role = _role(match['role'], tasks, rng, spec)
    step = match['step']
    kills.append(
      Kill(
        role,
        _draw_step(rng, max_steps, spec)
        if step in (None, 'random')
        else int(step),
        _SIGNALS[match['signal'] or 'KILL'],
      )
    )
  # One kill of a task at a step: a second would find it gone (and the
  # chief's own kills are told apart by their step).
  taken: dict[tuple[str, int], Kill] = {}
  for kill in kills:
    if (kill.role, kill.step) in taken:
      raise ConfigurationError(
        f'--kill: {taken[kill.role, kill.step]} and {kill} kill {kill.role} '
        'at the same step; give one of them another step'
      )
    taken[kill.role, kill.step] = kill
  for _ in range(random_kills):
    while True:
      kill = Kill(
        rng.choice(tasks),
        _draw_step(rng, max_steps, f'--random-kills {random_kills}'),
        rng.choice(list(_SIGNALS.values())),
      )
      if (kill.role, kill.step) not in taken or len(taken) > 10 * max_steps:
        break
    taken[kill.role, kill.step] = kill
    kills.append(kill)
  return sorted(kills, key=lambda k: k.step)


def _tasks(counts):
  """The task names of a job, the chief first."""
  names = ['chief']
  for kind in ('worker', 'ps'):
    names += [f'{kind}-{i}' for i in range(counts.get(kind, 0))]
  if counts.get('evaluator'):
    names.append('evaluator')
  return names


def _role(role, tasks, rng, spec):
  if role in ('job', *tasks):
    return role
  if role in ('worker', 'ps'):
    found = [t for t in tasks if t.startswith(role + '-')]
    if found:
      return rng.choice(found)
  raise ConfigurationError(
    f'--kill {spec}: this job has no {role!r}; its tasks are '
    f'{", ".join(tasks)} (or job, for all of them at once)'
    + ('' if len(tasks) > 1 else '; kill other roles under --cluster')
  )


def _draw_step(rng, max_steps, spec):
  if not max_steps:
    raise ConfigurationError(
      f"{spec}: random kill steps are drawn below the trainer's "
      '--max-steps; give it (--max-steps 600), or a step per kill '
      '(--kill chief@120)'
    )
  low, high = max(1, max_steps // 10), max(1, (9 * max_steps) // 10)
  return rng.randint(low, max(low, high))


def max_steps_of(argv):
  """The trainer's `--max-steps` in `argv` (its last), or None."""
  found = flag_value(argv, '--max-steps')
  try:
    return int(found) if found is not None else None
  except ValueError:
    return None


def flag_value(argv, flag):
  """The last value `argv` gives the trainer's `flag`, or None."""
  found = None
  for i, arg in enumerate(argv):
    if arg == flag and i + 1 < len(argv):
      found = argv[i + 1]
    elif arg.startswith(flag + '='):
      found = arg.split('=', 1)[1]
  return found


def flag_given(argv, flag):
  """Whether `argv` gives the trainer `flag` (alone or as `flag=VALUE`)."""
  return any(a == flag or a.startswith(flag + '=') for a in argv)
