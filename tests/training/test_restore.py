"""Restore controls: warm start, pattern, rename, global step, kept checkpoints."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import yaml

from conftest import iris_args
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._checkpoints import checkpoints as _checkpoints
from test_trainer import _scalars
from test_trainer import _train

# Left out of the fast tier: its tests train, analyze or start processes.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('test_restore')]

_HIDDEN = ('hidden1/kernel', 'hidden1/bias')
_OUTPUT = ('output/kernel', 'output/bias')


def _values(builder):
  return {v.name[:-2]: v.numpy() for v in builder.trainable_variables}


def _fresh(output, dataset, *flags):
  """A builder with its variables made and build_init() called."""
  args = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', '--seed', '3', *flags)
  )
  builder = nn.FeedForwardClassification(args, dataset)
  builder.build_graph_interfaces(training.Configuration.local())
  initial = _values(builder)
  builder.build_init()
  return builder, initial


@pytest.fixture(scope='module')
def pretrained(tmp_path_factory, iris_dataset_factory):
  """A job trained 10 steps: (output directory, trained values)."""
  output = tmp_path_factory.mktemp('pretrained') / 'job'
  builder, _ = _train(
    output, iris_dataset_factory(), '--max-steps', '10', '--seed', '5'
  )
  return str(output), _values(builder)


def test_warm_start_copies_the_model_not_the_optimization(
  tmp_path, iris_dataset_factory, pretrained
):
  output, trained = pretrained
  builder, initial = _fresh(
    tmp_path, iris_dataset_factory(), '--warm-start', output
  )
  for name, value in _values(builder).items():
    np.testing.assert_array_equal(value, trained[name])
    assert not np.array_equal(value, initial[name])
  assert int(builder.global_step.numpy()) == 0
  assert int(builder.optimizer.iterations.numpy()) == 0


def test_restore_pattern_leaves_the_other_variables_initial(
  tmp_path, iris_dataset_factory, pretrained
):
  output, trained = pretrained
  builder, initial = _fresh(
    tmp_path,
    iris_dataset_factory(),
    '--warm-start',
    os.path.join(output, 'checkpoints'),
    '--restore-pattern',
    '^output/',
  )
  values = _values(builder)
  for name in _OUTPUT:
    np.testing.assert_array_equal(values[name], trained[name])
  for name in _HIDDEN:
    np.testing.assert_array_equal(values[name], initial[name])
    assert not np.array_equal(values[name], trained[name])


def test_restore_global_step(tmp_path, iris_dataset_factory, pretrained):
  output, _ = pretrained
  prefix = tf.train.latest_checkpoint(os.path.join(output, 'checkpoints'))
  builder, _ = _fresh(
    tmp_path,
    iris_dataset_factory(),
    '--warm-start',
    prefix,
    '--restore-global-step',
  )
  assert int(builder.global_step.numpy()) == 10


def test_warm_started_job_trains_on_and_then_resumes_its_own(
  tmp_path, iris_dataset_factory, pretrained
):
  output, _ = pretrained
  flags = ('--warm-start', output, '--restore-global-step', '--seed', '5')
  builder, _ = _train(
    tmp_path, iris_dataset_factory(), '--max-steps', '14', *flags
  )
  assert int(builder.global_step.numpy()) == 14
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['arguments']['warm_start'] == output
  # Its own checkpoint wins over --warm-start from now on.
  builder, _ = _train(
    tmp_path, iris_dataset_factory(), '--max-steps', '16', *flags
  )
  assert int(builder.global_step.numpy()) == 16
  assert int(builder.optimizer.iterations.numpy()) == 6


def _foreign_checkpoint(directory, tf1=False):
  """A checkpoint of other names: legacy/w (8x3) and legacy/b (3,)."""
  kernel = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
  bias = np.array([1.0, 2.0, 3.0], np.float32)
  prefix = os.path.join(directory, 'foreign')
  if not tf1:
    checkpoint = tf.train.Checkpoint(
      w=tf.Variable(kernel, name='legacy/w'),
      b=tf.Variable(bias, name='legacy/b'),
    )
    return checkpoint.write(prefix), kernel, bias
  # A name-based (TensorFlow 1) checkpoint, as another program writes it.
  with tf.Graph().as_default():
    variables = [
      tf.compat.v1.get_variable('legacy/w', initializer=kernel),
      tf.compat.v1.get_variable('legacy/b', initializer=bias),
    ]
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return saver.save(session, prefix), kernel, bias


@pytest.mark.parametrize('tf1', [False, True], ids=['object', 'name-based'])
def test_rename_maps_checkpoint_names_to_model_names(
  tmp_path, iris_dataset_factory, tf1
):
  prefix, kernel, bias = _foreign_checkpoint(str(tmp_path), tf1)
  builder, initial = _fresh(
    tmp_path / 'job',
    iris_dataset_factory(),
    '--warm-start',
    prefix,
    '--restore-rename',
    'legacy/w=output/kernel',
    'legacy/b=output/bias',
  )
  values = _values(builder)
  np.testing.assert_array_equal(values['output/kernel'], kernel)
  np.testing.assert_array_equal(values['output/bias'], bias)
  for name in _HIDDEN:
    np.testing.assert_array_equal(values[name], initial[name])


def test_rename_from_a_run_configuration(tmp_path, iris_dataset_factory):
  prefix, kernel, _ = _foreign_checkpoint(str(tmp_path))
  config = tmp_path / 'run.yaml'
  config.write_text(
    f'load:\n  warm_start: {prefix}\n  rename:\n'
    '    legacy/w: output/kernel\n  pattern: kernel\n'
  )
  builder, _ = _fresh(
    tmp_path / 'job', iris_dataset_factory(), '--config', str(config)
  )
  assert builder.args.restore_rename == ['legacy/w=output/kernel']
  np.testing.assert_array_equal(_values(builder)['output/kernel'], kernel)


@pytest.mark.parametrize(
  'flags, message',
  [
    (
      ['--restore-rename', 'legacy/nothing=output/kernel'],
      r'--restore-rename: legacy/nothing not in the checkpoint',
    ),
    (
      ['--restore-rename', 'legacy/w=hidden1/kernel'],
      r"The checkpoint variable 'legacy/w' has shape \[8, 3\], the model's "
      r"'hidden1/kernel' \[4, 8\]",
    ),
    ([], r'no variable of the model .* is in the checkpoint'),
  ],
)
def test_warm_start_errors(tmp_path, iris_dataset_factory, flags, message):
  prefix, _, _ = _foreign_checkpoint(str(tmp_path))
  with pytest.raises(ConfigurationError, match=message):
    _fresh(
      tmp_path / 'job', iris_dataset_factory(), '--warm-start', prefix, *flags
    )


def test_warm_start_needs_a_checkpoint(tmp_path, iris_dataset_factory):
  with pytest.raises(
    ConfigurationError, match='--warm-start must name a checkpoint'
  ):
    _fresh(
      tmp_path / 'job', iris_dataset_factory(), '--warm-start', str(tmp_path)
    )


def test_restore_flags_need_warm_start():
  with pytest.raises(
    ConfigurationError, match='--restore-pattern applies to --warm-start'
  ):
    nn.FeedForwardClassificationArguments.parse(['--restore-pattern', 'x'])


def test_keep_recent_and_best_checkpoints(tmp_path, iris_dataset_factory):
  _train(
    tmp_path,
    iris_dataset_factory(),
    '--max-steps',
    '12',
    '--checkpoint-interval-steps',
    '2',
    '--eval-interval-steps',
    '2',
    '--keep-checkpoints',
    '2',
    '--keep-best-checkpoints',
    '2',
    '--best-metric',
    'loss',
  )
  directory = tmp_path / 'checkpoints'
  state = tf.train.get_checkpoint_state(str(directory))
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
    'ckpt-10',
    'ckpt-12',
  ]
  losses = dict(_scalars(tmp_path / 'summaries' / 'eval')['loss'])
  assert sorted(losses) == [2, 4, 6, 8, 10, 12]
  best_steps = sorted(losses, key=losses.get)[:2]
  best = json.loads((directory / 'best' / 'best.json').read_text())
  assert best['mode'] == 'min'
  assert [e['step'] for e in best['best']] == best_steps
  for entry in best['best']:
    assert entry['value'] == pytest.approx(losses[entry['step']])
    assert tf.io.gfile.exists(entry['path'] + '.index')
  kept = sorted(p.name for p in (directory / 'best').glob('*.index'))
  assert kept == sorted(f'ckpt-{s}.index' for s in best_steps)
  assert tf.train.latest_checkpoint(str(directory / 'best')).endswith(
    f'ckpt-{best_steps[0]}'
  )
  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert [e['step'] for e in job['best_checkpoints']] == best_steps


def test_keep_best_ranks_by_mode(tmp_path):
  step = tf.Variable(0, dtype=tf.int64)
  weight = tf.Variable(0.0)
  checkpoints = _checkpoints.Checkpoints(
    str(tmp_path), step, keep_best=2, best_mode='max', weight=weight
  )
  kept = []
  for value in (0.5, 0.9, 0.7, 0.6, float('nan'), 0.95):
    step.assign_add(1)
    weight.assign(value)
    kept.append(checkpoints.keep_best(value) is not None)
  assert kept == [True, True, True, False, False, True]
  assert [(e['step'], e['value']) for e in checkpoints.best] == [
    (6, 0.95),
    (2, 0.9),
  ]
  # Read back by a new instance (a resumed job).
  again = _checkpoints.Checkpoints(
    str(tmp_path), step, keep_best=2, best_mode='max', weight=weight
  )
  assert [e['step'] for e in again.best] == [6, 2]
  reader = tf.train.load_checkpoint(again.best[1]['path'])
  assert reader.get_tensor(
    'weight/.ATTRIBUTES/VARIABLE_VALUE'
  ) == pytest.approx(0.9)
