"""ModelBuilder: the hooks' call order, defaults and early errors."""

import pytest
import tensorflow as tf
import tf_keras

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training import _builder

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


class Recording(nn.FeedForwardClassification):
  """Records each hook call as (hook, detail), eager or traced."""

  def __init__(self, args, dataset):
    super().__init__(args, dataset)
    self.calls = []

  def _record(self, hook, detail=None):
    self.calls.append((hook, detail, tf.executing_eagerly()))

  def build_input(self, source, batch, epochs, shuffle):
    self._record('build_input', source)
    return super().build_input(source, batch, epochs, shuffle)

  def build_inference(self, inputs, training):
    self._record('build_inference', training)
    return super().build_inference(inputs, training)

  def build_training(self, global_steps, inputs, inferences):
    self._record('build_training')
    return super().build_training(global_steps, inputs, inferences)

  def build_output(self, inferences):
    self._record('build_output')
    return super().build_output(inferences)

  def build_evaluation(self, inputs, outputs):
    self._record('build_evaluation')
    return super().build_evaluation(inputs, outputs)

  def build_init(self):
    self._record('build_init')


@pytest.mark.release
def test_hook_order(tmp_path, iris_dataset_factory):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path, '--max-steps', '4', '--log-interval-steps', '2'),
    parse_job=True,
  )
  builder = Recording(args, iris_dataset_factory())
  training.ModelTrainer().train(builder, job)
  serving_trace = [
    ('build_inference', False, False),
    ('build_output', None, False),
  ]
  assert builder.calls == [
    # The training input, then one eager pass that creates every
    # variable (layers, optimizer slots, metrics) under the strategy.
    ('build_input', 'train', True),
    ('build_inference', False, True),
    ('build_training', None, True),
    ('build_output', None, True),
    ('build_evaluation', None, True),
    # A fresh model (no checkpoint to resume) is initialized once.
    ('build_init', None, True),
    # The training step is traced once, however many steps run.
    ('build_inference', True, False),
    ('build_training', None, False),
    # The model of the three serving signatures (CSV, tf.Example,
    # features), traced once, right after the first training call: a model
    # that cannot be served fails within the first minute, without
    # delaying step 1.
    *serving_trace,
    # The final evaluation: a fresh pass over the eval source, traced.
    ('build_input', 'eval', True),
    ('build_inference', False, False),
    ('build_output', None, False),
    ('build_training', None, False),
    ('build_evaluation', None, False),
    # Export reuses the traced signatures: no further calls.
  ]


class OwnTrainingGraph(nn.FeedForwardClassification):
  """Replaces one graph builder, calling the default inside."""

  calls = 0

  def build_training_graph(self):
    OwnTrainingGraph.calls += 1
    return super().build_training_graph()


def test_the_engine_calls_a_builders_own_version_only_where_it_has_one(
  tmp_path, iris_dataset_factory, monkeypatch
):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path, '--max-steps', '2'), parse_job=True
  )
  assert _builder.overrides(Recording(args, iris_dataset_factory())) == {
    'build_input'
  }
  builder = OwnTrainingGraph(args, iris_dataset_factory())
  assert _builder.overrides(builder) == {'build_training_graph'}
  # ModelBuilder's defaults run in the engine, not through the builder.
  bounced = []
  for name in ('build_input', 'build_evaluation_graph'):
    default = getattr(training.ModelBuilder, name)
    monkeypatch.setattr(
      training.ModelBuilder,
      name,
      lambda self, *a, _d=default, _n=name: bounced.append(_n) or _d(self, *a),
    )
  training.ModelTrainer().train(builder, job)
  assert OwnTrainingGraph.calls == 1
  assert bounced == []


def test_build_init_is_skipped_when_resuming(tmp_path, iris_dataset_factory):
  argv = iris_args(tmp_path, '--max-steps', '2')
  for expected in (1, 0):
    args, job = nn.FeedForwardClassificationArguments.parse(
      argv, parse_job=True
    )
    builder = Recording(args, iris_dataset_factory())
    training.ModelTrainer().train(builder, job)
    assert [c[0] for c in builder.calls].count('build_init') == expected


