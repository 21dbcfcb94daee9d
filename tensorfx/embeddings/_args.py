"""EmbeddingArguments: the flags of embedding tables' optimizer.

No TensorFlow here: arguments are parsed before anything else.
"""

from tensorfx.training._args import ModelArguments

# The same as tensorfx.embeddings._optimizers', which imports TensorFlow.
_OPTIMIZERS = ('lazy-adam', 'adam', 'adagrad', 'ftrl', 'sgd')


class EmbeddingArguments(ModelArguments):
  """Adds `--embedding-optimizer` and `--embedding-learning-rate`.

  Mix it into a model's arguments to choose how embedding tables train,
  apart from the dense layers (`--optimizer`, `--learning-rate`).

  Example:
    >>> class Arguments(FeedForwardClassificationArguments,
    ...                 EmbeddingArguments):
    ...   pass
    >>> args = Arguments.parse(['--embedding-optimizer', 'adagrad',
    ...                         '--embedding-learning-rate', '0.05'])
    >>> args.embedding_optimizer, args.embedding_learning_rate
    ('adagrad', 0.05)
  """

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    group = parser.add_argument_group('embedding tables')
    group.add_argument(
        '--embedding-optimizer', type=str.lower, choices=_OPTIMIZERS,
        default='lazy-adam',
        help='the optimizer of embedding tables: lazy-adam updates only the '
        "rows a step looked up; adam is Keras' Adam, which decays every "
        "row's moments each step (default: %(default)s)")
    group.add_argument(
        '--embedding-learning-rate', type=float, default=None, metavar='RATE',
        help='the learning rate of embedding tables (default: '
        '--learning-rate, with its schedule)')
    return parser

  def process(self):
    super().process()
    self._check_positive('embedding_learning_rate', optional=True,
                         expected='a positive number')
