"""The embedding flags: mixed into any arguments class, without training's code."""

import argparse
import ast
import pathlib

import pytest

from tensorfx import ConfigurationError
from tensorfx import embeddings
from tensorfx.embeddings import _args
from tensorfx.models import nn
from tensorfx.training import ModelArguments

PACKAGE = pathlib.Path(embeddings.__file__).parent


class MixinLast(
  nn.FeedForwardClassificationArguments, embeddings.EmbeddingArguments
):
  """The README's order: the model's arguments, then the mixin."""


class MixinFirst(embeddings.EmbeddingArguments, ModelArguments):
  """The other order."""


class OwnFlags(MixinLast):
  """A subclass adding flags and checks of its own."""

  @classmethod
  def build_parser(cls):
    parser = super().build_parser()
    parser.add_argument('--towers', type=int, default=2)
    parser.set_defaults(embedding_optimizer='adagrad')
    return parser

  def process(self):
    super().process()
    if self.towers < 1:
      raise ConfigurationError(
        f'--towers must be positive. Received: --towers={self.towers}'
      )


@pytest.mark.parametrize('cls', [MixinLast, MixinFirst, OwnFlags])
def test_the_mixin_adds_its_flags_in_any_base_order(cls):
  args = cls.parse(
    [
      '--embedding-optimizer',
      'FTRL',
      '--embedding-learning-rate',
      '0.05',
      '--learning-rate',
      '0.2',
    ]
  )
  assert args.embedding_optimizer == 'ftrl'
  assert args.embedding_learning_rate == 0.05
  assert args.learning_rate == 0.2
  assert args.to_dict()['embedding_optimizer'] == 'ftrl'
  with pytest.raises(
    ConfigurationError,
    match='--embedding-learning-rate '
    'must be a positive number. Received: '
    '--embedding-learning-rate=-1.0',
  ):
    cls.parse(['--embedding-learning-rate', '-1'])


def test_defaults_and_a_subclass_s_own_flags_and_checks():
  assert MixinLast.parse([]).embedding_optimizer == 'lazy-adam'
  assert MixinLast.parse([]).embedding_learning_rate is None
  assert MixinLast.parse([]).hidden_layers == []  # the model's flags stay
  args = OwnFlags.parse([])
  assert args.towers == 2
  assert args.embedding_optimizer == 'adagrad'  # its set_defaults holds
  with pytest.raises(ConfigurationError, match='--towers must be positive'):
    OwnFlags.parse(['--towers', '0'])
  with pytest.raises(SystemExit):
    MixinFirst.parse(['--embedding-optimizer', 'rmsprop'])


def test_settings_and_parser_functions_work_without_an_arguments_class():
  parser = argparse.ArgumentParser()
  _args.add_arguments(parser)
  _args.add_arguments(parser)  # once only
  args = parser.parse_args(['--embedding-optimizer', 'sgd'])
  assert _args.EmbeddingSettings.from_args(args) == _args.EmbeddingSettings(
    optimizer='sgd', learning_rate=None
  )
  assert (
    _args.EmbeddingSettings.from_args(argparse.Namespace())
    == _args.EmbeddingSettings()
  )


def _imports(path):
  """Every module a file imports, at any depth (lazy imports too)."""
  names = []
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      names += [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
      names.append(node.module)
  return names


def test_embeddings_import_no_higher_layer():
  higher = (
    'tensorfx.training',
    'tensorfx.models',
    'tensorfx.cloud',
    'tensorfx.tools',
    'tensorfx.prediction',
    'tensorfx.data',
  )
  found = {
    path.name: [n for n in _imports(path) if n.startswith(higher)]
    for path in sorted(PACKAGE.glob('*.py'))
  }
  assert {name: bad for name, bad in found.items() if bad} == {}
