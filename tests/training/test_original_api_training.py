"""The original tensorfx's last training API works beside tensorfx's own.

`args = parse(parse_job=True)` with `args.output`, builders made without a
dataset and `ModelTrainer().train(builder, dataset, output)`, arguments set
in code from `default()`, the task reported as `master`, a `TF_CONFIG`
cluster of empty jobs, the interfaces' `graph`, and `build_init`'s use after
a restore.
"""

import json
import pickle
from typing import ClassVar

import pytest

from tensorfx import ConfigurationError
from tensorfx.models import nn
from tensorfx.models.nn._feedforward import hidden_layers
from tensorfx.training import Configuration
from tensorfx.training import ModelArguments
from tensorfx.training import ModelTrainer
from tensorfx.training import TaskSpec


def test_parse_job_reads_as_the_pair_and_as_the_arguments():
  job = ModelArguments.parse(
    ['--output', '/tmp/j', '--batch-size', '7'], parse_job=True
  )
  args, output = job  # tensorfx's (and the original's first) form.
  assert (args.batch_size, output) == (7, '/tmp/j')
  assert (job.batch_size, job.output) == (7, '/tmp/j')  # the last form.
  job.max_steps = 12
  assert args.max_steps == 12
  again = pickle.loads(pickle.dumps(job))
  assert again.output == '/tmp/j' and again.max_steps == 12


def test_default_arguments_take_hidden_layer_tuples_set_afterwards():
  args = nn.FeedForwardClassificationArguments.default()
  args.batch_size = 5
  args.checkpoint_interval_secs = 1
  args.hidden_layers = [('l1', 20, 'relu'), ('l2', 10, 'tanh')]
  assert hidden_layers(args.hidden_layers) == [
    ('l1', 20, 'relu'),
    ('l2', 10, 'tanh'),
  ]
  assert hidden_layers([20, 10]) == [
    ('hidden1', 20, 'relu'),
    ('hidden2', 10, 'relu'),
  ]
  with pytest.raises(ConfigurationError, match='positive number of units'):
    hidden_layers([('l1', 0, 'relu')])
  with pytest.raises(ConfigurationError, match=r'hidden_layers\[0\]'):
    hidden_layers([(1, 20, 'relu')])


def test_a_builder_without_a_dataset_says_where_to_give_it():
  builder = nn.FeedForwardClassification(
    nn.FeedForwardClassificationArguments.parse(
      ['--output', 'o'], parse_job=True
    )
  )
  assert builder.args.output == 'o'  # The arguments, not the pair.
  with pytest.raises(
    ConfigurationError, match=r'train\(builder, dataset, output\)'
  ):
    _ = builder.dataset


@pytest.mark.parametrize(
  'environ', [{}, {'TF_CONFIG': ''}, {'TF_CONFIG': '{}'}]
)
def test_single_node_reports_the_master_task(environ):
  for config in (Configuration.local(), Configuration.environment(environ)):
    assert config.task.type == 'master' and config.master
    # Inside tensorfx the master is the chief: both names hold.
    assert config.task.type == 'chief'
    assert config.task == TaskSpec('chief', 0)
    assert config.task == TaskSpec('master', 0)
    assert not config.distributed
    assert config.to_dict()['task']['type'] == 'chief'


def test_a_cluster_of_empty_jobs_is_accepted_as_the_original_did():
  config = Configuration.environment(
    {
      'TF_CONFIG': json.dumps(
        {'cluster': {'hosts': []}, 'task': {'type': 'master'}}
      )
    }
  )
  assert config.distributed and config.master
  assert config.task.type == 'master'
  # The original reported the cluster it was given, its jobs taskless.
  assert config.cluster is not None and config.cluster.jobs == ['hosts']
  assert config.training_cluster is None
  # It trains as a lone chief all the same.
  assert config.strategy_kind == 'default' and config.device == ''
  empty = Configuration.environment(
    {'TF_CONFIG': json.dumps({'cluster': {}, 'task': {'type': 'master'}})}
  )
  assert not empty.distributed
  # A cluster with tasks still may not hold an empty job.
  with pytest.raises(ConfigurationError, match='cluster.worker'):
    Configuration.environment(
      {
        'TF_CONFIG': json.dumps(
          {
            'cluster': {'chief': ['c:1'], 'worker': []},
            'task': {'type': 'chief'},
          }
        )
      }
    )


class _Recording(nn.FeedForwardClassification):
  """Records each call of build_init (a class list: one per test run)."""

  calls: ClassVar[list] = []

  def build_init(self, restored=False):
    super().build_init(restored)
    type(self).calls.append(restored)


class _FreshOnly(nn.FeedForwardClassification):
  """An override written before build_init took `restored`."""

  calls: ClassVar[list] = []

  def build_init(self):
    super().build_init()
    type(self).calls.append('fresh')


def _args(*extra):
  return nn.FeedForwardClassificationArguments.parse(
    [
      '--max-steps',
      '3',
      '--batch-size',
      '10',
      '--hidden-layers',
      '4',
      '--checkpoint-interval-secs',
      '600',
      '--log-level',
      'ERROR',
      *extra,
    ]
  )


@pytest.mark.release
@pytest.mark.slow
def test_build_init_runs_fresh_then_after_the_restore(
  iris_dataset_factory, tmp_path
):
  output = str(tmp_path / 'job')
  trainer = ModelTrainer(Configuration.local())
  trainer.train(_Recording(_args()), iris_dataset_factory(), output)
  trainer.train(
    _Recording(_args('--max-steps', '6')), iris_dataset_factory(), output=output
  )
  assert _Recording.calls == [False, True]
  # An override without `restored` is called for fresh models only.
  fresh = str(tmp_path / 'fresh')
  trainer.train(_FreshOnly(_args()), iris_dataset_factory(), fresh)
  trainer.train(
    _FreshOnly(_args('--max-steps', '6')), iris_dataset_factory(), fresh
  )
  assert _FreshOnly.calls == ['fresh']


@pytest.mark.slow
def test_the_interfaces_hold_their_traced_graphs(iris_dataset_factory):
  builder = nn.FeedForwardClassification(_args())
  builder.use_dataset(iris_dataset_factory())
  training, evaluation, prediction = builder.build_graph_interfaces(
    Configuration.local()
  )
  types = {}
  for name, interface in (
    ('training', training),
    ('evaluation', evaluation),
    ('prediction', prediction),
  ):
    graph = interface.graph
    # With the ops of the functions the graph calls (serving's signatures
    # share one traced model).
    types[name] = {op.type for op in graph.get_operations()} | {
      node.op
      for function in graph.as_graph_def().library.function
      for node in function.node_def
    }
  # The loops are while loops over their iterators; serving parses CSV
  # lines and runs the model on them.
  assert {'While', 'Placeholder'} <= types['training']
  assert 'IteratorGetNextAsOptional' in types['training']
  assert 'While' in types['evaluation']
  assert {'DecodeCSV', 'MatMul', 'Softmax'} <= types['prediction']
