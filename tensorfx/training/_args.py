"""ModelArguments: the hyperparameters and job arguments of a trainer.

This module must not import TensorFlow: a trainer parses its arguments
before anything else, and `--help` has to answer without TensorFlow's
start-up cost.
"""

import argparse
import enum
import inspect
import os
import re
import shlex
import sys

from tensorfx._errors import ConfigurationError
from tensorfx.data import _filters
from tensorfx.training import _restore
from tensorfx.training import _runconfig
from tensorfx.training import _targets
from tensorfx.training import _tracking

_LOG_LEVELS = ('debug', 'info', 'warning', 'error')
_ACTIONS = ('train', 'evaluate', 'export')

# The same as tensorfx.training._optimizers', which imports TensorFlow.
_OPTIMIZERS = ('adam', 'sgd', 'rmsprop', 'adagrad', 'ftrl')
_SCHEDULES = ('constant', 'exponential', 'inverse-time', 'polynomial',
              'cosine', 'cosine-restarts', 'linear-cosine', 'natural-exp')
# Schedules whose formula uses --decay-rate.
_RATE_SCHEDULES = ('exponential', 'inverse-time', 'natural-exp')

# `--name:N` or `--name:N=value`; the index is validated separately so that
# `--name:x` gets a message about the index rather than "unknown flag".
_INDEXED = re.compile(r'^(--[^:=]+):([^=]*)(?:=(.*))?$', re.DOTALL)

# argparse's own test for a value that looks like a negative number; such a
# value after `--name:N` is a value, not a forgotten one followed by a flag.
_NEGATIVE_NUMBER = re.compile(r'^-\d+$|^-\d*\.\d+$')


class _ListAction(argparse.Action):
  """Stores a `nargs='+'` list and marks its flag as a list flag.

  The marker is the action's class: argument groups share their parser's
  actions, so the parser finds every list flag however it was added.
  """

  def __call__(self, parser, namespace, values, option_string=None):
    setattr(namespace, self.dest, list(values))


class _TargetAction(argparse.Action):
  """`--eval-target NAME KEY=VALUE ...`: adds a named validation target.

  The targets are a dict from name to specification; a run configuration
  gives them as mappings under `validation` (see `from_config`), and the
  command line adds to them or replaces one by name.
  """

  # The run configuration section whose mapping-valued keys are targets.
  config_section = 'validation'

  def __call__(self, parser, namespace, values, option_string=None):
    name, spec = _targets.parse_flag(values)
    target = _targets.from_spec(name, spec, where=f'--eval-target {name}')
    targets = dict(getattr(namespace, self.dest, None) or {})
    targets[name] = _targets.to_spec(target)
    setattr(namespace, self.dest, targets)

  @staticmethod
  def from_config(name, spec, where):
    """Checks one target of a run configuration; returns its typed spec."""
    return _targets.to_spec(_targets.from_spec(name, spec, where=where))


