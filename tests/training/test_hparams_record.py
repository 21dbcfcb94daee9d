"""The HParams session-start record, written before the first step.

tensorfx writes it from the plugin's protos rather than through the
plugin's Python helpers, whose imports (TensorBoard's filesystem stubs,
boto3, fsspec) would delay every run's first step.
"""

from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.hparams import summary_v2
from tensorflow.core.framework import summary_pb2

from conftest import modules_imported
from tensorfx.training._callbacks import hparams


def _parsed(summary):
  """A Summary's values, bytes but for their plugin data, parsed.

  Protobuf does not fix the order a map's entries (the hparams) are
  serialized in, so two equal records may differ byte for byte; parsed,
  maps compare as maps. (The plugin's Summary class is TensorBoard's copy
  of TensorFlow's, so the values compare as bytes.)
  """
  values = []
  for value in summary.value:
    content = plugin_data_pb2.HParamsPluginData.FromString(
      value.metadata.plugin_data.content
    )
    value.metadata.plugin_data.ClearField('content')
    values.append((value.SerializeToString(), content))
  return values


def test_the_session_start_record_is_the_plugins_own():
  values = {'batch_size': 32, 'hidden_layers': '20,10', 'shuffle': True}
  for value in (values, {'learning_rate': 0.01}, {}):
    expected = summary_v2.hparams_pb(value, start_time_secs=1700000000)
    written = summary_pb2.Summary.FromString(
      hparams._session_start(value, 1700000000)
    )
    assert _parsed(written) == _parsed(expected)


def test_a_run_imports_no_tensorboard_helpers_before_it_starts():
  code = (
    'from tensorfx.training._run import run\n'
    'from tensorfx.training._callbacks import builtin\n'
  )
  late = ('boto3', 'fsspec', 'tensorboard.plugins.hparams.summary_v2')
  assert modules_imported(code, late) == []