class _PythonControlFlow(nn.FeedForwardClassification):
  """Hooks with Python `if`/`for`/`while` over tensors (autograph's work)."""

  def build_inference(self, inputs, training):
    inferences = super().build_inference(inputs, training)
    # A Python `if` on a tensor: an error in a graph unless converted.
    if tf.reduce_max(tf.abs(inferences)) > 1e9:
      inferences = inferences * 0.0
    return inferences

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    extra = tf.constant(0.0)
    for _ in tf.range(2):  # Iterating a tensor: converted to a while loop.
      extra += 0.0
    while extra > 1.0:
      extra -= 1.0
    return loss + extra, optimizer


@pytest.mark.parametrize(
  'flags', [(), ('--jit-compile',)], ids=['plain', 'xla']
)
def test_python_control_flow_over_tensors_works_in_traced_hooks(
  tmp_path, iris_dataset_factory, flags
):
  # The trainer converts the hooks with autograph (not its own step, which
  # would only cost start-up time): as a tf.function would.
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      tmp_path, '--max-steps', '4', '--log-interval-steps', '2', *flags
    ),
    parse_job=True,
  )
  model = training.ModelTrainer().train(
    _PythonControlFlow(args, iris_dataset_factory()), job
  )
  assert tf.train.latest_checkpoint(tmp_path / 'checkpoints').endswith('ckpt-4')
  assert model.predict(['5.1,3.5,1.4,0.2'])[0]['label'] in (
    'setosa',
    'versicolor',
    'virginica',
  )


class _NoModel(training.ModelBuilder):
  pass


def test_missing_hooks_name_themselves(tmp_path, iris_dataset_factory):
  args, job = training.ModelArguments.parse(iris_args(tmp_path), parse_job=True)
  with pytest.raises(
    NotImplementedError,
    match=r'_NoModel must implement '
    r'build_inference\(inputs, training\)',
  ):
    training.ModelTrainer().train(_NoModel(args, iris_dataset_factory()), job)


class _NoVariables(training.ModelBuilder):
  def build_inference(self, inputs, training):
    return inputs['X']

  def build_training(self, global_steps, inputs, inferences):
    return tf.reduce_mean(inferences), self.optimizer


def test_builder_without_variables_is_rejected(tmp_path, iris_dataset_factory):
  args, job = training.ModelArguments.parse(iris_args(tmp_path), parse_job=True)
  with pytest.raises(ConfigurationError, match='created no trainable'):
    training.ModelTrainer().train(
      _NoVariables(args, iris_dataset_factory()), job
    )


def test_strategy_is_available_only_after_building(iris_dataset_factory):
  builder = _NoModel(training.ModelArguments.default(), iris_dataset_factory())
  with pytest.raises(ConfigurationError, match='build_graph_interfaces'):
    _ = builder.strategy


def test_default_optimizer_uses_learning_rate(iris_dataset_factory):
  args = nn.FeedForwardClassificationArguments.parse(['--learning-rate', '0.5'])
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  assert isinstance(builder.optimizer, tf_keras.optimizers.Adam)
  assert float(builder.optimizer.learning_rate) == pytest.approx(0.5)
  assert builder.optimizer is builder.optimizer


def test_training_loop_takes_every_batch_once_across_calls(
  tmp_path, iris_dataset_factory
):
  # 120 rows in batches of 16: 7 full batches and one of 8. Calls of 3
  # steps each must run 3, 3, then the last 2 (the data ends), losing no
  # batch between calls to the look-ahead of the loop's end test.
  args = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path, '--no-shuffle', '--epochs', '1', '--batch-size', '16')
  )
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  interface, _, _ = builder.build_graph_interfaces(
    training.Configuration.local()
  )
  iterator = iter(interface.dataset)
  ran = [
    int(interface.loop(iterator, tf.constant(3, tf.int64))[1]) for _ in range(4)
  ]
  assert ran == [3, 3, 2, 0]
  assert int(interface.global_step.numpy()) == 8
