"""`tune`: a tuning study run locally, trial by trial, as Vertex AI runs it.

The search is Optuna's: random search (`RANDOM_SEARCH`), a grid
(`GRID_SEARCH`), and its TPE sampler where Vertex AI would use its default
Bayesian optimization. Trial early stopping is Optuna's median rule: a trial
whose metric at a step is worse than the median of the completed trials'
metrics at that step is stopped. The study is kept in `OUTPUT/study.db`
(Optuna's SQLite storage), so a stopped study resumes where it stopped; a
trial that was running when it stopped runs again in its own directory (and
so resumes from its last checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import json
import os
import sys
import time
from typing import IO, Any

from tensorfx._errors import ConfigurationError
from tensorfx._errors import TrainingError
from tensorfx.cloud import StudySpec
from tensorfx.tuning import _hparams
from tensorfx.tuning import _space
from tensorfx.tuning import _table
from tensorfx.tuning._trialrun import TrialResult
from tensorfx.tuning._trialrun import TrialRun
from tensorfx.tuning._trialrun import measurements

STUDY_DB = 'study.db'
STUDY_JSON = 'study.json'
_NAME = 'tensorfx'


@dataclasses.dataclass(frozen=True)
class TuningResult:
  """What `tune` did.

  Attributes:
    study: the `StudySpec` run.
    trials: every trial, in order.
    best: the best completed trial, or None.
  """

  study: StudySpec
  trials: tuple[TrialResult, ...]
  best: TrialResult | None

  def best_json(self) -> str:
    """The best trial as one JSON object (the last line `tune` prints)."""
    if self.best is None:
      return json.dumps({'trial': None})
    return json.dumps(
      {
        'trial': self.best.trial,
        'metric': self.study.metric,
        'value': self.best.value,
        'parameters': self.best.parameters,
      }
    )


def _optuna() -> Any:
  try:
    import optuna
  except ImportError:
    raise ConfigurationError(
      'tensorfx tune searches with Optuna, a dependency of tensorfx that '
      'is not installed here: pip install "optuna>=3.6"'
    ) from None
  optuna.logging.set_verbosity(optuna.logging.WARNING)
  return optuna


def _grid_sampler(optuna: Any) -> Any:
  """Optuna's grid sampler, minus its stopping the study when done.

  Only an optimize() loop may stop a study when the grid is done; here the
  trial count is capped at the grid's size instead.
  """

  class GridSampler(optuna.samplers.GridSampler):
    def after_trial(
      self, study: Any, trial: Any, state: Any, values: Any
    ) -> None:
      del study, trial, state, values

  return GridSampler


def tune(
  study: StudySpec,
  module: str,
  output: str,
  trainer_args: Sequence[str] = (),
  *,
  max_trials: int | None = None,
  parallel: int | None = None,
  seed: int | None = None,
  early_stopping_after: int = 2,
  poll_seconds: float = 0.5,
  out: IO[str] | None = None,
) -> TuningResult:
  """Runs a tuning study locally: each trial a `tensorfx train` process.

  Example:
    >>> from tensorfx.cloud import load_config
    >>> study = load_config('hptuning.yaml').fields['study']
    >>> result = tune(study, 'trainer', '/tmp/iris-tune',
    ...               ['--data-train', 'data/train.csv', ...], parallel=2)
    >>> result.best.parameters
    {'learning-rate': 0.042, 'hidden-layers:1': 17}

  Args:
    study: the study (`load_config(path).fields['study']`).
    module: the trainer (a module name or a .py file), as `tensorfx train
      --module` takes it.
    output: the study's directory (local): one directory per trial
      (`1/`, `2/`, ...), the study record (`study.db`, `study.json`) and the
      TensorBoard HParams summaries.
    trainer_args: the fixed trainer arguments; each trial gets them, then
      its parameters as `--NAME=VALUE`.
    max_trials: trials in all (default: the study's `maxTrials`).
    parallel: trials at a time (default: the study's `maxParallelTrials`).
    seed: the sampler's seed (reproducible searches).
    early_stopping_after: with trial early stopping, the completed trials
      the median rule waits for before it stops any.
    poll_seconds: how often running trials are looked at.
    out: where the results table goes (default: stdout).

  Returns:
    A `TuningResult`.

  Raises:
    ConfigurationError: a grid search over a DOUBLE parameter, Optuna not
      installed, or a study in `output` that searches something else.
    TrainingError: more trials failed than `maxFailedTrials` allows, or no
      trial completed.
  """
  optuna = _optuna()
  out = out or sys.stdout
  max_trials = study.max_trial_count if max_trials is None else max_trials
  parallel = study.parallel_trial_count if parallel is None else parallel
  for name, value in (('max_trials', max_trials), ('parallel', parallel)):
    if not isinstance(value, int) or value < 1:
      raise ConfigurationError(
        f'{name} must be a positive integer. Received: {name}={value!r}'
      )
  output = os.path.abspath(output)
  os.makedirs(output, exist_ok=True)
  if study.algorithm == 'GRID_SEARCH':
    space = _space.grid(study)
    max_trials = min(max_trials, _space.grid_size(space))
    sampler = _grid_sampler(optuna)(space, seed=seed)
  elif study.algorithm == 'RANDOM_SEARCH':
    sampler = optuna.samplers.RandomSampler(seed=seed)
  else:
    sampler = optuna.samplers.TPESampler(seed=seed)
  pruner = (
    optuna.pruners.MedianPruner(n_startup_trials=early_stopping_after)
    if study.early_stopping
    else optuna.pruners.NopPruner()
  )
  storage = f'sqlite:///{os.path.join(output, STUDY_DB)}'
  record = optuna.create_study(
    storage=storage,
    study_name=_NAME,
    sampler=sampler,
    pruner=pruner,
    direction='maximize' if study.goal == 'MAXIMIZE' else 'minimize',
    load_if_exists=True,
  )
  _check_same_study(record, study, output)
  _requeue_interrupted(optuna, record)
  table = _table.Table(study, out)
  for past in _results(optuna, record, study, output):
    table.row(past)
  hparams = _hparams.HParamsWriter(study, output)
  running: dict[int, tuple[Any, TrialRun]] = {}
  failure_limit = study.max_failed_trial_count or 1
  try:
    while True:
      done, failed = _counts(optuna, record)
      while (
        failed < failure_limit
        and len(running) < parallel
        and done + len(running) < max_trials
      ):
        trial = record.ask()
        parameters = _space.suggest(trial, study.parameters)
        trial.set_user_attr('parameters', parameters)
        resumed = trial.user_attrs.get('resumes')
        number = (
          resumed + 1
          if resumed is not None
          else 1
          + max(
            (
              t.user_attrs.get('trial', 0)
              for t in record.get_trials(deepcopy=False)
            ),
            default=0,
          )
        )
        trial.set_user_attr('trial', number)
        running[trial.number] = (
          trial,
          TrialRun(
            number,
            os.path.join(output, str(number)),
            module,
            list(trainer_args),
            parameters,
            _space.flags(parameters),
            study.metric,
          ),
        )
      if not running:
        break
      time.sleep(poll_seconds)
      for key, (trial, run) in list(running.items()):
        finished = _step(optuna, record, study, trial, run)
        if finished is not None:
          del running[key]
          table.row(finished)
          hparams.write(finished)
          _write_record(optuna, record, study, output)
  except BaseException:
    # The trials stay RUNNING in the record: a resumed study reruns them.
    for _, run in running.values():
      run.stop()
    raise
  _write_record(optuna, record, study, output)
  trials = _results(optuna, record, study, output)
  best = _best(study, trials)
  _, failed = _counts(optuna, record)
  if failed >= failure_limit:
    raise TrainingError(
      f'The study stopped: {failed} trial(s) failed (maxFailedTrials '
      f"allows {study.max_failed_trial_count}; each trial's log is "
      f'{output}/TRIAL/trial.log)'
    )
  if best is None:
    raise TrainingError(
      f'No trial completed with a value of '
      f'{study.metric!r}: does the trainer report it? See '
      f'{output}/TRIAL/trial.log'
    )
  return TuningResult(study, tuple(trials), best)


def _step(
  optuna: Any, record: Any, study: StudySpec, trial: Any, run: TrialRun
) -> TrialResult | None:
  """Looks at one running trial; its result once it has finished."""
  pruned = False
  for step, value in run.new_measurements():
    trial.report(value, step)
    if study.early_stopping and trial.should_prune():
      pruned = True
      break
  if pruned:
    run.stop()
    record.tell(trial, state=optuna.trial.TrialState.PRUNED)
    return _result(optuna, record.trials[trial.number], study, run.directory)
  code = run.poll()
  if code is None:
    return None
  final = _final_value(study, run.metrics_file)
  if code == 0 and final is not None:
    record.tell(trial, final)
  else:
    trial.set_user_attr(
      'failure',
      f'exit code {code}' if code else f'no {study.metric!r} reported',
    )
    record.tell(trial, state=optuna.trial.TrialState.FAIL)
  return _result(optuna, record.trials[trial.number], study, run.directory)


def _final_value(study: StudySpec, path: str) -> float | None:
  found = measurements(path, study.metric)
  if not found:
    return None
  if study.extra.get('measurementSelectionType') == 'BEST_MEASUREMENT':
    pick = max if study.goal == 'MAXIMIZE' else min
    return pick(value for _, value in found)
  return found[-1][1]


def _check_same_study(record: Any, study: StudySpec, output: str) -> None:
  spec = json.dumps(
    {
      'metric': study.metric,
      'goal': study.goal,
      'parameters': [p.to_json() for p in study.parameters],
      'algorithm': study.algorithm,
    },
    sort_keys=True,
  )
  known = record.user_attrs.get('study')
  if known is None:
    record.set_user_attr('study', spec)
  elif known != spec:
    raise ConfigurationError(
      f'{output} holds another study (its metric, goal, parameters or '
      'algorithm differ): give a new --output, or the study config it was '
      f'started with. Received: {spec}; recorded: {known}'
    )


def _requeue_interrupted(optuna: Any, record: Any) -> None:
  """Trials left running by a stopped study run again, in their directory."""
  interrupted = list(record.user_attrs.get('interrupted', []))
  for trial in record.get_trials(
    deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)
  ):
    number = trial.user_attrs.get('trial', trial.number + 1)
    record.enqueue_trial(trial.params, user_attrs={'resumes': number - 1})
    record.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    interrupted.append(trial.number)
  if interrupted:
    record.set_user_attr('interrupted', interrupted)


def _counts(optuna: Any, record: Any) -> tuple[int, int]:
  """(Trials done, counting failures; failures), interrupted ones aside."""
  interrupted = set(record.user_attrs.get('interrupted', []))
  state = optuna.trial.TrialState
  done = failed = 0
  for trial in record.get_trials(deepcopy=False):
    if trial.number in interrupted:
      continue
    if trial.state in (state.COMPLETE, state.PRUNED, state.FAIL):
      done += 1
    if trial.state == state.FAIL:
      failed += 1
  return done, failed


_STATES = {
  'COMPLETE': 'COMPLETE',
  'PRUNED': 'STOPPED',
  'FAIL': 'FAILED',
  'RUNNING': 'RUNNING',
  'WAITING': 'WAITING',
}


def _result(
  optuna: Any, trial: Any, study: StudySpec, directory: str
) -> TrialResult:
  del optuna
  value = trial.value
  if value is None and trial.intermediate_values:
    value = trial.intermediate_values[max(trial.intermediate_values)]
  return TrialResult(
    int(trial.user_attrs.get('trial', trial.number + 1)),
    _STATES.get(trial.state.name, trial.state.name),
    dict(trial.user_attrs.get('parameters', {})),
    None if value is None else float(value),
    directory,
  )


def _results(
  optuna: Any, record: Any, study: StudySpec, output: str
) -> list[TrialResult]:
  interrupted = set(record.user_attrs.get('interrupted', []))
  results = []
  for trial in record.get_trials(deepcopy=False):
    if trial.number in interrupted or trial.state.name in (
      'RUNNING',
      'WAITING',
    ):
      continue
    number = int(trial.user_attrs.get('trial', trial.number + 1))
    results.append(
      _result(optuna, trial, study, os.path.join(output, str(number)))
    )
  return results


def _best(
  study: StudySpec, trials: Sequence[TrialResult]
) -> TrialResult | None:
  complete = [
    t for t in trials if t.state == 'COMPLETE' and t.value is not None
  ]
  if not complete:
    return None
  pick = max if study.goal == 'MAXIMIZE' else min
  return pick(complete, key=lambda t: t.value)  # type: ignore[arg-type,return-value]


def _write_record(
  optuna: Any, record: Any, study: StudySpec, output: str
) -> None:
  """`study.json`: the study and its trials, for people and scripts."""
  trials = _results(optuna, record, study, output)
  best = _best(study, trials)
  document = {
    'study': study.to_json(),
    'trials': [dataclasses.asdict(t) for t in trials],
    'best': best.trial if best else None,
  }
  path = os.path.join(output, STUDY_JSON)
  with open(path + '.partial', 'w') as f:
    json.dump(document, f, indent=2, sort_keys=True)
  os.replace(path + '.partial', path)
