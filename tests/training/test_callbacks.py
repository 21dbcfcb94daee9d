"""Callbacks: the order they are called in, stopping, failures, evaluate."""

import pytest
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow


class Recording(training.Callback):
  """Records (name, event, detail) into a shared list."""

  def __init__(self, name, calls):
    super().__init__()
    self.name = name
    self.calls = calls
    self.end_logs = None

  def on_train_begin(self, logs):
    self.calls.append((self.name, 'on_train_begin', logs['step']))

  def on_step_end(self, step, logs):
    assert set(logs) >= {
      'loss',
      'examples_per_sec',
      'steps_per_sec',
      'learning_rate',
    }
    self.calls.append((self.name, 'on_step_end', step))

  def on_checkpoint(self, step, path):
    assert path.endswith(f'ckpt-{step}')
    self.calls.append((self.name, 'on_checkpoint', step))

  def on_evaluate_end(self, step, results):
    assert list(results) == ['eval']
    assert results.examples['eval'] == 30
    checkpoints = self.context.checkpoints
    if checkpoints.keep_best_count:
      # Built-in callbacks ran first: the best checkpoints include this.
      assert step in [e['step'] for e in checkpoints.best]
    self.calls.append((self.name, 'on_evaluate_end', step))

  def on_train_end(self, logs):
    self.end_logs = dict(logs)
    self.calls.append((self.name, 'on_train_end', logs['status']))


class WithCallbacks(nn.FeedForwardClassification):
  """A builder that returns its own callbacks from the hook."""

  callbacks = ()

  def build_callbacks(self):
    return list(self.callbacks)


def _train(tmp_path, dataset, callbacks=(), builder_callbacks=(), *extra):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path, '--hidden-layers:1', '8', *extra), parse_job=True
  )
  builder = WithCallbacks(args, dataset)
  builder.callbacks = builder_callbacks
  model = training.ModelTrainer(callbacks=list(callbacks)).train(builder, job)
  return builder, model


def test_callback_order(tmp_path, iris_dataset_factory):
  calls = []
  trainer_callback = Recording('trainer', calls)
  builder_callback = Recording('builder', calls)
  _train(
    tmp_path,
    iris_dataset_factory(),
    [trainer_callback],
    [builder_callback],
    '--max-steps',
    '4',
    '--log-interval-steps',
    '2',
    '--checkpoint-interval-steps',
    '2',
    '--keep-best-checkpoints',
    '3',
  )
  events = [
    ('on_train_begin', 0),
    ('on_step_end', 2),
    ('on_checkpoint', 2),
    ('on_evaluate_end', 2),
    ('on_step_end', 4),
    ('on_checkpoint', 4),
    ('on_evaluate_end', 4),
    ('on_train_end', 'completed'),
  ]
  # Each event reaches the trainer's callbacks, then the builder's.
  assert calls == [
    (who, event, detail)
    for event, detail in events
    for who in ('trainer', 'builder')
  ]
  logs = trainer_callback.end_logs
  assert logs['status'] == 'completed' and logs['step'] == 4
  assert logs['model'] == str(tmp_path / 'model')
  assert set(logs['metrics']) >= {'loss', 'accuracy'}


class StopAt(training.Callback):
  def __init__(self, step):
    super().__init__()
    self.step = step
    self.end_logs = None

  def on_step_end(self, step, logs):
    if step >= self.step:
      self.context.stop(f'reached step {step}')

  def on_train_end(self, logs):
    self.end_logs = dict(logs)


def test_a_callback_stops_training(tmp_path, iris_dataset_factory):
  stop = StopAt(3)
  _, model = _train(
    tmp_path,
    iris_dataset_factory(),
    [stop],
    (),
    '--max-steps',
    '100',
    '--log-interval-steps',
    '1',
  )
  assert stop.end_logs['status'] == 'stopped'
  assert stop.end_logs['reason'] == 'reached step 3'
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'completed' and job['global_step'] == 3
  assert job['stopped'] == 'reached step 3'
  # Stopped like a normal end: a checkpoint, a validation, an export.
  assert (tmp_path / 'checkpoints' / 'ckpt-3.index').exists()
  assert set(job['metrics']) >= {'loss', 'accuracy'}
  assert len(model.predict(['6.3,3.3,6,2.5'])) == 1


class Failing(training.Callback):
  def __init__(self):
    super().__init__()
    self.end_logs = None

  def on_step_end(self, step, logs):
    raise RuntimeError(f'callback failed at step {step}')

  def on_train_end(self, logs):
    self.end_logs = dict(logs)


def test_a_failing_callback_fails_the_run_and_still_ends(
  tmp_path, iris_dataset_factory
):
  failing = Failing()
  with pytest.raises(RuntimeError, match='callback failed at step 2'):
    _train(
      tmp_path,
      iris_dataset_factory(),
      [failing],
      (),
      '--max-steps',
      '4',
      '--log-interval-steps',
      '2',
    )
  assert failing.end_logs['status'] == 'failed'
  assert 'callback failed at step 2' in failing.end_logs['error']
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['status'] == 'failed'
  assert 'callback failed at step 2' in job['error']


def test_trainer_rejects_what_is_not_a_callback():
  with pytest.raises(
    ConfigurationError,
    match=r'callbacks must be tensorfx.training.Callback '
    r'instances. Received: <object',
  ):
    training.ModelTrainer(callbacks=[object()])


def test_evaluate_tells_the_callbacks(tmp_path, iris_dataset_factory):
  _train(tmp_path, iris_dataset_factory(), (), (), '--max-steps', '4')
  calls = []
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path, '--hidden-layers:1', '8'), parse_job=True
  )
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  seen = []

  class Results(training.Callback):
    def on_evaluate_end(self, step, results):
      seen.append((step, results.checkpoint, dict(results['eval'])))

  summary = training.ModelTrainer(
    callbacks=[Results(), Recording('x', calls)]
  ).evaluate(builder, job)
  assert seen == [(4, summary['checkpoint'], summary['results']['eval'])]
  assert [c[1] for c in calls] == [
    'on_train_begin',
    'on_evaluate_end',
    'on_train_end',
  ]


def test_builder_hook_defaults_to_no_callbacks(iris_dataset_factory):
  builder = nn.FeedForwardClassification(
    nn.FeedForwardClassificationArguments.default(), iris_dataset_factory()
  )
  assert builder.build_callbacks() == []
