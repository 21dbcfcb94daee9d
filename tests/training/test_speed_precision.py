"""--precision: layers compute in float16/bfloat16, everything else float32.

Variables stay float32 and layers compute in the policy's dtype; float16
scales the loss (and lowers the scale when gradients overflow); the model
still learns iris; the exported model's outputs are float32; and the
process's global policy is left as it was.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import yaml

from conftest import iris_args
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training._builderbase import engine_of


def _train(output, dataset, *flags, builder_type=nn.FeedForwardClassification):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(
      output,
      '--hidden-layers:1',
      '16',
      '--batch-size',
      '16',
      '--max-steps',
      '300',
      '--seed',
      '2',
      *flags,
    ),
    parse_job=True,
  )
  builder = builder_type(args, dataset)
  model = training.ModelTrainer().train(builder, job)
  return builder, model


@pytest.mark.parametrize(
  'precision, compute',
  [
    ('mixed_float16', 'float16'),
    # bfloat16 has no fast CPU kernels: 300 steps take 30 s here, so it
    # runs in the full suite only (float16 keeps the path in the fast tier).
    pytest.param('mixed_bfloat16', 'bfloat16', marks=pytest.mark.slow),
  ],
)
def test_mixed_precision_trains_and_exports_float32(
  tmp_path, iris_dataset_factory, precision, compute
):
  builder, model = _train(
    tmp_path, iris_dataset_factory(), '--precision', precision
  )
  layers = builder._layers
  assert [layer.compute_dtype for layer in layers] == [compute] * 2
  assert all(v.dtype == tf.float32 for v in builder.trainable_variables)
  # The policy was the layers' only: the process's is unchanged.
  assert tf_keras.mixed_precision.global_policy().name == 'float32'

  job = yaml.safe_load((tmp_path / 'job.yaml').read_text())
  assert job['metrics']['accuracy'] >= 0.9
  saved = tf.saved_model.load(str(tmp_path / 'model'))
  outputs = saved.signatures['serving_default'].structured_outputs
  assert outputs['scores'].dtype == tf.float32
  scores = saved.signatures['serving_default'](
    csv=tf.constant(['6.3,3.3,6,2.5', '5.0,3.4,1.5,0.2'])
  )['scores']
  assert scores.dtype == tf.float32
  np.testing.assert_allclose(tf.reduce_sum(scores, axis=1), [1, 1], rtol=1e-5)
  predictions = model.predict(
    ['6.3,3.3,6,2.5', '5.0,3.4,1.5,0.2', '5.9,3.0,4.2,1.5']
  )
  assert [p['label'] for p in predictions] == [
    'virginica',
    'setosa',
    'versicolor',
  ]

  scale = engine_of(builder).loss_scale_optimizer
  if precision == 'mixed_float16':
    assert isinstance(scale, tf_keras.mixed_precision.LossScaleOptimizer)
    # Checkpointed, so a resumed job keeps its scale.
    names = [
      name for name, _ in tf.train.list_variables(str(tmp_path / 'checkpoints'))
    ]
    assert any('loss_scale' in name for name in names), names
  else:
    assert scale is None  # bfloat16 has float32's range: no scaling.


class _LargeLoss(nn.FeedForwardClassification):
  """A loss whose scaled gradients overflow float16 at the initial scale."""

  def build_training(self, global_steps, inputs, inferences):
    loss, optimizer = super().build_training(global_steps, inputs, inferences)
    return loss * 1000.0, optimizer


def test_float16_overflow_lowers_the_loss_scale(tmp_path, iris_dataset_factory):
  builder, _ = _train(
    tmp_path,
    iris_dataset_factory(),
    '--precision',
    'mixed_float16',
    '--max-steps',
    '40',
    '--learning-rate',
    '0.0001',
    builder_type=_LargeLoss,
  )
  scale = float(engine_of(builder).loss_scale_optimizer.loss_scale)
  # 2**15 at the start; halved at every overflowing step, which is skipped
  # rather than applied: the variables stay finite.
  assert scale < 2**15
  assert all(
    np.all(np.isfinite(v.numpy())) for v in builder.trainable_variables
  )
  assert int(builder.global_step.numpy()) == 40


def test_float32_is_the_default(iris_dataset_factory):
  args = nn.FeedForwardClassificationArguments.parse([])
  builder = nn.FeedForwardClassification(args, iris_dataset_factory())
  assert builder.settings.speed.precision == 'float32'
  builder.build_graph_interfaces(training.Configuration.local())
  assert [layer.compute_dtype for layer in builder._layers] == ['float32']
  assert engine_of(builder).loss_scale_optimizer is None


def test_unknown_precision_is_rejected(capsys):
  with pytest.raises(SystemExit):
    nn.FeedForwardClassificationArguments.parse(['--precision', 'float64'])
  assert 'mixed_bfloat16' in capsys.readouterr().err
