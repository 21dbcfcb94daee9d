"""Logging: tensorfx configures its own logger only, and starts up quietly.

A run prints tensorfx's lines once, in tensorfx's format or through the
program's own handlers; the root logger keeps its level and handlers;
TensorFlow's C++ start-up chatter is held back unless asked for, and real
errors always come through.
"""

import logging
import os
import re
import subprocess
import sys

import pytest

from conftest import IRIS
from conftest import ROOT
from tensorfx import _logging

# TensorFlow's start-up lines on a machine without a GPU.
STARTUP_NOISE = (
  'cuda',
  'cuInit',
  'oneDNN',
  'This TensorFlow binary is optimized',
  'absl::InitializeLog',
  'WARNING:absl:',
  'INFO:tensorfx:',
)
# An info or warning line of TensorFlow's C++ log (errors always show):
# severity, date, time, thread, file:line.
CPP_LOG_LINE = re.compile(r'^[IW]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] ', re.M)


def _env():
  """This checkout first; TensorFlow's log level left to tensorfx."""
  env = {
    k: v
    for k, v in os.environ.items()
    if k not in ('TF_CPP_MIN_LOG_LEVEL', 'CUDA_VISIBLE_DEVICES')
  }
  env['PYTHONPATH'] = os.pathsep.join(
    [ROOT]
    + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
  )
  return env


def _python(code, *args, cwd=ROOT, timeout=300):
  return subprocess.run(
    [sys.executable, '-c', code, *args],
    cwd=cwd,
    env=_env(),
    capture_output=True,
    text=True,
    timeout=timeout,
    check=False,
  )


_TRAIN = """
import logging, sys
root = logging.getLogger()
{setup}
before = (root.level, list(root.handlers))
import tensorfx
{run}
assert (root.level, list(root.handlers)) == before, (before, root.handlers)
logging.getLogger('user').warning('the program still logs')
print('root unchanged')
"""


@pytest.mark.release
@pytest.mark.slow
def test_a_default_run_prints_no_tensorflow_startup_lines_and_keeps_root(
  tmp_path,
):
  run = (
    f'code = tensorfx.tools.main(["train", "--module", "trainer", '
    f'"--output", {str(tmp_path / "out")!r}, "--data-train", '
    '"data/train.csv", "--data-eval", "data/eval.csv", "--data-schema", '
    '"schema.yaml", "--data-features", "features.yaml", '
    '"--max-steps", "5"])\nassert code == 0, code'
  )
  result = _python(_TRAIN.format(setup='', run=run), cwd=IRIS)
  assert result.returncode == 0, result.stderr[-4000:]
  assert 'root unchanged' in result.stdout
  for noise in STARTUP_NOISE:
    assert noise not in result.stderr, (noise, result.stderr[:3000])
  lines = result.stderr.splitlines()
  # tensorfx's lines, once each, in its format (HH:MM:SS LEVEL message).
  training = [line for line in lines if 'Training from step 0 to 5' in line]
  assert len(training) == 1 and training[0][8:] == (
    ' INFO Training from step 0 to 5, 64 examples per step'
  ), training
  assert sum('Exported the model' in line for line in lines) == 1
  assert 'the program still logs' in result.stderr


@pytest.mark.slow
def test_the_programs_logging_setup_is_kept_and_used(iris_analysis, tmp_path):
  setup = (
    'logging.basicConfig(level=logging.INFO, '
    'format="USER %(name)s: %(message)s")'
  )
  run = f"""
import tensorfx.models.nn as nn
args, job = nn.FeedForwardClassificationArguments.parse([
    "--output", {str(tmp_path / 'out')!r},
    "--data-train", "samples/iris/data/train.csv",
    "--data-eval", "samples/iris/data/eval.csv",
    "--data-schema", "samples/iris/schema.yaml",
    "--data-features", "samples/iris/features.yaml",
    "--data-metadata", {iris_analysis!r}, "--max-steps", "3"], parse_job=True)
dataset = tensorfx.data.CsvDataSet(args.data_schema, train=args.data_train,
    eval=args.data_eval, metadata=args.data_metadata,
    features=args.data_features)
tensorfx.training.ModelTrainer().train(nn.FeedForwardClassification(args, dataset), job)
logging.info("my own info line")
"""
  result = _python(_TRAIN.format(setup=setup, run=run))
  assert result.returncode == 0, result.stderr[-4000:]
  assert 'root unchanged' in result.stdout
  lines = result.stderr.splitlines()
  # Through the program's handler, once; tensorfx's own stays silent.
  assert (
    lines.count(
      'USER tensorfx: Training from step 0 to 3, 64 examples per step'
    )
    == 1
  ), result.stderr[-3000:]
  assert not any(
    line.endswith(' INFO Training from step 0 to 3, 64 examples per step')
    for line in lines
  )
  # tensorfx did not lower or raise the root logger's level.
  assert 'USER root: my own info line' in lines


