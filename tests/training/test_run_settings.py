"""A run resolves its settings once: every callback of every mode sees them.

`--batch-size all` and `--eval-batch-size all` become the training data's
size when the run's data is ready, before any graph or callback is made.
Training, `tensorfx evaluate` and `evaluate --follow` (the evaluator
task's engine, `EvaluatorRun`, as a command) each hand their callbacks
those settings, in `context.settings` and in the logs, from the first
event to the last: never `'all'`.
"""

import pytest

from conftest import iris_args
from tensorfx import training
from tensorfx.models import nn

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_run_settings')]

# The iris sample's training instances: what `all` stands for.
IRIS_TRAIN = 120


class Seen(training.Callback):
  """Records the batch sizes each event of a run sees."""

  def __init__(self):
    super().__init__()
    self.seen = []

  def _record(self, event, logs=None):
    settings = self.context.settings
    self.seen.append(
      (
        event,
        settings.loop.batch_size,
        settings.validation.batch_size,
        (logs or {}).get('batch_size', IRIS_TRAIN),
      )
    )

  def on_train_begin(self, logs):
    self._record('on_train_begin', logs)

  def on_step_end(self, step, logs):
    self._record('on_step_end', logs)

  def on_evaluate_end(self, step, results):
    self._record('on_evaluate_end')

  def on_train_end(self, logs):
    self._record('on_train_end')


def _builder(output, dataset_factory, *extra):
  args, _ = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output,
      '--batch-size',
      'all',
      '--eval-batch-size',
      'all',
      '--hidden-layers:1',
      '4',
      '--max-steps',
      '2',
      '--log-interval-steps',
      '1',
      *extra,
    ),
    parse_job=True,
  )
  return nn.FeedForwardClassification(args, dataset_factory())


def _resolved(seen, *events):
  assert {event for event, *_ in seen} >= set(events), seen
  for event, *sizes in seen:
    assert sizes == [IRIS_TRAIN] * 3, (event, sizes)


def test_every_mode_hands_its_callbacks_resolved_settings(
  tmp_path, iris_dataset_factory
):
  output = str(tmp_path / 'job')
  trained = Seen()
  training.ModelTrainer(callbacks=[trained]).train(
    _builder(output, iris_dataset_factory), output
  )
  _resolved(
    trained.seen,
    'on_train_begin',
    'on_step_end',
    'on_evaluate_end',
    'on_train_end',
  )

  evaluated = Seen()
  training.ModelTrainer(callbacks=[evaluated]).evaluate(
    _builder(output, iris_dataset_factory), output
  )
  _resolved(evaluated.seen, 'on_train_begin', 'on_evaluate_end', 'on_train_end')

  followed = Seen()
  with pytest.raises(SystemExit) as exit:
    training.ModelTrainer(callbacks=[followed]).train(
      _builder(
        output, iris_dataset_factory, '--action', 'evaluate', '--follow'
      ),
      output,
    )
  assert exit.value.code == 0
  _resolved(followed.seen, 'on_train_begin', 'on_evaluate_end', 'on_train_end')
