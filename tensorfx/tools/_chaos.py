r"""`tensorfx chaos`: a fault drill on the user's own job.

Runs a trainer as `tensorfx train` would (alone or as a local
`--cluster`), kills its tasks as a plan says (`_killplan`), lets the job
recover as a cloud platform would (`_drill`), and reports what it cost
and whether anything was lost: kills, restarts, time lost, steps run
again, evaluations made more than once, and with `--twin` whether the
final model is bit for bit the one an uninterrupted run ends with.

    tensorfx chaos --module trainer --output /tmp/drill \\
        --kill chief@120:TERM --kill chief --twin \\
        --data-train data/train.csv ... --max-steps 600 --seed 7

Exit code 0 when the job completed and every promise held, 1 otherwise
(the report says which did not), 2 for a plan it cannot run.
"""

import collections
import os

from tensorfx import _trainercommand
from tensorfx._errors import ConfigurationError
from tensorfx.tools import _drill
from tensorfx.tools import _killplan
from tensorfx.tools import _launch
from tensorfx.tools import _train

RECORD = 'chaos.json'


def add_parser(commands):
  parser = commands.add_parser(
    'chaos',
    help='run a training job under a kill plan and report what survived',
    add_help=False,
    description='Runs a trainer as `tensorfx train` does (alone or with '
    '--cluster), kills its tasks as --kill and --random-kills say, '
    'restarts them as a cloud platform would, and reports the kills, '
    'restarts, time and steps lost, whether each evaluation ran once, '
    'and (--twin) whether the final model equals an uninterrupted '
    "run's. Arguments after the known ones go to the trainer.",
    epilog='Example: tensorfx chaos --module trainer --output /tmp/drill '
    '--kill chief@120:TERM --kill chief --twin --data-train '
    'data/train.csv --data-schema schema.yaml --data-features '
    'features.yaml --max-steps 600 --seed 7',
  )
  _train.add_trainer_arguments(parser)
  parser.add_argument(
    '--cluster',
    metavar='ps=N,workers=N,evaluator=N',
    help='run the job as a local cluster, as `tensorfx train --cluster`',
  )
  parser.add_argument(
    '--kill',
    action='append',
    default=[],
    metavar='ROLE[@STEP][:SIGNAL]',
    help='a kill: ROLE chief, worker-N, ps-N, evaluator (worker, ps: one '
    'drawn) or job (every task); STEP a global step or random (the '
    'default, drawn below --max-steps); SIGNAL KILL (the default) or '
    'TERM (a preemption). Repeat for more kills',
  )
  parser.add_argument(
    '--random-kills',
    type=int,
    default=0,
    metavar='N',
    help='N more kills of drawn tasks, steps and signals',
  )
  parser.add_argument(
    '--truncate-checkpoint',
    action='store_true',
    help='cut the newest checkpoint in half before the chief is first '
    'started again after a kill (it must resume from the one before)',
  )
  parser.add_argument(
    '--twin',
    action='store_true',
    help='then run the job uninterrupted into OUTPUT.twin and compare '
    'the final checkpoints variable by variable, bit for bit (needs the '
    "trainer's --seed; single node and multi-worker jobs)",
  )
  parser.add_argument(
    '--restart',
    type=int,
    default=10,
    metavar='N',
    help='how many times a killed task (parameter-server jobs) or the '
    'whole job (the others) is started again (default 10)',
  )
  parser.add_argument(
    '--drill-seed',
    type=int,
    default=0,
    metavar='N',
    help="the seed of the drill's draws (not the trainer's --seed)",
  )
  parser.add_argument(
    '--timeout-mins',
    type=float,
    default=60,
    metavar='M',
    help='stop the job and report after M minutes (default 60)',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  code = _train.help_or_check(args)
  if code is not None:
    return code
  counts = _launch.parse_cluster(args.cluster) if args.cluster else {'chief': 1}
  mode = (
    'parameter_server'
    if counts.get('ps')
    else 'multi_worker'
    if counts.get('worker')
    else 'single'
  )
  try:
    plan = _killplan.parse(
      args.kill,
      counts,
      _killplan.max_steps_of(rest),
      random_kills=args.random_kills,
      seed=args.drill_seed,
    )
    _check(args, rest, plan, mode)
  except ConfigurationError as e:
    # A plan the drill cannot run is an argument error: usage, exit 2.
    args.command_parser.error(str(e))
  output = args.output.rstrip('/')
  drill = _drill.Drill(
    _command(args, rest, output, mode, args.restart),
    output,
    plan,
    mode=mode,
    prefixed=bool(args.cluster),
    # A parameter-server job's tasks are restarted by its launcher.
    restarts=0 if mode == 'parameter_server' else args.restart,
    truncate=args.truncate_checkpoint,
    timeout_secs=args.timeout_mins * 60,
  )
  drill.say('the plan: ' + '; '.join(str(k) for k in plan))
  record = drill.run()
  if args.twin and record['status'] == 'completed':
    record['twin'] = _twin(args, rest, output, mode, drill)
  record['problems'] = problems(record)
  path = os.path.join(output, RECORD)
  _drill.write_record(path, record)
  print(report(record, path), flush=True)
  return 1 if record['problems'] else 0


def _check(args, rest, plan, mode):
  """Refuses what the drill cannot do, in one line that says what to do."""
  if '://' in args.output:
    raise ConfigurationError(
      'tensorfx chaos runs the job on this machine and reads its output '
      f'as it goes: give a local --output. Received: {args.output}'
    )
  for directory in (args.output, args.output.rstrip('/') + '.twin'):
    if os.path.exists(os.path.join(directory, 'job.yaml')):
      raise ConfigurationError(
        f'{directory} already holds a job; a drill starts its job from '
        'nothing: give a new --output'
      )
  if not plan and not args.truncate_checkpoint:
    raise ConfigurationError(
      'the drill has nothing to do: give kills (--kill chief, --random-kills 3)'
    )
  if args.truncate_checkpoint and not any(
    k.role in ('chief', 'job') or k.role.startswith('ps-') for k in plan
  ):
    raise ConfigurationError(
      '--truncate-checkpoint cuts the newest checkpoint before the chief '
      'starts again after a kill: add a kill that stops the chief '
      '(--kill chief)'
    )
  if args.twin and mode == 'parameter_server':
    raise ConfigurationError(
      '--twin compares the final model bit for bit with an uninterrupted '
      "run's, which parameter servers do not promise (their closures run "
      'at least once): drop --twin'
    )
  if args.twin and not _killplan.flag_given(rest, '--seed'):
    raise ConfigurationError(
      "--twin compares bit for bit, which needs the trainer's --seed "
      '(add --seed 7)'
    )
  level = _killplan.flag_value(rest, '--log-level')
  if level is not None and level.lower() not in ('debug', 'info'):
    raise ConfigurationError(
      f'--log-level {level} hides the progress lines the drill reads (the '
      "chief's step, its resumes and evaluations): drop it, or give info"
    )
  if args.restart < 0 or args.random_kills < 0:
    raise ConfigurationError(
      '--restart and --random-kills take a non-negative count'
    )


def _command(args, rest, output, mode, restarts):
  """The job's `tensorfx train` command (a cluster's with the launcher's)."""
  launcher = []
  if args.cluster:
    launcher = ['--cluster', args.cluster]
    if mode == 'parameter_server' and restarts:
      # Its tasks are started again one by one, as Vertex AI's replicas.
      launcher += ['--restart', str(restarts)]
  return _trainercommand.train_command(args.module, output, [*launcher, *rest])


def _twin(args, rest, output, mode, drill):
  """Runs the uninterrupted twin and compares its final checkpoint."""
  twin = output + '.twin'
  log = twin + '.log'
  drill.say(f'running the uninterrupted twin into {twin} (its lines: {log})')
  with open(log, 'w', encoding='utf-8') as lines:
    run = _drill.Drill(
      _command(args, rest, twin, mode, 0),
      twin,
      [],
      mode=mode,
      prefixed=bool(args.cluster),
      restarts=0,
      stream=lines,
      timeout_secs=args.timeout_mins * 60,
    ).run()
  if run['exit_code'] != 0:
    drill.say(f'the twin failed (exit code {run["exit_code"]}): see {log}')
    return {'output': twin, 'exit_code': run['exit_code']}
  ours, theirs = (
    _drill.latest_checkpoint(output),
    _drill.latest_checkpoint(twin),
  )
  names, differ = _drill.compare_checkpoints(theirs, ours)
  return {
    'output': twin,
    'exit_code': 0,
    'checkpoint': ours,
    'twin_checkpoint': theirs,
    'variables': len(names),
    'differ': differ,
  }


def problems(record):
  """What the drill's record shows went wrong (empty when nothing did)."""
  found = []
  if record['exit_code'] != 0 or record['status'] != 'completed':
    found.append(
      f'the job did not complete: exit code {record["exit_code"]}, '
      f'job.yaml says {record["status"]!r}'
    )
  if record['not_done']:
    found.append(
      'kills never made (the job ended first): ' + '; '.join(record['not_done'])
    )
  twice = sorted(
    step
    for step, count in collections.Counter(
      record.get('evaluator_record') or []
    ).items()
    if count > 1
  )
  if twice:
    found.append(
      'the evaluator evaluated more than once: step '
      + ', '.join(str(s) for s in twice)
    )
  truncated = record.get('truncated')
  if truncated:
    after = record['resumed_from'][truncated.get('resumes_before', 0) :]
    if not any(_step_of(path) < truncated['step'] for path in after):
      found.append(
        f'the truncated checkpoint ckpt-{truncated["step"]} was not set '
        'aside: no resume from an earlier one followed'
      )
  elif record.get('truncate_asked'):
    found.append(
      'no checkpoint was truncated: the chief never started again with '
      'two checkpoints to choose from'
    )
  twin = record.get('twin')
  if twin is not None:
    if twin['exit_code'] != 0:
      found.append(f'the twin failed with exit code {twin["exit_code"]}')
    elif twin['differ']:
      found.append(
        f"the final model differs from the twin's in "
        f'{len(twin["differ"])} of {twin["variables"]} variables: '
        + ', '.join(twin['differ'][:5])
      )
    elif _step_of(twin['checkpoint']) != _step_of(twin['twin_checkpoint']):
      found.append('the final checkpoints are of different steps')
  return found


def report(record, path):
  """The drill's report, as printed."""
  lines = ['tensorfx chaos: report']

  def row(label, text):
    lines.append(f'  {label:<12} {text}')

  row(
    'job',
    f'{record["status"] or "not started"} at step {record["global_step"]} '
    f'in {record["wall_secs"]:.0f} s (exit code {record["exit_code"]})',
  )
  row('kills', str(len(record['kills'])))
  for kill in record['kills']:
    text = f'{kill["tasks"]}: {kill["signal"]} at step {kill["step"]}'
    if kill.get('resumed_step') is not None:
      text += (
        f', resumed at step {kill["resumed_step"]} '
        f'({_steps(kill["steps_lost"])} lost)'
      )
    if kill.get('seconds_lost') is not None:
      text += f', back at step {kill["step"]} in {kill["seconds_lost"]} s'
    lines.append(f'    {text}')
  tasks = ', '.join(
    f'{t} {n}' for t, n in sorted(record['task_restarts'].items())
  )
  row(
    'restarts',
    f'job {record["job_restarts"]}' + (f'; tasks: {tasks}' if tasks else ''),
  )
  row('time lost', f'{record["seconds_lost"]} s')
  lost = sum(k.get('steps_lost') or 0 for k in record['kills'])
  row(
    'steps again',
    f'{_steps(lost)} lost to kills and run again; the chief counted '
    f'{_steps(record["steps_again"])} in job.yaml '
    f'({_count(len(record["recovery"]), "event")})',
  )
  truncated = record.get('truncated')
  if truncated:
    earlier = [
      p for p in record['resumed_from'] if _step_of(p) < truncated['step']
    ]
    row(
      'checkpoint',
      f'ckpt-{truncated["step"]} truncated; '
      + (
        f'resumed from {os.path.basename(earlier[0])}'
        if earlier
        else 'never resumed from an earlier one'
      ),
    )
  evaluations = record['evaluations']
  repeated = record['evaluations_repeated']
  if evaluations:
    steps = sorted({step for _, step in evaluations})
    row(
      'evaluations',
      (
        'not exactly once: '
        + ', '.join(f'{t} at step {s}' for t, s in repeated)
        + ' more than once'
        if repeated
        else f'exactly once: {len(evaluations)}, steps {steps[0]} to '
        f'{steps[-1]}'
      ),
    )
  twin = record.get('twin')
  if twin is not None:
    if twin['exit_code'] != 0:
      text = f'failed (exit code {twin["exit_code"]})'
    elif twin['differ']:
      text = (
        f'differs in {len(twin["differ"])} of {twin["variables"]} variables'
      )
    else:
      text = (
        f'bit-identical: {twin["variables"]} variables of '
        f'{os.path.basename(twin["checkpoint"])}'
      )
    row('twin', text)
  for problem in record['problems']:
    row('PROBLEM', problem)
  row('record', path)
  return '\n'.join(lines)


def _steps(count):
  return _count(count, 'step')


def _count(count, noun):
  return f'{count} {noun}' + ('' if count == 1 else 's')


def _step_of(path):
  try:
    return int(str(path).rsplit('-', 1)[1])
  except (IndexError, ValueError):
    return -1
