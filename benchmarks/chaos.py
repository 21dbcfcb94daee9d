"""Chaos run: a parameter-server cluster trains while its tasks are killed.

Launches the iris sample as `tensorfx train --cluster
ps=1,workers=2,evaluator=1 --restart N` (a chief, a parameter server, two
workers and an evaluator, one process each on 127.0.0.1; the launcher
restarts a killed task with the same TF_CONFIG, as Vertex AI restarts a
replica) and, while it trains, SIGKILLs a task every few seconds of
training: a worker, the evaluator, the parameter server or the chief. At
the end it checks that the job finished at its target step, that the
exported model (and the evaluator's best model) predicts correctly, and
measures the steps each chief or parameter-server kill cost (the chief's
last logged step before the kill minus the step it resumed from), which
must be at most one checkpoint interval.

    python benchmarks/chaos.py                     # 10 minutes of kills
    python benchmarks/chaos.py --minutes 3 --max-steps 4000 --seed 2

The short version runs in the test suite (tests/training/test_chaos.py,
marker `chaos`). Results go to benchmarks/results/chaos.json.
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IRIS = os.path.join(ROOT, 'samples', 'iris')
KINDS = ('worker', 'evaluator', 'ps', 'chief')
INSTANCES = {
  '6.3,3.3,6,2.5': 'virginica',
  '4.4,3,1.3,0.2': 'setosa',
  '6.1,2.8,4.7,1.2': 'versicolor',
}

_PID = re.compile(r'(\S+) \(pid (\d+)\)')
_STEP = re.compile(r'^\[chief\s*\] .* step (\d+)/(\d+)')
_RESUMED = re.compile(
  r'^\[chief\s*\] .*(?:Resumed from \S+ at step|'
  r'Training from step|Already trained to step) (\d+)'
)


class ChaosRun:
  """One chaos run of a local parameter-server cluster.

  Args:
    output: the job's output directory.
    analysis: a `tensorfx analyze` output of the iris training data.
    max_steps: the target global step.
    checkpoint_interval: steps between checkpoints.
    kill_every: (low, high) seconds of training between kills.
    kill_every_steps: (low, high) steps of training between kills, instead
      of seconds: the kills then land at the same steps on a fast machine
      as on a slow one (a job of enough steps gets all of them).
    kinds: the kinds of task killed in turn (then random choices), e.g.
      ('worker', 'evaluator', 'ps', 'chief').
    kills: how many kills at most (None: until the target is near).
    kill_secs: for how long to kill (None: until the target is near).
    seed: the random generator's seed.
    restarts: the launcher's --restart.
    stream: where the cluster's lines are echoed (None: kept only).
  """

  def __init__(
    self,
    output,
    analysis,
    *,
    max_steps=3000,
    checkpoint_interval=200,
    kill_every=(4.0, 10.0),
    kill_every_steps=None,
    kinds=(),
    kills=None,
    kill_secs=None,
    seed=0,
    restarts=100,
    stream=None,
  ):
    self.output = str(output)
    self.analysis = analysis
    self.max_steps = max_steps
    self.checkpoint_interval = checkpoint_interval
    self.kill_every = kill_every
    self.kill_every_steps = kill_every_steps
    self.schedule = list(kinds)
    self.kills_wanted = kills
    self.kill_secs = kill_secs
    self.random = random.Random(seed)
    self.restarts = restarts
    self.stream = stream
    self.lines = []
    self.pids = {}
    self.kills = []
    self._step = 0  # The chief's last logged step.
    self._progressed = False  # Steps logged since the chief's last start.
    self._resumes = []  # (time, step) of each chief start.
    self._finishing = False
    self._lock = threading.Lock()

  def command(self):
    return [
      sys.executable,
      '-m',
      'tensorfx',
      'train',
      '--module',
      'trainer',
      '--output',
      self.output,
      '--cluster',
      'ps=1,workers=2,evaluator=1',
      '--restart',
      str(self.restarts),
      '--data-train',
      'data/train.csv',
      '--data-eval',
      'data/eval.csv',
      '--data-schema',
      'schema.yaml',
      '--data-features',
      'features.yaml',
      '--data-metadata',
      self.analysis,
      '--hidden-layers:1',
      '20',
      '--hidden-layers:2',
      '10',
      '--max-steps',
      str(self.max_steps),
      '--checkpoint-interval-steps',
      str(self.checkpoint_interval),
      '--log-interval-steps',
      '10',
      '--seed',
      '7',
      '--cluster-timeout-secs',
      '120',
    ]

  def run(self, timeout=600):
    """Runs the job to its end under kills; returns the report (a dict)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONUNBUFFERED='1')
    start = time.monotonic()
    launcher = subprocess.Popen(
      self.command(),
      cwd=IRIS,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      stdin=subprocess.DEVNULL,
      text=True,
      bufsize=1,
      start_new_session=True,
    )
    reader = threading.Thread(target=self._read, args=(launcher,), daemon=True)
    reader.start()
    try:
      self._kill_loop(launcher, start + timeout)
      code = launcher.wait(timeout=max(1.0, start + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
      code = None
    finally:
      self.close(launcher)
      reader.join(timeout=10)
    wall = time.monotonic() - start
    return self._report(code, wall)

  def close(self, launcher):
    """Kills the launcher and every task it reported, by PID."""
    for pid in [launcher.pid, *self.pids.values()]:
      try:
        os.kill(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    launcher.wait(timeout=30)

  def _read(self, launcher):
    # The pipe is closed here, at its end: left to the garbage collector,
    # it warns (ResourceWarning) inside whatever runs next.
    with launcher.stdout:
      self._read_lines(launcher)

  def _read_lines(self, launcher):
    for line in launcher.stdout:
      line = line.rstrip('\n')
      now = time.monotonic()
      with self._lock:
        self.lines.append(line)
        if line.startswith('[cluster') and '(pid' in line:
          self.pids.update((n, int(p)) for n, p in _PID.findall(line))
          if 'restarted chief' in line:
            # What the chief logged before it went down is not progress.
            self._progressed = False
        match = _STEP.search(line)
        if match:
          self._step = int(match.group(1))
          self._progressed = True
          if self._step >= self.max_steps:
            self._finishing = True
        match = _RESUMED.search(line)
        if match:
          self._resumes.append((now, int(match.group(1))))
          self._step = int(match.group(1))
          self._progressed = False
      if self.stream is not None:
        self.stream.write(line + '\n')
        self.stream.flush()

  def _kill_loop(self, launcher, deadline):
    due = None
    stop = (
      time.monotonic() + self.kill_secs
      if self.kill_secs is not None
      else deadline
    )
    while launcher.poll() is None and time.monotonic() < deadline:
      time.sleep(0.05)
      with self._lock:
        if (
          self._finishing
          or time.monotonic() > stop
          or (
            self.kills_wanted is not None
            and len(self.kills) >= self.kills_wanted
          )
        ):
          continue
        # Kills land while the cluster trains: a chief that has not
        # trained since it started is left to get going.
        if not self._progressed:
          due = None
          continue
        # `due`: a step when kills are by steps, else a time.
        by_steps = self.kill_every_steps is not None
        now = self._step if by_steps else time.monotonic()
        if due is None:
          due = (
            now + self.random.randint(*self.kill_every_steps)
            if by_steps
            else now + self.random.uniform(*self.kill_every)
          )
          continue
        if now < due:
          continue
        kind = (
          self.schedule.pop(0) if self.schedule else self.random.choice(KINDS)
        )
        names = sorted(
          n for n in self.pids if n == kind or n.startswith(kind + '-')
        )
        name = self.random.choice(names)
        try:
          os.kill(self.pids[name], signal.SIGKILL)
        except ProcessLookupError:
          continue
        self.kills.append(
          {
            'kind': kind,
            'task': name,
            'time': time.monotonic(),
            'step': self._step,
          }
        )
        if kind in ('chief', 'ps'):
          self._progressed = False
        due = None

  def _report(self, code, wall):
    import yaml

    from tensorfx import prediction

    for kill in self.kills:
      if kill['kind'] in ('chief', 'ps'):
        after = [step for at, step in self._resumes if at > kill['time']]
        kill['resumed'] = after[0] if after else None
        kill['lost'] = max(0, kill['step'] - after[0]) if after else None
    job_path = os.path.join(self.output, 'job.yaml')
    job = {}
    if os.path.exists(job_path):
      with open(job_path, encoding='utf-8') as f:
        job = yaml.safe_load(f) or {}
    predictions = {}
    for name in ('model', 'best_model'):
      try:
        model = prediction.Model.load(os.path.join(self.output, name))
        labels = [p['label'] for p in model.predict(list(INSTANCES))]
        predictions[name] = labels == list(INSTANCES.values())
      except Exception as e:
        predictions[name] = f'{type(e).__name__}: {e}'
    evaluated_path = os.path.join(
      self.output, 'summaries', 'eval', 'evaluated.json'
    )
    evaluated = []
    if os.path.exists(evaluated_path):
      with open(evaluated_path, encoding='utf-8') as f:
        evaluated = json.load(f)['evaluated']
    by_kind = {
      kind: sum(k['kind'] == kind for k in self.kills) for kind in KINDS
    }
    lost = [k['lost'] for k in self.kills if k.get('lost') is not None]
    restarts = sum(
      'restarted' in line for line in self.lines if line.startswith('[cluster')
    )
    return {
      'exit_code': code,
      'wall_secs': round(wall, 1),
      'max_steps': self.max_steps,
      'checkpoint_interval': self.checkpoint_interval,
      'status': job.get('status'),
      'global_step': job.get('global_step'),
      'kills': by_kind,
      'restarts': restarts,
      'steps_lost': lost,
      'max_steps_lost': max(lost) if lost else None,
      'predicts': predictions,
      'evaluated': evaluated,
      'kill_log': [
        {k: v for k, v in kill.items() if k != 'time'} for kill in self.kills
      ],
    }


def problems(report, steps_per_closure=10):
  """What a report shows went wrong (an empty list when nothing did)."""
  found = []
  if report['exit_code'] != 0:
    found.append(f'the launcher exited with {report["exit_code"]}')
  if report['status'] != 'completed':
    found.append(f'job.yaml says {report["status"]!r}')
  step, target = report['global_step'], report['max_steps']
  # Steps run at least once: a closure lost with its worker runs again.
  if step is None or not target <= step < target + 2 * steps_per_closure:
    found.append(f'the global step is {step}, the target {target}')
  for name, ok in report['predicts'].items():
    if ok is not True:
      found.append(f'{name} does not predict correctly: {ok}')
  if report['evaluated'] != sorted(set(report['evaluated'])):
    found.append(f'evaluated.json repeats steps: {report["evaluated"]}')
  for kill in report['kill_log']:
    if kill['kind'] in ('chief', 'ps') and (
      kill.get('lost') is None or kill['lost'] > report['checkpoint_interval']
    ):
      found.append(
        f'a {kill["kind"]} kill at step {kill["step"]} lost '
        f'{kill.get("lost")} steps (interval '
        f'{report["checkpoint_interval"]})'
      )
  return found


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    '--minutes',
    type=float,
    default=10,
    help='how long to keep killing (then the job is left to finish)',
  )
  parser.add_argument(
    '--max-steps',
    type=int,
    default=12000,
    help='the target step (more than the cluster trains '
    'in --minutes under kills, so that kills last that '
    'long)',
  )
  parser.add_argument('--checkpoint-interval', type=int, default=200)
  parser.add_argument(
    '--kill-every', type=float, nargs=2, default=(3, 8), metavar=('LOW', 'HIGH')
  )
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument(
    '--output', default=os.path.join(ROOT, 'benchmarks', 'results', 'chaos')
  )
  args = parser.parse_args(argv)
  import shutil

  sys.path.insert(0, ROOT)
  from tensorfx import data

  shutil.rmtree(args.output, ignore_errors=True)
  analysis = os.path.join(args.output, 'analysis')
  data.CsvDataSet(
    os.path.join(IRIS, 'schema.yaml'),
    features=os.path.join(IRIS, 'features.yaml'),
    train=os.path.join(IRIS, 'data', 'train.csv'),
  ).analyze(analysis)
  run = ChaosRun(
    os.path.join(args.output, 'job'),
    analysis,
    max_steps=args.max_steps,
    checkpoint_interval=args.checkpoint_interval,
    kill_every=tuple(args.kill_every),
    kinds=KINDS,
    kill_secs=args.minutes * 60,
    seed=args.seed,
    stream=sys.stdout,
  )
  report = run.run(timeout=args.minutes * 60 + 1800)
  report['problems'] = problems(report)
  path = os.path.join(os.path.dirname(args.output), 'chaos.json')
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(report, f, indent=1)
  print(
    json.dumps({k: v for k, v in report.items() if k != 'kill_log'}, indent=1)
  )
  print(f'Written to {path}')
  return 1 if report['problems'] else 0


if __name__ == '__main__':
  sys.exit(main())
