"""The HParams session-start record, written before the first step.

tensorfx writes it from the plugin's protos rather than through the
plugin's Python helpers, whose imports (TensorBoard's filesystem stubs,
boto3, fsspec) would delay every run's first step.
"""

from tensorboard.plugins.hparams import summary_v2

from conftest import modules_imported
from tensorfx.training._callbacks import hparams


def test_the_session_start_record_is_the_plugins_own():
  values = {'batch_size': 32, 'hidden_layers': '20,10', 'shuffle': True}
  for value in (values, {'learning_rate': 0.01}, {}):
    expected = summary_v2.hparams_pb(value, start_time_secs=1700000000)
    written = hparams._session_start(value, 1700000000)
    assert written == expected.SerializeToString()


def test_a_run_imports_no_tensorboard_helpers_before_it_starts():
  code = (
    'from tensorfx.training._run import run\n'
    'from tensorfx.training._callbacks import builtin\n'
  )
  late = ('boto3', 'fsspec', 'tensorboard.plugins.hparams.summary_v2')
  assert modules_imported(code, late) == []