class ModelArguments(argparse.Namespace):
  """Hyperparameters and job arguments of a trainer.

  Parse them with `parse()`; add a model's own flags by overriding
  `build_parser()`, and derive or validate values by overriding `process()`
  (both call `super()`). Attributes are the flags with dashes turned into
  underscores: `--batch-size` is `args.batch_size`.

  List flags (`add_list_argument`) take their values either at once,
  `--hidden-layers 20 10`, or one at a time by 1-based index,
  `--hidden-layers:1 20 --hidden-layers:2 10`, which is how hyperparameter
  tuning services set a single item.

  Every flag can also come from a run configuration file, `--config
  run.yaml`, which flags on the command line override; see
  `tensorfx.training._runconfig` for its sections.

  Example:
    >>> class Arguments(ModelArguments):
    ...   @classmethod
    ...   def build_parser(cls):
    ...     parser = super().build_parser()
    ...     parser.add_argument('--dropout', type=float, default=0.1)
    ...     cls.add_list_argument(parser, '--hidden-layers', type=int)
    ...     return parser
    >>> args, output = Arguments.parse(
    ...     ['--output', '/tmp/job', '--hidden-layers:1', '20',
    ...      '--hidden-layers:2', '10'], parse_job=True)
    >>> args.hidden_layers, args.batch_size, output
    ([20, 10], 64, '/tmp/job')
  """

  @classmethod
  def build_parser(cls):
    """Builds the argument parser with the standard job arguments.

    Subclasses override it to add their model's flags, or to change a
    standard flag's default with `parser.set_defaults(learning_rate=0.01)`.
    A subclass that adds a flag of the same name replaces the standard one.

    Example:
      >>> class Arguments(ModelArguments):
      ...   @classmethod
      ...   def build_parser(cls):
      ...     parser = super().build_parser()
      ...     parser.add_argument('--dropout', type=float, default=0.1)
      ...     parser.set_defaults(learning_rate=0.01)
      ...     return parser

    Returns:
      An `argparse.ArgumentParser` with the arguments added.
    """
    # An embedded interpreter can have an empty sys.argv, where argparse's
    # own default for prog fails.
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else None
    parser = argparse.ArgumentParser(
        prog=prog or 'trainer', description=_description(cls),
        allow_abbrev=False,
        # Trainers written before --learning-rate was standard add their
        # own; theirs replaces it rather than failing as a conflict.
        conflict_handler='resolve')

    data = parser.add_argument_group('data')
    cls.add_list_argument(
        data, '--data-train', metavar='PATH',
        help='training data files or patterns (local or gs://)')
    cls.add_list_argument(
        data, '--data-eval', metavar='PATH',
        help='evaluation data files or patterns (local or gs://)')
    data.add_argument('--data-schema', metavar='PATH',
                      help='the schema of the data (YAML)')
    data.add_argument('--data-metadata', metavar='PATH',
                      help='the metadata of the data (an analysis output)')
    data.add_argument('--data-features', metavar='PATH',
                      help='the features of the model (YAML)')
    data.add_argument('--skip-bad-records', action='store_true',
                      help='skip bad CSV rows (wrong column count, '
                      'unparsable values) instead of failing the job; they '
                      'are counted in the log and the summaries')

    job = parser.add_argument_group('job')
    job.add_argument('--config', metavar='PATH',
                     help='a run configuration (YAML) giving any of these '
                     'flags; flags on the command line override it')
    # Cloud training services pass the output directory as --job-dir.
    job.add_argument('--output', '--job-dir', dest='output', metavar='PATH',
                     help='the job output directory (local or gs://): '
                     'checkpoints, summaries and the model go there')
    # --training-num-epochs: Gematria's name for the step count.
    job.add_argument('--max-steps', '--training-num-epochs', type=int,
                     default=1000, metavar='N',
                     help='training steps to run; 0 or less runs until the '
                     'data (see --epochs) runs out or the job is stopped '
                     '(default: %(default)s)')
    job.add_argument('--action', type=str.lower, choices=_ACTIONS,
                     default='train',
                     help='what ModelTrainer.train() does: train; evaluate '
                     'a checkpoint (--checkpoint, default the latest) on the '
                     'validation targets without training, then exit; or '
                     'export a checkpoint as the SavedModel (default: '
                     '%(default)s)')
    job.add_argument('--checkpoint', metavar='PATH',
                     help='the checkpoint --action evaluate/export reads: a '
                     'prefix (OUTPUT/checkpoints/ckpt-200), a directory (its '
                     'latest) (default: the latest of OUTPUT/checkpoints)')
    job.add_argument('--export-dir', metavar='PATH',
                     help='where --action export writes the SavedModel '
                     '(default: OUTPUT/model)')
    job.add_argument('--batch-size', type=int, default=64, metavar='N',
                     help='training instances per step (default: '
                     '%(default)s)')
    job.add_argument('--eval-batch-size', type=int, metavar='N',
                     help='evaluation instances per step (default: '
                     '--batch-size)')
    job.add_argument('--epochs', type=int, metavar='N',
                     help='passes over the training data (default: no limit, '
                     'see --max-steps)')
    job.add_argument('--shuffle', action=argparse.BooleanOptionalAction,
                     default=True,
                     help='shuffle the training data (default: on)')
    job.add_argument('--seed', type=int, metavar='N',
                     help='the random seed, for repeatable runs (default: '
                     'none)')
    job.add_argument('--steps-per-loop', type=int, metavar='N',
                     help='training steps run per tf.function call; more '
                     'steps amortize the call overhead (default: up to the '
                     'next log line, checkpoint or final step)')
    job.add_argument('--checkpoint-interval-secs', type=int, default=60,
                     metavar='SECS',
                     help='seconds between checkpoints (default: '
                     '%(default)s)')
    job.add_argument('--checkpoint-interval-steps', type=int, metavar='N',
                     help='steps between checkpoints, in addition to '
                     '--checkpoint-interval-secs (default: none)')

    job.add_argument('--cluster-timeout-secs', type=int, default=300,
                     metavar='S',
                     help='how long a task waits for the rest of the '
                     'cluster (and for the chief\'s data analysis) before '
                     'failing with the address it could not reach (default: '
                     '%(default)s)')

    cls._add_optimizer_arguments(parser)
    cls._add_control_arguments(parser)

    logging = parser.add_argument_group('logging')
    # Lower-cased first so that --log-level INFO is accepted too.
    logging.add_argument('--log-level', type=str.lower, choices=_LOG_LEVELS,
                         default='info',
                         help='the level of tensorfx logs (default: '
                         '%(default)s)')
    logging.add_argument('--log-level-tensorflow', type=str.lower,
                         choices=_LOG_LEVELS, default='warning',
                         help='the level of TensorFlow logs (default: '
                         '%(default)s)')
    logging.add_argument('--log-interval-steps', type=int, default=100,
                         metavar='N',
                         help='steps between progress logs and training '
                         'summaries (default: %(default)s)')
    return parser

  @staticmethod
  def _add_optimizer_arguments(parser):
    optimizer = parser.add_argument_group('optimizer')
    optimizer.add_argument('--optimizer', type=str.lower, choices=_OPTIMIZERS,
                           default='adam',
                           help='the optimizer of the default '
                           'build_optimizer() (default: %(default)s)')
    optimizer.add_argument('--learning-rate', type=float, default=0.001,
                           metavar='RATE',
                           help='the (initial) learning rate (default: '
                           '%(default)s)')
    optimizer.add_argument('--momentum', type=float, default=0.0,
                           metavar='M',
                           help='momentum of sgd and rmsprop (default: '
                           '%(default)s)')
    optimizer.add_argument('--nesterov', action=argparse.BooleanOptionalAction,
                           default=False,
                           help='Nesterov momentum, with --optimizer sgd '
                           '(default: off)')
    optimizer.add_argument('--learning-rate-schedule', type=str.lower,
                           choices=_SCHEDULES, default='constant',
                           help='how the learning rate changes with the '
                           'optimizer updates (default: %(default)s)')
    optimizer.add_argument('--decay-steps', type=int, metavar='N',
                           help='updates over which the schedule decays (the '
                           'first period of cosine-restarts) (default: '
                           '--max-steps / --accumulation-steps, less '
                           '--warmup-steps)')
    optimizer.add_argument('--decay-rate', type=float, metavar='R',
                           help='the decay rate of exponential, inverse-time '
                           'and natural-exp schedules')
    optimizer.add_argument('--end-learning-rate', type=float, metavar='RATE',
                           help='the final learning rate of polynomial and '
                           'cosine schedules (default: 0)')
    optimizer.add_argument('--warmup-steps', type=int, default=0, metavar='N',
                           help='updates over which the learning rate rises '
                           'linearly to the schedule\'s start (default: '
                           '%(default)s)')
    optimizer.add_argument('--clip-norm', type=float, metavar='NORM',
                           help='clip the gradients to this global norm, '
                           'after summing the replicas\' gradients')
    optimizer.add_argument('--clip-value', type=float, metavar='VALUE',
                           help='clip each gradient element to '
                           '[-VALUE, VALUE], after summing the replicas\' '
                           'gradients')
    optimizer.add_argument('--accumulation-steps', type=int, default=1,
                           metavar='N',
                           help='sum the gradients of N steps (minibatches) '
                           'and apply their mean once; the step count still '
                           'counts minibatches (default: %(default)s)')
    optimizer.add_argument('--trainable-pattern', metavar='REGEX',
                           help='train only the variables whose names match '
                           'this regular expression (re.search); the others '
                           'keep their values')

  @classmethod
  def _add_control_arguments(cls, parser):
    """Input filter, validation, guards, checkpoints, restore, tracking."""
    data = next(g for g in parser._action_groups  # pylint: disable=protected-access
                if g.title == 'data')
    cls.add_list_argument(
        data, '--data-filter', metavar='FIELD=REGEX',
        help='keep only the records whose FIELD matches REGEX (re.search; '
        'any value of a multivalent field); several must all match')
    validation = parser.add_argument_group('validation')
    validation.add_argument('--eval-batches', type=int, metavar='N',
                            help='batches of --data-eval per validation '
                            '(default: all of it)')
    validation.add_argument('--eval-online-agg', type=str.lower,
                            choices=_targets.ONLINE_AGGREGATIONS,
                            default='mean',
                            help='how --data-eval\'s batch results combine: '
                            'mean streams the metrics over all batches; sum, '
                            'min, max combine per-batch results; append '
                            'keeps them for --eval-agg (default: '
                            '%(default)s)')
    validation.add_argument('--eval-agg', type=str.lower,
                            choices=_targets.FINAL_AGGREGATIONS,
                            help='how --eval-online-agg append\'s per-batch '
                            'results reduce to one (default: mean)')
    validation.add_argument('--eval-target', dest='eval_targets',
                            action=_TargetAction, nargs='+',
                            metavar='NAME KEY=VALUE',
                            help='another validation target: NAME, then '
                            'data=PATHS (default: the dataset\'s source '
                            'NAME), batches=N, batch_size=N, online_agg=, '
                            'agg=; repeatable')
    validation.add_argument('--eval-interval-steps', type=int, metavar='N',
                            help='steps between validations (default: after '
                            'each checkpoint)')
    validation.add_argument('--validate-first',
                            action=argparse.BooleanOptionalAction,
                            default=False,
                            help='validate before the first training step '
                            '(default: off)')

    guards = parser.add_argument_group('guards')
    guards.add_argument('--thres-loss', type=float, metavar='LOSS',
                        help='stop with HighLossError when the training loss '
                        'exceeds LOSS (default: no limit)')
    guards.add_argument('--nan-restore', type=int, default=0, metavar='N',
                        help='on a non-finite loss, restore the last '
                        'checkpoint and train on, up to N times, before '
                        'stopping (default: %(default)s)')

    save = parser.add_argument_group('checkpoints')
    save.add_argument('--keep-checkpoints', type=int, default=5, metavar='N',
                      help='recent checkpoints to keep (default: '
                      '%(default)s)')
    save.add_argument('--keep-best-checkpoints', type=int, default=0,
                      metavar='K',
                      help='also keep the K best checkpoints by '
                      '--best-metric, in checkpoints/best/ (default: '
                      '%(default)s)')
    save.add_argument('--best-metric', metavar='[TARGET/]NAME[:min|max]',
                      help='the validation result that ranks checkpoints '
                      '(default: the model\'s evaluation_metric, loss:min, '
                      'on the first target)')

    load = parser.add_argument_group('restore')
    load.add_argument('--warm-start', metavar='PATH',
                      help='initialize a fresh job from this checkpoint (a '
                      'prefix, a directory, or another job\'s output), by '
                      'variable name; a job resuming its own checkpoint '
                      'ignores it')
    load.add_argument('--restore-pattern', metavar='REGEX',
                      help='warm-start only the variables whose names match '
                      '(re.search); the others keep their initial values')
    cls.add_list_argument(
        load, '--restore-rename', metavar='CKPT=MODEL',
        help='warm-start the model variable MODEL from the checkpoint '
        'variable CKPT')
    load.add_argument('--restore-global-step',
                      action=argparse.BooleanOptionalAction, default=False,
                      help='warm-start the global step too (default: off, '
                      'start at step 0)')

    tracking = parser.add_argument_group('tracking')
    tracking.add_argument('--experiment', metavar='NAME',
                          help='record the run in this MLflow experiment '
                          f'(needs {_tracking.INSTALL})')
    tracking.add_argument('--tracking-uri', metavar='URI',
                          help='the MLflow tracking store (default: '
                          'MLFLOW_TRACKING_URI, else sqlite:////OUTPUT/'
                          'mlruns.db)')

  @staticmethod
  def add_list_argument(parser, *names, type=None, help=None, default=None,  # pylint: disable=redefined-builtin
                        **kwargs):
    """Adds a list flag, settable whole or one item at a time by index.

    On the command line `--hidden-layers 20 10` and
    `--hidden-layers:1 20 --hidden-layers:2 10` (in any order) both give
    `args.hidden_layers == [20, 10]`.

    Example:
      >>> class Arguments(ModelArguments):
      ...   @classmethod
      ...   def build_parser(cls):
      ...     parser = super().build_parser()
      ...     cls.add_list_argument(parser, '--hidden-layers', type=int,
      ...                           help='units of each hidden layer')
      ...     return parser
      >>> Arguments.parse(['--hidden-layers:2', '10',
      ...                  '--hidden-layers:1', '20']).hidden_layers
      [20, 10]

    Args:
      parser: the parser, or an argument group of it, to add the flag to.
      *names: the flag's option strings, e.g. `'--hidden-layers'`.
      type: the type (a callable from a string) of each item; str if None.
      help: the flag's help text.
      default: the value (a list, or None) when the flag is not given.
      **kwargs: other `add_argument` arguments (`required`, `choices`,
        `metavar`, `dest`).

    Returns:
      The `argparse.Action` added.
    """
    if not names or not all(name.startswith('--') for name in names):
      raise ValueError(
          'A list flag needs one or more names that start with "--". '
          f'Received: {names!r}')
    if help is not None:
      help += ' '
    help = (help or '') + (
        f'(several values; or one at a time: {names[0]}:1 VALUE '
        f'{names[0]}:2 VALUE ...)')
    return parser.add_argument(*names, action=_ListAction, nargs='+',
                               type=type, default=default, help=help,
                               **kwargs)

  @classmethod
  def default(cls):
    """Creates an instance with the default value of every argument.

    Example:
      >>> ModelArguments.default().batch_size
      64

    Returns:
      The arguments, with default values, processed.
    """
    return cls.parse([])

  @classmethod
  def parse(cls, args=None, parse_job=False):
    """Parses training arguments.

    Example:
      >>> args, output = ModelArguments.parse(
      ...     ['--job-dir', 'gs://bucket/job', '--batch-size', '32'],
      ...     parse_job=True)
      >>> args.batch_size, output
      (32, 'gs://bucket/job')

    Args:
      args: the arguments to parse: a list of strings, or one string split
        as a shell would. If None, the process arguments (`sys.argv[1:]`).
      parse_job: whether to parse the job's arguments too: then `--output`
        (or `--job-dir`) is required and returned.

    Returns:
      The arguments (an instance of `cls`), processed; with `parse_job`, a
      tuple of the arguments and the job's output path.

    With `--config run.yaml` among them, the file's values are the
    defaults that the other arguments override; an indexed list flag
    (`--hidden-layers:2 5`) replaces one item of the file's list.

    Raises:
      ConfigurationError: an invalid indexed list flag, a missing --output
        with `parse_job`, an invalid run configuration (naming its file,
        line and key), or a value `process()` rejects.
      SystemExit: argparse rejected the arguments (unknown flag, bad value);
        it has printed the usage and the error.
    """
    if args is None:
      args = sys.argv[1:]
    elif isinstance(args, str):
      args = shlex.split(args)
    args = list(args)
    parser = cls.build_parser()
    defaults = {}
    config = _runconfig.find_config(args)
    if config:
      defaults = _runconfig.resolve(parser, _runconfig.read_config(config),
                                    config)
      for action in parser._actions:  # pylint: disable=protected-access
        if action.dest in defaults:
          action.required = False  # The file gave it.
      parser.set_defaults(**defaults)
    argv, indexed = _rewrite_indexed(parser, args, bases=defaults)
    arguments = parser.parse_args(argv, namespace=cls())
    for dest, values in indexed.items():
      setattr(arguments, dest, values)
    if parse_job and not arguments.output:
      raise ConfigurationError(
          '--output (or --job-dir) is required to run a training job: the '
          'directory (local or gs://) that checkpoints, summaries and the '
          'model are written to. Received no --output.')
    arguments.process()
    if parse_job:
      return arguments, arguments.output
    return arguments

  def process(self):
    """Validates the parsed arguments and derives values from them.

    `parse()` calls it. Subclasses override it to check their own flags or
    to derive attributes, and call `super().process()`.

    Example:
      >>> class Arguments(ModelArguments):
      ...   def process(self):
      ...     super().process()
      ...     if self.learning_rate <= 0:
      ...       raise ConfigurationError('--learning-rate must be positive. '
      ...                                f'Received: {self.learning_rate}')

    Raises:
      ConfigurationError: a value is out of range; the message names the
        flag and the value received.
    """
    # Only what is present is checked: an instance built by hand, e.g.
    # ModelArguments(batch_size=32), has just the attributes it was given.
    self._check_positive('batch_size')
    self._check_positive('eval_batch_size', optional=True)
    self._check_positive(
        'epochs', optional=True,
        expected='a positive integer, or no --epochs to repeat the data '
        'until --max-steps')
    self._check_positive('checkpoint_interval_secs')
    self._check_positive('checkpoint_interval_steps', optional=True)
    self._check_positive('log_interval_steps')
    self._check_positive('steps_per_loop', optional=True)
    self._check_positive('cluster_timeout_secs')
    seed = getattr(self, 'seed', None)
    # Seeds feed NumPy and Python's random as well, which reject negatives.
    if seed is not None and seed < 0:
      raise ConfigurationError(
          f'--seed must be a non-negative integer. Received: --seed={seed}')
    if (getattr(self, 'eval_batch_size', None) is None and
        hasattr(self, 'batch_size')):
      self.eval_batch_size = self.batch_size
    self._process_optimizer()
    self._process_controls()

  def _process_controls(self):
    """Checks validation, guard, checkpoint, restore and tracking flags."""
    self._check_positive('eval_batches', optional=True)
    self._check_positive('eval_interval_steps', optional=True)
    self._check_positive('keep_checkpoints')
    self._check_positive('thres_loss', optional=True,
                         expected='a positive number')
    for dest in ('keep_best_checkpoints', 'nan_restore'):
      value = getattr(self, dest, None)
      if value is not None and value < 0:
        flag = '--' + dest.replace('_', '-')
        raise ConfigurationError(
            f'{flag} must be zero or more. Received: {flag}={value}')
    if hasattr(self, 'eval_online_agg'):
      try:
        _targets.ValidationTarget(
            _targets.DEFAULT, online_agg=self.eval_online_agg or 'mean',
            agg=getattr(self, 'eval_agg', None))
      except ConfigurationError as e:
        raise ConfigurationError(
            f'{e} (flags --eval-online-agg, --eval-agg)') from None
    targets = getattr(self, 'eval_targets', None)
    if targets:
      for name, spec in targets.items():
        _targets.from_spec(name, spec, where=f'--eval-target {name}')
    best = getattr(self, 'best_metric', None)
    if best:
      parse_best_metric(best)
    _restore.compile_pattern(getattr(self, 'restore_pattern', None))
    _restore.parse_rename(getattr(self, 'restore_rename', None))
    if not getattr(self, 'warm_start', None):
      for dest in ('restore_pattern', 'restore_rename'):
        if getattr(self, dest, None):
          flag = '--' + dest.replace('_', '-')
          raise ConfigurationError(
              f'{flag} applies to --warm-start PATH. Received: {flag} without '
              '--warm-start')
    _filters.parse_filters(getattr(self, 'data_filter', None))
    if _tracking.requested(self):
      _tracking.require_mlflow()

  def _process_optimizer(self):
    """Checks the optimizer flags (each only where present)."""
    def flag(dest):
      return '--' + dest.replace('_', '-')

    for dest in ('learning_rate', 'clip_norm', 'clip_value', 'decay_rate'):
      self._check_positive(dest, optional=dest != 'learning_rate',
                           expected='a positive number')
    self._check_positive('decay_steps', optional=True)
    self._check_positive('accumulation_steps')
    for dest in ('warmup_steps', 'end_learning_rate'):
      value = getattr(self, dest, None)
      if value is not None and value < 0:
        raise ConfigurationError(
            f'{flag(dest)} must be zero or more. Received: '
            f'{flag(dest)}={value}')
    optimizer = getattr(self, 'optimizer', 'adam')
    momentum = getattr(self, 'momentum', None) or 0.0
    if not 0.0 <= momentum < 1.0:
      raise ConfigurationError(
          f'--momentum must be in [0, 1). Received: --momentum={momentum}')
    if momentum and optimizer not in ('sgd', 'rmsprop'):
      raise ConfigurationError(
          '--momentum applies to --optimizer sgd or rmsprop. Received: '
          f'--optimizer={optimizer} --momentum={momentum}')
    if getattr(self, 'nesterov', False) and optimizer != 'sgd':
      raise ConfigurationError(
          '--nesterov applies to --optimizer sgd. Received: '
          f'--optimizer={optimizer} --nesterov')
    if (getattr(self, 'clip_norm', None) is not None and
        getattr(self, 'clip_value', None) is not None):
      raise ConfigurationError(
          'Use one of --clip-norm and --clip-value. Received: '
          f'--clip-norm={self.clip_norm} --clip-value={self.clip_value}')
    schedule = getattr(self, 'learning_rate_schedule', 'constant')
    if schedule in _RATE_SCHEDULES and getattr(self, 'decay_rate',
                                               None) is None:
      raise ConfigurationError(
          f'--learning-rate-schedule {schedule} needs --decay-rate. '
          'Received: no --decay-rate')
    pattern = getattr(self, 'trainable_pattern', None)
    if pattern:
      try:
        re.compile(pattern)
      except re.error as e:
        raise ConfigurationError(
            f'--trainable-pattern must be a regular expression ({e}). '
            f'Received: --trainable-pattern={pattern}') from None

  def to_dict(self):
    """Returns every argument as plain values, to write as YAML or JSON.

    Example:
      >>> ModelArguments.parse(['--batch-size', '32']).to_dict()['batch_size']
      32

    Returns:
      A dict from argument name (the attribute name) to its value, in the
      order of the parser's flags; tuples become lists, other values that
      YAML and JSON cannot hold become strings.
    """
    result = {}
    for dest in _dests(type(self).build_parser()):
      if hasattr(self, dest):
        result[dest] = _plain(getattr(self, dest))
    return result

  def _check_positive(self, dest, optional=False, expected=None):
    value = getattr(self, dest, None)
    if value is None and (optional or not hasattr(self, dest)):
      return
    if value is None or value <= 0:
      flag = '--' + dest.replace('_', '-')
      expected = expected or 'a positive integer'
      raise ConfigurationError(
          f'{flag} must be {expected}. Received: {flag}={value}')


