"""A fault drill: the user's job run to its end under a kill plan, watched.

The drill starts the job's own command (`tensorfx train ...`, alone or
with `--cluster`) and reads its lines: the chief's step, the tasks' PIDs,
its resumes and evaluations. It kills as the plan says:

- the chief of a single-node or parameter-server job at its exact step,
  from inside the process (`tensorfx._faults`: the process signals itself
  as the step ends, once per kill, however often it is restarted);
- any other task, the chief of a multi-worker job, and the whole job
  (`job`), by PID, at the first line of the chief's at or past the step.

A parameter-server job's killed tasks are started again by the launcher
(`tensorfx train --restart`), as Vertex AI restarts a replica; a single-
node or multi-worker job that ends with an error is started again whole,
with the same command, as a retried job is. With `truncate`, the newest
checkpoint is cut in half before the first restart of the chief that
follows a kill: the chief must set it aside and resume from the one
before.

Every process the drill starts is killed by PID when it ends.
"""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from tensorfx import _faults

_PREFIXED = re.compile(r'^\[(\S+)\s*\] ?(.*)$')
_PID = re.compile(r'(\S+) \(pid (\d+)\)')
_STEP = re.compile(r'\bINFO step (\d+)\b')
_RESUMED = re.compile(r'\bResumed from (\S+) at step (\d+)')
_FRESH = re.compile(r'\bTraining from step (\d+)\b')
_EVALUATED = re.compile(r'\b(Evaluation|Validation (\S+)) at step (\d+)\b')
# The chief's own kills are steps of its training loop (`_faults`).
_POINT = 'train.step'