@pytest.mark.parametrize(
  'flags,shown', [((), False), (('--log-level-tensorflow', 'debug'), True)]
)
def test_tensorflow_startup_lines_show_only_when_asked_for(flags, shown):
  result = _python(
    'import tensorfx, tensorflow as tf\nprint(tf.constant(2) * 3)', *flags
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'tf.Tensor(6' in result.stdout
  # Which start-up lines TensorFlow prints depends on the machine (the oneDNN
  # notice only where oneDNN is on by default, e.g. CPUs with AVX-512 VNNI):
  # any line in its C++ log format ('I0000 00:00:... port.cc:153] ') is one.
  assert bool(CPP_LOG_LINE.search(result.stderr)) == shown, result.stderr
  if not shown:
    assert 'oneDNN custom operations' not in result.stderr
    assert 'This TensorFlow binary is optimized' not in result.stderr


def test_a_users_tf_cpp_min_log_level_is_kept():
  env = dict(_env(), TF_CPP_MIN_LOG_LEVEL='1')
  result = subprocess.run(
    [
      sys.executable,
      '-c',
      'import os, tensorfx, tensorflow\n'
      'print(os.environ["TF_CPP_MIN_LOG_LEVEL"])',
    ],
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
  )
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.strip() == '1'


def test_the_filter_drops_known_startup_lines_and_keeps_errors():
  captured = (
    'WARNING: All log messages before absl::InitializeLog() is called are '
    'written to STDERR\n'
    'I0000 00:00:1795463915.557950   18663 port.cc:153] oneDNN custom '
    'operations are on. You may see ...\n'
    'I0000 00:00:1795463915.563854   18663 cudart_stub.cc:31] Could not '
    'find cuda drivers on your machine, GPU will not be used.\n'
    'I0000 00:00:1795463915.783658   18663 cpu_feature_guard.cc:227] This '
    'TensorFlow binary is optimized to use available CPU instructions.\n'
    'To enable the following instructions: AVX2 FMA, in other operations, '
    'rebuild TensorFlow with the appropriate compiler flags.\n'
    'E0000 00:00:1795463922.526031   18663 cuda_platform.cc:52] failed call '
    'to cuInit: INTERNAL: CUDA error (303)\n'
    'E0000 00:00:1795463922.6   18663 op_kernel.cc:1] a real error\n'
    'a plain line from a library\n'
  )
  assert _logging.filter_noise(captured, gpu_present=False) == (
    'E0000 00:00:1795463922.6   18663 op_kernel.cc:1] a real error\n'
    'a plain line from a library\n'
  )
  # With NVIDIA devices present a failing cuInit is a real error.
  with_gpu = _logging.filter_noise(captured, gpu_present=True)
  assert 'failed call to cuInit' in with_gpu and 'oneDNN' not in with_gpu


# What the chief of `tensorfx train --cluster ps=1,workers=2,evaluator=1`
# printed as the iris run ended (one block per task and function, 28 to 37
# of them), and what a server printed as it stopped.
_REMOVAL_BLOCK = (
  'E0000 00:00:1795860713.000878    5113 context.cc:911] Failed to remove '
  'function remotely due to Tried to remove non-existent function '
  "'__inference_metadata_fn_351'.\n"
  'Additional GRPC error information from remote target '
  '/job:ps/replica:0/task:0 while calling '
  '/tensorflow.eager.EagerService/Enqueue:\n'
  ':UNKNOWN:Error received from peer  {grpc_message:"Tried to remove '
  "non-existent function \\'__inference_metadata_fn_351\\'.\", "
  'grpc_status:3}\n'
  'This could happen if the remote target has been disconnected from the '
  'client.\n'
)
_HANDLE_CACHE = (
  'E0000 00:00:1795860721.897397    5549 function_handle_cache.cc:31] '
  'Failed to clear function handle cache: UNIMPLEMENTED: Releasing a '
  'multi-device component handle on a remote device is not yet '
  'implemented.\n'
)


# What a parameter-server worker printed when it was started again while
# the job trained (`tensorfx chaos`), once per input pipeline it made.
_RESTARTED_WORKER = (
  'E0000 00:00:1795873673.683325    8405 node_def_util.cc:682] NodeDef me'
  'ntions attribute use_unbounded_threadpool which is not in the op defin'
  'ition: Op<name=MapDataset; signature=input_dataset:variant, other_argu'
  'ments: -> handle:variant; attr=f:func; attr=Targuments:list(type),min='
  '0; attr=output_types:list(type),min=1; attr=output_shapes:list(shape),'
  'min=1; attr=use_inter_op_parallelism:bool,default=true; attr=preserve_'
  'cardinality:bool,default=false; attr=force_synchronous:bool,default=fa'
  'lse; attr=metadata:string,default=""> This may be expected if your gra'
  'ph generating binary is newer  than this binary. Unknown attributes wi'
  'll be ignored. NodeDef: {{node ParallelMapDatasetV2/_19}}'
  '\n'
)


def test_a_restarted_workers_ignored_attribute_line_is_dropped():
  output = '12:11:58 INFO Serving as /job:worker/task:0\n' + _RESTARTED_WORKER
  assert _logging.filter_noise(output, gpu_present=False) == (
    '12:11:58 INFO Serving as /job:worker/task:0\n'
  )
  # Another attribute it does not know is not known to be harmless.
  other = _RESTARTED_WORKER.replace('use_unbounded_threadpool', 'new_attr')
  assert _logging.filter_noise(other, gpu_present=False) == other


def test_a_clusters_harmless_end_of_run_errors_are_dropped_whole():
  real = (
    'E0000 00:00:1795860713.1    5113 coordinator.cc:9] a real error\n'
    'Traceback (most recent call last):\n'
    '  File "trainer.py", line 3, in <module>\n'
    'ValueError: bad\n'
  )
  output = (
    '12:11:58 INFO Saved checkpoint /tmp/c1/checkpoints/ckpt-300\n'
    + _REMOVAL_BLOCK
    + _REMOVAL_BLOCK.replace('job:ps/replica:0', 'job:worker/replica:0')
    + real
    + _REMOVAL_BLOCK
    + _HANDLE_CACHE
    + '12:12:02 INFO The job has ended\n'
  )
  assert _logging.filter_noise(output, gpu_present=False) == (
    '12:11:58 INFO Saved checkpoint /tmp/c1/checkpoints/ckpt-300\n'
    + real
    + '12:12:02 INFO The job has ended\n'
  )


def test_a_removal_that_fails_otherwise_and_stray_block_lines_show():
  # A task that is gone is a real problem: its removal error shows, with
  # the lines that explain it.
  gone = (
    'E0000 00:00:1795860713.2    5113 context.cc:911] Failed to remove '
    'function remotely due to UNAVAILABLE: Connection refused\n'
    'This could happen if the remote target has been disconnected from the '
    'client.\n'
  )
  assert _logging.filter_noise(gone, gpu_present=False) == gone
  # A block's line is noise only inside the block.
  stray = 'This could happen if the remote target has been disconnected from the client.\n'
  assert _logging.filter_noise(stray, gpu_present=False) == stray
  # The filter reads one stream in order: a block's head, then its lines.
  lines = _logging.NoiseFilter(gpu_present=False)
  assert [lines.keep(line) for line in _REMOVAL_BLOCK.splitlines()] == [
    False
  ] * 4
  assert lines.keep('step 300/300') is True


def test_the_command_line_level_is_read_from_any_position():
  assert (
    _logging.tensorflow_level(['x', '--log-level-tensorflow', 'DEBUG'])
    == 'debug'
  )
  assert _logging.tensorflow_level(['--log-level-tensorflow=info']) == 'info'
  assert _logging.tensorflow_level(['--log-level', 'debug']) is None


def test_configure_sets_tensorfx_and_library_levels_not_roots():
  root = logging.getLogger()
  names = ('tensorfx',) + _logging.LIBRARIES
  saved = {n: logging.getLogger(n).level for n in names}
  before = (root.level, list(root.handlers))
  try:
    _logging.configure('debug', 'error')
    _logging.configure('debug', 'error')
    assert (root.level, list(root.handlers)) == before
    assert _logging.logger.level == logging.DEBUG
    assert _logging.logger.propagate
    assert (
      sum(
        isinstance(h, _logging._FallbackHandler)
        for h in _logging.logger.handlers
      )
      == 1
    )
    assert logging.getLogger('apache_beam').level == logging.ERROR
  finally:
    for name, level in saved.items():
      logging.getLogger(name).setLevel(level)


def test_the_python_api_leaves_a_bare_root_logger_bare(
  iris_dataset_factory, tmp_path, monkeypatch
):
  # No handler on the root logger, as in a program that set up no logging
  # (pytest's own are taken away for the test). absl's logging functions,
  # which tfx-bsl calls while training sizes its cache, would add one.
  from conftest import iris_args
  from tensorfx import training
  from tensorfx.models import nn

  root = logging.getLogger()
  monkeypatch.setattr(root, 'handlers', [])
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(tmp_path / 'out', '--max-steps', '3'), parse_job=True
  )
  model = training.ModelTrainer().train(
    nn.FeedForwardClassification(args, iris_dataset_factory()), job
  )
  assert root.handlers == []
  assert model.predict(['6.3,3.3,6,2.5'])[0]['label']
  assert root.handlers == []


def test_counts_name_one_thing_in_the_singular():
  from tensorfx import _logging

  assert _logging.counted(1, 'bad record') == '1 bad record'
  assert _logging.counted(0, 'bad record') == '0 bad records'
  assert _logging.counted(2, 'variable group') == '2 variable groups'