def parse_best_metric(spec, default=('loss', 'min')):
  """Parses `--best-metric [TARGET/]NAME[:min|max]`.

  Example:
    >>> parse_best_metric('holdout/accuracy:max')
    ('holdout', 'accuracy', 'max')

  Without a mode, `default`'s mode goes with `default`'s name, `min` with
  names ending in `loss` or `error`, and `max` with the others (accuracy,
  AUC).

  Args:
    spec: the flag's value, or None for `default` on the first target.
    default: the model's `evaluation_metric`, `(name, mode)`.

  Returns:
    `(target, name, mode)`; target is None for the first target.

  Raises:
    ConfigurationError: a malformed spec or mode.
  """
  if not spec:
    return (None, *default)
  target, _, rest = spec.rpartition('/')
  name, _, mode = rest.partition(':')
  if not mode:
    mode = default[1] if name == default[0] else (
        'min' if name.endswith('loss') or name.endswith('error') else 'max')
  if not name or mode not in ('min', 'max'):
    raise ConfigurationError(
        '--best-metric expects [TARGET/]NAME[:min|max], e.g. '
        f'holdout/accuracy:max. Received: --best-metric={spec}')
  return (target or None, name, mode)


def _description(cls):
  doc = inspect.getdoc(cls)
  return doc.split('\n\n', 1)[0] if doc else None


