"""The flags of embedding tables' optimizer, beside the tables.

`add_arguments` puts `--embedding-optimizer` and `--embedding-learning-rate`
on a parser, `check` validates them, `EmbeddingSettings` is their typed
value. `EmbeddingArguments` mixes them into a `ModelArguments` subclass.

No TensorFlow here (arguments are parsed before anything else), and no
import of `tensorfx.training`: this package sits below it. The arguments
class that the training side defines is composed with these flags, not the
other way round.
"""

import dataclasses
from typing import Any

from tensorfx._errors import ConfigurationError

# The same as tensorfx.embeddings._optimizers', which imports TensorFlow.
OPTIMIZERS = ('lazy-adam', 'adam', 'adagrad', 'ftrl', 'sgd')

_FLAG = '--embedding-optimizer'


def add_arguments(parser):
  """Adds the embedding flags to an `argparse` parser (once).

  Example:
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> parser.parse_args(['--embedding-optimizer', 'ftrl']).embedding_optimizer
    'ftrl'

  Args:
    parser: an `argparse.ArgumentParser`; a parser that has the flags
      already is left as it is.
  """
  if _FLAG in getattr(parser, '_option_string_actions', {}):
    return
  group = parser.add_argument_group('embedding tables')
  group.add_argument(
    _FLAG,
    type=str.lower,
    choices=OPTIMIZERS,
    default=parser.get_default('embedding_optimizer') or 'lazy-adam',
    help='the optimizer of embedding tables: lazy-adam updates only the '
    "rows a step looked up; adam is Keras' Adam, which decays every "
    "row's moments each step (default: %(default)s)",
  )
  group.add_argument(
    '--embedding-learning-rate',
    type=float,
    default=parser.get_default('embedding_learning_rate'),
    metavar='RATE',
    help='the learning rate of embedding tables (default: '
    '--learning-rate, with its schedule)',
  )


def check(args):
  """Checks the embedding flags' values.

  Raises:
    ConfigurationError: naming the flag and the value received.
  """
  rate = getattr(args, 'embedding_learning_rate', None)
  if rate is not None and rate <= 0:
    raise ConfigurationError(
      '--embedding-learning-rate must be a positive number. Received: '
      f'--embedding-learning-rate={rate}'
    )


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings:
  """How embedding tables train, from the parsed arguments.

  Example:
    >>> EmbeddingSettings.from_args(args)
    EmbeddingSettings(optimizer='lazy-adam', learning_rate=None)

  Attributes:
    optimizer: one of `OPTIMIZERS`.
    learning_rate: the tables' own rate, or None for the dense one.
  """

  optimizer: str = 'lazy-adam'
  learning_rate: float | None = None

  @classmethod
  def from_args(cls, args):
    """Reads the flags; arguments without them get the defaults."""
    return cls(
      optimizer=getattr(args, 'embedding_optimizer', None) or 'lazy-adam',
      learning_rate=getattr(args, 'embedding_learning_rate', None),
    )


class EmbeddingArguments:
  """Adds `--embedding-optimizer` and `--embedding-learning-rate`.

  A mixin: list it among the bases of a `ModelArguments` subclass, before
  or after the others, to choose how embedding tables train apart from the
  dense layers (`--optimizer`, `--learning-rate`).

  Example:
    >>> class Arguments(FeedForwardClassificationArguments,
    ...                 EmbeddingArguments):
    ...   pass
    >>> args = Arguments.parse(['--embedding-optimizer', 'adagrad',
    ...                         '--embedding-learning-rate', '0.05'])
    >>> args.embedding_optimizer, args.embedding_learning_rate
    ('adagrad', 0.05)
  """

  def __init_subclass__(cls, **kwargs):
    super().__init_subclass__(**kwargs)
    # A ModelArguments base listed first builds its parser without calling
    # on to this mixin, so every arguments class that mixes it in gets
    # build_parser and process that add the flags after its own.
    own_build = cls.__dict__.get('build_parser')
    own_process = cls.__dict__.get('process')

    def build_parser(klass):
      if own_build is not None:
        parser = own_build.__get__(None, klass)()
      else:
        following: Any = super(cls, klass)  # The next class of the MRO.
        parser = following.build_parser()
      add_arguments(parser)
      return parser

    def process(self):
      if own_process is not None:
        own_process(self)
      else:
        following: Any = super(cls, self)
        following.process()
      check(self)

    build_parser.__doc__ = getattr(own_build, '__doc__', None)
    process.__doc__ = getattr(own_process, '__doc__', None)
    mixed: Any = cls  # Its methods are replaced here.
    mixed.build_parser = classmethod(build_parser)
    mixed.process = process
