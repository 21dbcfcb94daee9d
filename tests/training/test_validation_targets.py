"""Validation targets: named sources, batches, online and final aggregation."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import yaml

from conftest import IRIS
from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training import _settings
from tensorfx.training._evaluation import aggregation as _aggregation
from tensorfx.training._settings import targets as _targets
from test_trainer import _scalars

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = pytest.mark.slow

EVAL = os.path.join(IRIS, 'data', 'eval.csv')  # 30 rows.


class _Counting(nn.FeedForwardClassification):
  """Adds `rows`: the number of examples seen (a Sum)."""

  def build_evaluation(self, inputs, outputs):
    metrics = dict(super().build_evaluation(inputs, outputs))
    if not hasattr(self, 'rows'):
      self.rows = tf_keras.metrics.Sum(name='rows')
    self.rows.update_state(tf.cast(tf.shape(inputs['Y'])[0], tf.float32))
    metrics['rows'] = self.rows
    return metrics


def _args(output, *flags):
  return nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '4', '--seed', '1', *flags),
    parse_job=True,
  )


def test_targets_have_their_own_batches_and_aggregations(
  tmp_path, iris_dataset_factory
):
  # Train a little, then evaluate one checkpoint on five targets.
  args, job = _args(tmp_path, '--max-steps', '2')
  training.ModelTrainer().train(_Counting(args, iris_dataset_factory()), job)
  args, job = _args(
    tmp_path,
    '--eval-batch-size',
    '8',
    '--eval-batches',
    '2',
    '--eval-target',
    'first3',
    f'data={EVAL}',
    'batches=3',
    'online_agg=sum',
    '--eval-target',
    'largest',
    'source=eval',
    'online_agg=max',
    '--eval-target',
    'smallest',
    'source=eval',
    'online_agg=min',
    '--eval-target',
    'median',
    'source=eval',
    'online_agg=append',
    'agg=median',
    '--eval-target',
    'last',
    'source=eval',
    'online_agg=append',
    'agg=last',
    '--eval-target',
    'average',
    'source=eval',
    'batch_size=10',
    'online_agg=append',
  )
  summary = training.ModelTrainer().evaluate(
    _Counting(args, iris_dataset_factory()), job
  )
  rows = {name: results['rows'] for name, results in summary['results'].items()}
  # The 30 eval rows come in batches of 8, 8, 8, 6 (of 10: 10, 10, 10).
  assert rows == {
    'eval': 16,
    'first3': 24,
    'largest': 8,
    'smallest': 6,
    'median': 8,
    'last': 6,
    'average': 10,
  }
  assert summary['step'] == 2
  assert summary['checkpoint'].endswith('ckpt-2')
  results = summary['results']
  # Streaming over all examples vs combining per-batch results.
  assert (
    results['largest']['loss']
    >= results['median']['loss']
    >= results['smallest']['loss']
  )
  assert (tmp_path / 'evaluations' / 'ckpt-2.json').exists()


def test_training_validates_every_target_at_its_frequency(
  tmp_path, iris_dataset_factory
):
  args, job = _args(
    tmp_path,
    '--max-steps',
    '6',
    '--log-interval-steps',
    '2',
    '--eval-interval-steps',
    '3',
    '--validate-first',
    '--eval-target',
    'holdout',
    f'data={EVAL}',
    'batches=2',
    'batch_size=5',
    'online_agg=append',
    'agg=max',
  )
  training.ModelTrainer().train(_Counting(args, iris_dataset_factory()), job)
  summaries = tmp_path / 'summaries'
  evaluation = _scalars(summaries / 'eval')
  holdout = _scalars(summaries / 'eval_holdout')
  assert [s for s, _ in evaluation['loss']] == [0, 3, 6]
  assert [s for s, _ in holdout['loss']] == [0, 3, 6]
  assert {v for _, v in holdout['rows']} == {5.0}  # Max of 2 batches of 5.
  assert {v for _, v in evaluation['rows']} == {30.0}
  job_record = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert set(job_record['validation']) == {'eval', 'holdout'}
  assert job_record['metrics'] == job_record['validation']['eval']
  assert job_record['arguments']['eval_targets'] == {
    'holdout': {
      'data': [EVAL],
      'batches': 2,
      'batch_size': 5,
      'online_agg': 'append',
      'agg': 'max',
    }
  }


def _rows(inputs, outputs):
  del outputs
  return {'rows': tf.shape(inputs['Y'])[0]}


def _confidence(inputs, outputs):
  del inputs
  scores = outputs['scores']
  return {
    'confidence': tf.reduce_mean(tf.reduce_max(scores, axis=1)),
    'class_scores': tf.reduce_mean(scores, axis=0),
  }


def test_targets_may_compute_their_own_values(tmp_path, iris_dataset_factory):
  args, job = _args(tmp_path, '--max-steps', '2')
  training.ModelTrainer().train(_Counting(args, iris_dataset_factory()), job)
  args, job = _args(tmp_path, '--eval-batch-size', '8')
  args.eval_targets = {
    'count': _targets.ValidationTarget(
      'count', source='eval', compute=_rows, online_agg='sum'
    ),
    'confidence': _targets.ValidationTarget(
      'confidence', source='eval', batches=3, compute=_confidence
    ),
    'largest': _targets.ValidationTarget(
      'largest',
      source='eval',
      compute=_rows,
      online_agg=lambda current, results, index: max(
        current or 0, results['rows']
      ),
      agg=lambda largest: {'largest_batch': largest},
    ),
  }
  summary = training.ModelTrainer().evaluate(
    _Counting(args, iris_dataset_factory()), job
  )
  results = summary['results']
  # The default target streams the builder's metrics; the others compute
  # what their functions say, each something different.
  assert set(results['eval']) == {'loss', 'accuracy', 'rows'}
  assert results['count'] == {'rows': 30.0}
  assert results['largest'] == {'largest_batch': 8}
  confidence = results['confidence']
  assert set(confidence) == {'confidence', 'class_scores'}
  assert 1 / 3 <= confidence['confidence'] <= 1.0
  # An array per batch: the element-wise mean over the 3 batches.
  assert len(confidence['class_scores']) == 3
  assert sum(confidence['class_scores']) == pytest.approx(1.0, abs=1e-4)
  # Written as JSON beside the checkpoint, like every evaluation.
  written = (tmp_path / 'evaluations' / 'ckpt-2.json').read_text()
  assert '"class_scores"' in written


def test_a_computation_must_be_a_function():
  with pytest.raises(
    ConfigurationError,
    match="validation target 'x': compute must be a function",
  ):
    _targets.ValidationTarget('x', compute='rows')


def test_validation_from_a_run_configuration(tmp_path):
  config = tmp_path / 'run.yaml'
  config.write_text(
    'validation:\n'
    '  batch_size: 16\n'
    '  batches: 3\n'
    '  interval_steps: 50\n'
    '  validate_first: true\n'
    '  holdout:\n'
    '    data: [h1.csv, h2.csv]\n'
    '    batches: 5\n'
    '    online_agg: append\n'
    '    agg: median\n'
    'logging:\n'
    '  interval_steps: 10\n'
  )
  args = nn.FeedForwardClassificationArguments.parse(
    ['--config', str(config), '--eval-target', 'extra', 'source=eval']
  )
  assert (
    args.eval_batch_size,
    args.eval_batches,
    args.eval_interval_steps,
    args.validate_first,
    args.log_interval_steps,
  ) == (16, 3, 50, True, 10)
  assert args.eval_targets == {
    'holdout': {
      'data': ['h1.csv', 'h2.csv'],
      'batches': 5,
      'online_agg': 'append',
      'agg': 'median',
    },
    'extra': {'source': 'eval'},
  }
  targets = _settings.ValidationSettings.from_args(args).all_targets(
    has_eval=True
  )
  assert [t.name for t in targets] == ['eval', 'holdout', 'extra']
  assert targets[0].batches == 3 and targets[0].batch_size == 16


@pytest.mark.parametrize(
  'text, message',
  [
    (
      'validation:\n  holdout:\n    data: h.csv\n    batchez: 2\n',
      r"run.yaml:2: validation.holdout: unknown key 'batchez'",
    ),
    (
      'validation:\n  holdout:\n    online_agg: median\n',
      r'run.yaml:2: validation.holdout: .*online_agg must be one of mean, '
      'sum, min, max, append',
    ),
    (
      'validation:\n  holdout:\n    online_agg: sum\n    agg: mean\n',
      'agg reduces the per-batch results that online_agg append keeps',
    ),
    (
      'validation:\n  eval:\n    batches: 2\n',
      "the target 'eval' is --data-eval with the --eval-",
    ),
    ('eval_target: holdout\n', 'give these as mappings under validation'),
  ],
)
def test_bad_targets_name_the_file_and_line(tmp_path, text, message):
  config = tmp_path / 'run.yaml'
  config.write_text(text)
  with pytest.raises(ConfigurationError, match=message):
    nn.FeedForwardClassificationArguments.parse(['--config', str(config)])


@pytest.mark.parametrize(
  'flags, message',
  [
    (['--eval-target', 'a=b'], '--eval-target expects a name'),
    (['--eval-target', 'h', 'batches'], 'items are KEY=VALUE'),
    (['--eval-target', 'h', 'batches=0'], 'batches must be a positive'),
    (['--eval-target', 'h', 'batches=x'], 'batches of validation target'),
    (['--eval-agg', 'max'], r'agg reduces .* \(flags --eval-online-agg'),
    (['--eval-batches', '0'], '--eval-batches must be a positive integer'),
    (['--best-metric', 'accuracy:best'], '--best-metric expects'),
  ],
)
def test_bad_target_flags(flags, message):
  with pytest.raises(ConfigurationError, match=message):
    nn.FeedForwardClassificationArguments.parse(flags)


def test_a_target_needs_a_source(tmp_path, iris_dataset_factory):
  args, job = _args(
    tmp_path, '--max-steps', '1', '--eval-target', 'nowhere', 'batches=1'
  )
  with pytest.raises(
    ConfigurationError,
    match="reads the source 'nowhere', which the dataset does not have",
  ):
    training.ModelTrainer().train(_Counting(args, iris_dataset_factory()), job)


def test_aggregations():
  batches = [
    {'loss': 4.0, 'acc': 0.5},
    {'loss': 1.0, 'acc': 1.0},
    {'loss': 2.0, 'acc': 0.75},
  ]

  def aggregate(**kwargs):
    return _aggregation.aggregate(
      _targets.ValidationTarget('t', **kwargs), batches
    )

  assert aggregate(online_agg='sum') == {'loss': 7.0, 'acc': 2.25}
  assert aggregate(online_agg='min') == {'loss': 1.0, 'acc': 0.5}
  assert aggregate(online_agg='max') == {'loss': 4.0, 'acc': 1.0}
  assert aggregate(online_agg='append') == {'loss': 7 / 3, 'acc': 0.75}
  assert aggregate(online_agg='append', agg='median') == {
    'loss': 2.0,
    'acc': 0.75,
  }
  assert aggregate(online_agg='append', agg='first')['loss'] == 4.0
  # train_from_params' callables: (aggregate, result, step), (aggregate).
  seen = []

  def online(current, results, index):
    seen.append(index)
    return (current or 0.0) + results['loss'] * (index + 1)

  assert aggregate(
    online_agg=online, agg=lambda total: {'weighted': total}
  ) == {'weighted': 4.0 + 2.0 + 6.0}
  assert seen == [0, 1, 2]
  # A callable's NumPy values come back as Python's, for every record.
  means = aggregate(
    online_agg=online, agg=lambda total: {'mean': np.float64(total) / 3}
  )
  assert type(means['mean']) is float
  assert (
    _aggregation.aggregate(_targets.ValidationTarget('t', online_agg='max'), [])
    == {}
  )