class Drill:
  """Runs a job to its end under a kill plan; `run()` returns the record.

  Args:
    command: the job's command (argv), `--cluster` and `--restart` in it.
    output: the job's output directory (local).
    plan: the `_killplan.Kill`s, by step.
    mode: 'single', 'parameter_server' or 'multi_worker'.
    prefixed: whether the job's lines carry their task's name (a
      `--cluster`'s launcher prefixes them).
    restarts: how many times a job that failed is started again whole.
    truncate: whether to truncate the newest checkpoint before the first
      restart of the chief after a kill.
    stream: where the job's lines and the drill's are written.
    timeout_secs: how long the whole drill may take.
  """

  def __init__(
    self,
    command,
    output,
    plan,
    *,
    mode,
    prefixed,
    restarts,
    truncate=False,
    stream=None,
    timeout_secs=3600,
  ):
    self.command = list(command)
    self.output = output
    self.mode = mode
    self.prefixed = prefixed
    self.restarts = restarts
    self.stream = stream or sys.stdout
    self.deadline = time.monotonic() + timeout_secs
    self._truncate = truncate
    self._lock = threading.Lock()
    # The chief's own kills fire inside it; the others are sent by PID.
    self._inside = [
      k for k in plan if k.role == 'chief' and mode != 'multi_worker'
    ]
    self._outside = [k for k in plan if k not in self._inside]
    self._markers = tempfile.mkdtemp(prefix='tensorfx-chaos-')
    self.kills = []  # What was done, as dicts.
    self.truncated = None
    self.job_restarts = 0
    self.task_restarts = {}
    self.resumes = []  # (time, step, checkpoint)
    self._starts = []  # Times the chief started training (resumed or not).
    self.evaluations = []  # (target, step)
    self.pids = {}
    self.lines = 0
    self._step = 0
    self._step_at = []  # (time, step) of each of the chief's step lines.
    self._training = False
    self._chief_restarted = False

  # The run.

  def run(self):
    """Runs the job until it completes or cannot; returns the record."""
    start = time.monotonic()
    code = None
    try:
      while True:
        code = self._attempt()
        if code == 0 or code is None:
          break
        if self.job_restarts >= self.restarts:
          self.say(f'the job exited with code {code}, out of restarts')
          break
        self.job_restarts += 1
        self.say(
          f'the job exited with code {code}: starting it again '
          f'(restart {self.job_restarts} of {self.restarts})'
        )
        self._truncate_if_due()
    finally:
      _remove(self._markers)
    return self._record(code, time.monotonic() - start)

  def _attempt(self):
    """Runs the command once; its exit code (None: the drill timed out)."""
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    env.pop(_faults.VARIABLE, None)
    if self._inside:
      env[_faults.VARIABLE] = ','.join(
        f'{_POINT}:{k.step}{":TERM" if k.signal_name == "SIGTERM" else ""}'
        for k in self._inside
      )
      env[_faults.ONCE] = self._markers
    process = subprocess.Popen(
      self.command,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL,
      text=True,
      bufsize=1,
      start_new_session=True,
    )
    with self._lock:
      self._training = False
      # This attempt's tasks only: an earlier one's PIDs may be reused.
      self.pids = {} if self.prefixed else {'chief': process.pid}
    reader = threading.Thread(target=self._read, args=(process,), daemon=True)
    reader.start()
    try:
      while process.poll() is None:
        if time.monotonic() > self.deadline:
          self.say('the drill ran out of time: stopping the job')
          return None
        self._check_inside()
        self._kill_due()
        if self._chief_restarted:
          self._chief_restarted = False
          self._truncate_if_due()
        time.sleep(0.05)
      reader.join(timeout=30)
      self._check_inside()
      return process.returncode
    finally:
      self._stop(process)

  def _read(self, process):
    with process.stdout:
      for line in process.stdout:
        line = line.rstrip('\n')
        self._see(line, time.monotonic())
        self.stream.write(line + '\n')
        self.stream.flush()

  def _see(self, line, now):
    """Follows what one line of the job says."""
    with self._lock:
      self.lines += 1
      name, text = 'chief', line
      if self.prefixed:
        match = _PREFIXED.match(line)
        if match is None:
          return
        name, text = match.groups()
      if name == 'cluster':
        if '(pid' in text:
          self.pids.update((n, int(p)) for n, p in _PID.findall(text))
        restarted = re.match(r'restarted (\S+) ', text)
        if restarted:
          task = restarted.group(1)
          self.task_restarts[task] = self.task_restarts.get(task, 0) + 1
          if task == 'chief':
            self._training = False
            self._chief_restarted = True
        return
      match = _EVALUATED.search(text)
      if match and (name == 'chief' or name.startswith('evaluator')):
        self.evaluations.append((match.group(2) or 'eval', int(match[3])))
      if name != 'chief':
        return
      match = _RESUMED.search(text)
      if match:
        self.resumes.append((now, int(match[2]), match[1]))
        self._starts.append(now)
        self._step = int(match[2])
        return
      match = _FRESH.search(text)
      if match:
        self._starts.append(now)
        self._step = int(match[1])
        return
      match = _STEP.search(text)
      if match:
        self._step = int(match[1])
        self._step_at.append((now, self._step))
        self._training = True

  # The kills.

  def _check_inside(self):
    """Records the chief's own kills: each leaves its marker as it fires."""
    for kill in list(self._inside):
      marker = os.path.join(self._markers, f'{_POINT}:{kill.step}')
      if os.path.exists(marker):
        self._inside.remove(kill)
        self._done(kill, kill.step, 'chief')

  def _kill_due(self):
    with self._lock:
      if not self._outside or not self._training:
        return
      kill = self._outside[0]
      if self._step < kill.step:
        return
      # The launcher names tasks `worker-0`, `evaluator-0`: `evaluator` is
      # the one evaluator.
      names = sorted(
        n
        for n in self.pids
        if kill.role in ('job', n) or n.startswith(kill.role + '-')
      )
      pids = [self.pids[n] for n in names]
      if not pids:
        return
      self._outside.pop(0)
      step = self._step
      # A task killed is known again by the launcher's line of its
      # restart: a kill due meanwhile waits for it, never hits its old PID.
      for name in names:
        del self.pids[name]
      if self._stops_chief(kill.role):
        # No steps until the chief starts again.
        self._training = False
    for pid in pids:
      try:
        os.kill(pid, kill.signum)
      except ProcessLookupError:
        pass
    self._done(kill, step, ', '.join(names))

  def _stops_chief(self, role):
    """Whether a kill of `role` stops the chief (or makes it fail)."""
    # A multi-worker job's replicas step together: any loss stops it.
    return (
      self.mode == 'multi_worker'
      or role in ('chief', 'job', 'ps')
      or role.startswith('ps-')
    )

  def _done(self, kill, step, tasks):
    self.kills.append(
      {
        'role': kill.role,
        'tasks': tasks,
        'signal': kill.signal_name,
        'planned_step': kill.step,
        'step': step,
        'time': time.monotonic(),
        'stops_chief': self._stops_chief(kill.role),
      }
    )
    self.say(f'sent {kill.signal_name} to {tasks} at step {step}')

  def _truncate_if_due(self):
    """Truncates the newest checkpoint once, as the chief starts again.

    Only when an older one is there to resume from (else the job could
    not go on, for want of a checkpoint, not for the drill's reason): a
    restart with a single checkpoint waits for the next.
    """
    if not self._truncate or self.truncated or not self.kills:
      return
    found = _checkpoints(os.path.join(self.output, 'checkpoints'))
    if len(found) < 2:
      self.say('one checkpoint only: truncating at a later restart')
      return
    step = max(found)
    for path in found[step]:
      size = os.path.getsize(path)
      with open(path, 'r+b') as f:
        f.truncate(size // 2)
    with self._lock:
      self.truncated = {
        'step': step,
        'files': found[step],
        # The resumes after it show whether it was set aside.
        'resumes_before': len(self.resumes),
      }
    self.say(f'truncated the newest checkpoint, ckpt-{step}, to half its size')

  def _stop(self, process):
    """Kills the job's processes still running, by PID.

    The tasks first (a PID is ours while its command line is a
    `tensorfx` one: a task already gone may have left its number to
    another process), then the launcher or the trainer itself.
    """
    with self._lock:
      pids = list(self.pids.values())
    for pid in pids:
      if _ours(pid):
        try:
          os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
    if process.poll() is None:
      process.kill()
    process.wait(timeout=30)

  def say(self, text):
    with self._lock:
      self.stream.write(f'[chaos] {text}\n')
      self.stream.flush()

  # The record.

  def _record(self, code, wall):
    job = _read_yaml(os.path.join(self.output, 'job.yaml'))
    evaluated = _read_json(
      os.path.join(self.output, 'summaries', 'eval', 'evaluated.json')
    )
    for kill in self.kills:
      kill['seconds_lost'] = self._seconds_lost(kill)
      if kill['stops_chief']:
        after = [r for r in self.resumes if r[0] > kill['time']]
        kill['resumed_step'] = after[0][1] if after else None
        kill['steps_lost'] = (
          max(0, kill['step'] - after[0][1]) if after else None
        )
    repeated = sorted(
      e for e, n in collections.Counter(self.evaluations).items() if n > 1
    )
    return {
      'exit_code': code,
      'wall_secs': round(wall, 1),
      'status': job.get('status'),
      'global_step': job.get('global_step'),
      'kills': [
        {k: v for k, v in kill.items() if k != 'time'} for kill in self.kills
      ],
      'truncate_asked': self._truncate,
      'not_done': [str(k) for k in self._inside + self._outside],
      'job_restarts': self.job_restarts,
      'task_restarts': dict(self.task_restarts),
      'seconds_lost': round(self._union_lost(), 1),
      'steps_again': (job.get('recovery') or {}).get('steps_again', 0),
      'recovery': (job.get('recovery') or {}).get('events', []),
      'truncated': self.truncated,
      'resumed_from': [r[2] for r in self.resumes],
      'evaluations': [list(e) for e in self.evaluations],
      'evaluations_repeated': [list(e) for e in repeated],
      'evaluator_record': evaluated.get('evaluated'),
    }

  def _seconds_lost(self, kill):
    """Seconds from the kill until the chief was back at the kill's step.

    After a kill that stopped the chief, its steps count from its next
    start (a line it printed as it died does not); after another, from
    the kill.
    """
    since = kill['time']
    if kill['stops_chief']:
      starts = [at for at in self._starts if at > since]
      if not starts:
        return None
      since = starts[0]
    back = [
      at for at, step in self._step_at if at > since and step >= kill['step']
    ]
    return round(back[0] - kill['time'], 1) if back else None

  def _union_lost(self):
    spans = sorted(
      (k['time'], k['time'] + k['seconds_lost'])
      for k in self.kills
      if k.get('seconds_lost') is not None
    )
    total, end = 0.0, None
    for low, high in spans:
      if end is None or low > end:
        total += high - low
        end = high
      elif high > end:
        total += high - end
        end = high
    return total


def _checkpoints(directory):
  """`{step: [data files]}` of the checkpoints in a directory."""
  if not os.path.isdir(directory):
    return {}
  steps: dict[int, list[str]] = {}
  for name in os.listdir(directory):
    match = re.match(r'^ckpt-(\d+)\.data-\d+-of-\d+$', name)
    if match:
      steps.setdefault(int(match[1]), []).append(os.path.join(directory, name))
  return {step: sorted(files) for step, files in steps.items()}


def compare_checkpoints(expected, actual):
  """The variables two checkpoints hold, and those that differ in a bit.

  The save count and the object graph are not compared: a run that was
  stopped saved more often than its twin.

  Example:
    >>> names, differ = compare_checkpoints(twin_ckpt, resumed_ckpt)
    >>> differ
    []

  Returns:
    `(names, differ)`: the sorted names compared (those of `expected`,
    and any only one holds among `differ`), and the sorted names whose
    values are not the same bytes.
  """
  import numpy as np
  import tensorflow as tf

  def names_of(reader):
    return {
      name
      for name in reader.get_variable_to_shape_map()
      if not name.startswith(('save_counter/', '_CHECKPOINTABLE_OBJECT_GRAPH'))
    }

  left, right = (
    tf.train.load_checkpoint(expected),
    tf.train.load_checkpoint(actual),
  )
  ours, theirs = names_of(left), names_of(right)
  differ = sorted(ours ^ theirs) + sorted(
    name
    for name in ours & theirs
    if np.asarray(left.get_tensor(name)).tobytes()
    != np.asarray(right.get_tensor(name)).tobytes()
  )
  return sorted(ours | theirs), differ


def latest_checkpoint(output):
  """The newest checkpoint prefix of a job's output, or None."""
  import tensorflow as tf

  return tf.train.latest_checkpoint(os.path.join(output, 'checkpoints'))


def write_record(path, record):
  """Writes the drill's record as JSON (a temporary file renamed)."""
  partial = f'{path}.partial'
  with open(partial, 'w', encoding='utf-8') as f:
    f.write(json.dumps(record, indent=1, default=str) + '\n')
  os.replace(partial, path)


def _ours(pid):
  """Whether `pid` runs a `tensorfx` command (one of the job's tasks)."""
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      return b'tensorfx' in f.read()
  except OSError:
    # No /proc (not Linux): the PID is the launcher's child, reaped by it.
    return os.name == 'posix' and not os.path.isdir('/proc')


def _read_yaml(path):
  try:
    with open(path, encoding='utf-8') as f:
      loaded = yaml.safe_load(f)
  except (OSError, yaml.YAMLError):
    return {}
  return loaded if isinstance(loaded, dict) else {}


def _read_json(path):
  try:
    with open(path, encoding='utf-8') as f:
      loaded = json.load(f)
  except (OSError, ValueError):
    return {}
  return loaded if isinstance(loaded, dict) else {}


def _remove(directory):
  import shutil

  shutil.rmtree(directory, ignore_errors=True)
