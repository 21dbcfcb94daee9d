"""`tensorfx tune`: the study `tensorfx submit` sends to Vertex AI, locally."""

from tensorfx._errors import ConfigurationError
from tensorfx.tools import _submit


def _positive(text):
  try:
    value = int(text)
  except ValueError:
    value = 0
  if value < 1:
    import argparse

    raise argparse.ArgumentTypeError(
      f'expected a positive integer. Received: {text}'
    )
  return value


def add_parser(commands):
  parser = commands.add_parser(
    'tune',
    help='run a hyperparameter tuning study locally',
    description="Runs the study of a --config file (legacy AI Platform's "
    "trainingInput.hyperparameters or Vertex AI's studySpec, as "
    'tensorfx submit sends it) on this machine: each trial is a '
    'tensorfx train process with its own output directory OUTPUT/TRIAL, '
    'given the arguments after -- and then its parameters as '
    '--NAME=VALUE, and reporting its metric as on Vertex AI. Prints a row '
    'per finished trial and, last, the best trial as one JSON object. '
    'Run it again with the same --output to resume a stopped study.',
    epilog='Example: tensorfx tune --config hptuning.yaml --module trainer '
    '--output /tmp/iris-tune --trials 4 --parallel 2 -- --data-train '
    'data/train.csv --data-eval data/eval.csv --data-schema schema.yaml '
    '--data-features features.yaml',
  )
  parser.add_argument(
    '--config',
    required=True,
    metavar='STUDY.yaml',
    help='the config file with the study',
  )
  parser.add_argument(
    '--module',
    required=True,
    help='the trainer: a module name (importable from the '
    'current directory) or the path of a .py file',
  )
  parser.add_argument(
    '--output',
    required=True,
    metavar='DIR',
    help="the study's directory (local): a directory per "
    'trial, study.db and study.json',
  )
  parser.add_argument(
    '--trials',
    type=_positive,
    metavar='N',
    help="trials in all (default: the study's maxTrials or maxTrialCount)",
  )
  parser.add_argument(
    '--parallel',
    type=_positive,
    metavar='K',
    help='trials at a time (default: maxParallelTrials or parallelTrialCount)',
  )
  parser.add_argument(
    '--seed',
    type=int,
    help="the search's random seed (a reproducible sequence of trials)",
  )
  parser.add_argument(
    '--early-stopping-after',
    type=_positive,
    default=2,
    metavar='N',
    help='with trial early stopping, how many trials must '
    'complete before the median rule stops any '
    '(default: %(default)s)',
  )
  parser.set_defaults(run=run, accepts_extra=True)


def run(args, rest):
  """Reads the study and runs it."""
  trainer_args = _submit.trainer_args(rest)
  from tensorfx import _logging
  from tensorfx.cloud import load_config
  from tensorfx.tuning import tune

  _logging.configure('info')
  study = load_config(args.config).fields.get('study')
  if study is None:
    raise ConfigurationError(
      f'{args.config} has no study: give trainingInput.hyperparameters '
      '(legacy AI Platform) or studySpec (Vertex AI).'
    )
  for flag in ('--output', '--job-dir'):
    if any(a == flag or a.startswith(flag + '=') for a in trainer_args):
      raise ConfigurationError(
        f"Each trial writes to its own directory under tune's --output: "
        f'do not pass {flag} to the trainer. Received: {flag}'
      )
  _exit_on_sigterm()
  result = tune(
    study,
    args.module,
    args.output,
    trainer_args,
    max_trials=args.trials,
    parallel=args.parallel,
    seed=args.seed,
    early_stopping_after=args.early_stopping_after,
  )
  print(result.best_json(), flush=True)
  return 0


def _exit_on_sigterm():
  """SIGTERM ends the study as Ctrl-C does.

  Its running trials are stopped and stay unfinished in the record, so the
  next run reruns them.
  """
  import signal

  def stop(signum, frame):
    del frame
    raise KeyboardInterrupt(f'signal {signum}')

  signal.signal(signal.SIGTERM, stop)
