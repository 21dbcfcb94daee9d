"""ModelArguments: the hyperparameters and job arguments of a trainer.

The standard flags are defined by the concern they configure (see
`tensorfx.training._settings`); this class assembles them, reads run
configuration files and indexed list flags, and is what a trainer
subclasses to add its own.

This module must not import TensorFlow: a trainer parses its arguments
before anything else, and `--help` has to answer without TensorFlow's
start-up cost.
"""

import argparse
import enum
import inspect
import os
import shlex
import sys
from typing import Any, Dict, Optional, Sequence, Type, TypeVar, Union

from tensorfx import _argparsing
from tensorfx import _listflags
from tensorfx._errors import ConfigurationError
from tensorfx.training import _settings
from tensorfx.training._arguments import gematriaflags as _gematriaflags
from tensorfx.training._arguments import runconfig as _runconfig
from tensorfx.training._arguments.parsedjob import ParsedJob
from tensorfx.training._settings import _section

_A = TypeVar('_A', bound='ModelArguments')


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
  `tensorfx.training._arguments.runconfig` for its sections.

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
  def build_parser(cls) -> argparse.ArgumentParser:
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
    parser = _argparsing.SuggestingParser(
      prog=_argparsing.program_name(prog or 'trainer'),
      description=_description(cls),
      allow_abbrev=False,
      # Trainers written before --learning-rate was standard add their
      # own; theirs replaces it rather than failing as a conflict.
      conflict_handler='resolve',
    )

    _settings.add_arguments(parser)
    return parser

  @staticmethod
  def add_list_argument(
    parser: Any,
    *names: str,
    type: Any = None,
    help: Optional[str] = None,
    default: Optional[list] = None,
    **kwargs: Any,
  ) -> argparse.Action:
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
    return _listflags.add_list_argument(
      parser, *names, type=type, help=help, default=default, **kwargs
    )

  @classmethod
  def default(cls: Type[_A]) -> _A:
    """Creates an instance with the default value of every argument.

    Example:
      >>> ModelArguments.default().batch_size
      64

    Returns:
      The arguments, with default values, processed.
    """
    return cls.parse([])

  @classmethod
  def parse(
    cls, args: Union[None, str, Sequence[str]] = None, parse_job: bool = False
  ) -> Any:
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
      tuple of the arguments and the job's output path (a `ParsedJob`,
      which also reads as the arguments, with `output`: the original
      tensorfx's last form, `args = parse(parse_job=True)`).

    With `--config run.yaml` among them, the file's values are the
    defaults that the other arguments override; an indexed list flag
    (`--hidden-layers:2 5`) replaces one item of the file's list.

    Raises:
      ConfigurationError: an invalid indexed list flag, a missing --output
        with `parse_job`, an invalid run configuration (naming its file,
        line and key), or a value `process()` rejects. When `args` is None
        (the process's own command line) such an error is an argument
        error instead: the usage line and the message, then SystemExit(2).
      SystemExit: argparse rejected the arguments (unknown flag, bad value);
        it has printed the usage and the error, with the closest flag names
        for a mistyped one. Also (code 0) after `--print-config` has
        printed the resolved configuration.
    """
    command_line = args is None
    if args is None:
      args = sys.argv[1:]
    elif isinstance(args, str):
      args = shlex.split(args)
    parser = cls.build_parser()
    try:
      return cls._parse(parser, list(args), parse_job)
    except ConfigurationError as e:
      if not command_line:
        raise
      # The process's own command line: an error in it is an argument
      # error, in one line (exit 2), as argparse reports its own.
      parser.error(str(e))

  @classmethod
  def _parse(cls, parser, args, parse_job):
    if any(_gematriaflags.is_gematria(a) for a in args):
      # Gematria's --gematria_* flags, as its command line spells them.
      args = _gematriaflags.translate(
        args,
        {o for a in _argparsing.actions(parser) for o in a.option_strings},
      )
    defaults: dict = {}
    origins: dict = {}
    config = _runconfig.find_config(args)
    if config:
      defaults = _runconfig.resolve(
        parser, _runconfig.read_config(config), config, origins
      )
      for action in _argparsing.actions(parser):
        if action.dest in defaults:
          action.required = False  # The file gave it.
      parser.set_defaults(**defaults)
    argv, indexed = _listflags.rewrite_indexed(parser, args, bases=defaults)
    arguments = parser.parse_args(argv, namespace=cls())
    for dest, values in indexed.items():
      setattr(arguments, dest, values)
    if getattr(arguments, 'print_config', False):
      # Before --output is required: a configuration may not name one.
      arguments.process()
      sys.stdout.write(_runconfig.dump(parser, arguments.to_dict()))
      sys.stdout.flush()
      raise SystemExit(0)
    if parse_job and not arguments.output:
      raise ConfigurationError(
        '--output (or --job-dir) is required to run a training job: the '
        'directory (local or gs://) that checkpoints, summaries and the '
        'model are written to. Received no --output.'
      )
    try:
      arguments.process()
    except ConfigurationError as e:
      if not config:
        raise
      raise _runconfig.locate(e, parser, config, origins, argv) from None
    if parse_job:
      return ParsedJob(arguments, arguments.output)
    return arguments

  def process(self) -> None:
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
    _settings.check(self)
    if getattr(self, 'eval_batch_size', None) is None and hasattr(
      self, 'batch_size'
    ):
      self.eval_batch_size = self.batch_size

  def to_dict(self) -> Dict[str, Any]:
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
    """Raises unless flag `dest` is positive; for subclasses' `process()`."""
    _section.check_positive(self, dest, optional, expected)


def _description(cls):
  doc = inspect.getdoc(cls)
  return doc.split('\n\n', 1)[0] if doc else None


def _dests(parser):
  seen = []
  for action in _argparsing.actions(parser):
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