def _dests(parser):
  # parser._actions includes every argument group's actions; argparse has no
  # public way to list them.
  seen = []
  for action in parser._actions:  # pylint: disable=protected-access
    if action.dest is argparse.SUPPRESS or action.dest == 'help':
      continue
    if action.dest not in seen:
      seen.append(action.dest)
  return seen


def _plain(value):
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  if isinstance(value, enum.Enum):
    return _plain(value.value)
  if isinstance(value, os.PathLike):
    return os.fspath(value)
  if isinstance(value, (list, tuple)):
    return [_plain(item) for item in value]
  if isinstance(value, dict):
    return {str(key): _plain(item) for key, item in value.items()}
  return str(value)


def _rewrite_indexed(parser, argv, bases=None):
  """Turns the indexed form of list flags into what argparse understands.

  Args:
    parser: the parser; its `_ListAction`s are the list flags.
    argv: the arguments.
    bases: dest to the list a run configuration gave; indexed items
      replace or extend (without gaps) its items.

  Returns:
    The arguments with each indexed list flag replaced by one placeholder
    `--name=FIRST` (so that argparse sees the flag: `required` holds), and
    a dict from dest to the typed, ordered values that must then replace
    the placeholder's.

  Raises:
    ConfigurationError: a bad index, a gap, a duplicate, a value of the
      wrong type, an indexed form of a flag that is not a list flag, or a
      flag given both ways.
  """
  list_actions = {}
  for action in parser._actions:  # pylint: disable=protected-access
    if isinstance(action, _ListAction):
      for name in action.option_strings:
        list_actions[name] = action

  items = {}      # dest -> {index: (token, value)}
  names = {}      # dest -> the name first used in the indexed form
  slots = {}      # dest -> position of its placeholder in the output
  whole = {}      # dest -> the name used in the whole-list form
  output = []
  i = 0
  while i < len(argv):
    token = argv[i]
    i += 1
    if token == '--':
      # Everything after `--` is positional, never a flag.
      output.append(token)
      output.extend(argv[i:])
      break
    match = _INDEXED.match(token) if token.startswith('--') else None
    if not match:
      action = list_actions.get(token.partition('=')[0])
      if action is not None:
        whole.setdefault(action.dest, token.partition('=')[0])
      output.append(token)
      continue

    name, index_text, value = match.groups()
    flag = f'{name}:{index_text}'
    action = list_actions.get(name)
    if action is None:
      declared = sorted(list_actions)
      raise ConfigurationError(
          f'{flag} is an indexed list flag, but {name} is not a list flag. '
          'The indexed form NAME:N is accepted for '
          f'{", ".join(declared) if declared else "no flag"}. '
          f'Received: {flag}')
    if not re.fullmatch(r'[0-9]+', index_text) or int(index_text) < 1:
      raise ConfigurationError(
          f'{flag}: the index of a list flag must be a positive integer '
          f'(1-based), as in {name}:1. Received: {flag}')
    if value is None:
      if i >= len(argv) or (argv[i].startswith('-') and
                            not _NEGATIVE_NUMBER.match(argv[i])):
        raise ConfigurationError(
            f'{flag} expects a value (write {flag}=VALUE for a value that '
            'starts with "-"). Received no value.')
      value = argv[i]
      i += 1

    index = int(index_text)
    entries = items.setdefault(action.dest, {})
    if index in entries:
      raise ConfigurationError(
          f'{name}:{index} is given more than once. Received: '
          f'{entries[index][0]}={entries[index][1]} and {flag}={value}')
    entries[index] = (flag, value)
    names.setdefault(action.dest, name)
    if action.dest not in slots:
      slots[action.dest] = len(output)
      output.append(None)

  typed = {}
  for dest, entries in items.items():
    name = names[dest]
    if dest in whole:
      raise ConfigurationError(
          f'{name} is given both as a list ({whole[dest]} VALUE ...) and one '
          f'item at a time ({name}:N VALUE); use one form. Received: '
          f'{whole[dest]} and {", ".join(f for f, _ in entries.values())}')
    indices = sorted(entries)
    base = list((bases or {}).get(dest) or [])
    missing = [n for n in range(1, indices[-1] + 1)
               if n not in entries and n > len(base)]
    if missing:
      raise ConfigurationError(
          f'{name}:{missing[0]} is missing (got indices '
          f'{", ".join(str(n) for n in indices)}): the indices of a list '
          'flag must run from 1 without gaps.')
    action = list_actions[name]
    values = base + [None] * max(0, indices[-1] - len(base))
    for n in indices:
      values[n - 1] = _convert(parser, action, *entries[n])
    typed[dest] = values
    # argparse converts this again; it is valid, the conversion above proved
    # it. The = form keeps a value that starts with "-" a value.
    output[slots[dest]] = (
        f'{action.option_strings[0]}={entries[indices[0]][1]}')
  return output, typed


def _convert(parser, action, flag, value):
  """Applies a list flag's type and choices to one indexed value."""
  convert = action.type
  if convert is not None and not callable(convert):
    # argparse also accepts the name of a registered type, e.g. 'int'.
    convert = parser._registry_get('type', convert, convert)  # pylint: disable=protected-access
  if convert is not None:
    try:
      value = convert(value)
    except (TypeError, ValueError, argparse.ArgumentTypeError) as e:
      kind = getattr(convert, '__name__', repr(convert))
      detail = f' ({e})' if isinstance(e, argparse.ArgumentTypeError) else ''
      raise ConfigurationError(
          f'{flag} expects a value of type {kind}{detail}. '
          f'Received: {flag}={value}') from None
  if action.choices is not None and value not in action.choices:
    raise ConfigurationError(
        f'{flag} expects one of {", ".join(map(str, action.choices))}. '
        f'Received: {flag}={value}')
  return value
