"""What a run writes for TensorBoard and its log besides loss and metrics.

Training scalars (learning rate, gradient norm, steps/s), the HParams
plugin's records (read back with its protos, and through a real
TensorBoard server: one row per run), the profile of `--profile-steps`,
and the model summary logged before the first step.
"""

import glob
import gzip
import json
import logging
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
import tensorflow as tf

from conftest import iris_args
from conftest import modules_imported
from tensorfx import ConfigurationError
from tensorfx import training
from tensorfx.models import nn
from tensorfx.training import _settings
from tensorfx.training._engine import cadence as _cadence
from tensorfx.training._engine import loop as _loop

# Its module fixtures are built once, on one worker.
pytestmark = pytest.mark.xdist_group('test_summaries')


class _Records(logging.Handler):
  def __init__(self):
    super().__init__()
    self.lines = []

  def emit(self, record):
    self.lines.append(record.getMessage())


def _train(output, dataset, *extra):
  args, job = nn.FeedForwardClassificationArguments.parse(
    iris_args(output, '--hidden-layers:1', '8', '--batch-size', '16', *extra),
    parse_job=True,
  )
  records = _Records()
  logger = logging.getLogger('tensorfx')
  logger.addHandler(records)
  try:
    training.ModelTrainer().train(
      nn.FeedForwardClassification(args, dataset), job
    )
  finally:
    logger.removeHandler(records)
  return records.lines


def _free_port():
  with socket.socket() as probe:
    probe.bind(('127.0.0.1', 0))
    return probe.getsockname()[1]


PROFILER_PORT = _free_port()


@pytest.fixture(scope='module')
def run(tmp_path_factory, iris_dataset_factory):
  """12 steps, logged every 4, a warm-up to step 8, steps 5-7 profiled."""
  # In a directory of jobs, as TensorBoard opens several to compare them.
  output = tmp_path_factory.mktemp('jobs') / 'first'
  lines = _train(
    output,
    iris_dataset_factory(),
    '--max-steps',
    '12',
    '--log-interval-steps',
    '4',
    '--warmup-steps',
    '8',
    '--learning-rate',
    '0.04',
    '--profile-steps',
    '5,7',
    '--profiler-port',
    str(PROFILER_PORT),
  )
  return output, lines


def _events(directory):
  """[(step, tag, plugin name, summary value)] of `directory`'s events."""
  found = []
  for path in sorted(
    glob.glob(os.path.join(directory, 'events.out.tfevents.*'))
  ):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        found.append(
          (event.step, value.tag, value.metadata.plugin_data.plugin_name, value)
        )
  return found


def _scalars(directory):
  scalars = {}
  for step, tag, plugin, value in _events(directory):
    if plugin == 'scalars':
      scalars.setdefault(tag, []).append(
        (step, float(tf.make_ndarray(value.tensor)))
      )
  return scalars


def test_training_scalars_besides_the_loss(run):
  output, _ = run
  train = _scalars(output / 'summaries' / 'train')
  for tag in (
    'loss',
    'learning_rate',
    'gradient_norm',
    'steps_per_sec',
    'examples_per_sec',
  ):
    assert [step for step, _ in train[tag]] == [4, 8, 12], tag
  # The linear warm-up reaches --learning-rate at step 8, then stays.
  rates = [value for _, value in train['learning_rate']]
  assert rates[0] == pytest.approx(0.04 * 4 / 8, rel=1e-3)
  assert rates[1:] == pytest.approx([0.04, 0.04], rel=1e-6)
  norms = [value for _, value in train['gradient_norm']]
  assert all(math.isfinite(n) and n > 0 for n in norms)
  assert len(set(norms)) == 3  # Each log reads its own last step.
  steps_per_sec = [value for _, value in train['steps_per_sec']]
  examples_per_sec = [value for _, value in train['examples_per_sec']]
  assert all(s > 0 for s in steps_per_sec)
  assert examples_per_sec == pytest.approx(
    [s * 16 for s in steps_per_sec], rel=1e-5
  )


def _hparams_records(directory):
  """The HParams plugin's records in `directory`, parsed with its protos."""
  records = {}
  for _, tag, plugin, value in _events(directory):
    if plugin == hparams_metadata.PLUGIN_NAME:
      md = hparams_metadata
      parse = {
        md.EXPERIMENT_TAG: md.parse_experiment_plugin_data,
        md.SESSION_START_INFO_TAG: md.parse_session_start_info_plugin_data,
        md.SESSION_END_INFO_TAG: md.parse_session_end_info_plugin_data,
      }[tag]
      records[tag] = parse(value.metadata.plugin_data.content)
  return records


def test_hparams_records_read_back_with_the_plugin_protos(run):
  output, _ = run
  records = _hparams_records(output / 'summaries')
  start = records[hparams_metadata.SESSION_START_INFO_TAG]
  hparams = dict(start.hparams)
  assert hparams['batch_size'].number_value == 16
  assert hparams['learning_rate'].number_value == pytest.approx(0.04)
  assert hparams['optimizer'].string_value == 'adam'
  assert hparams['hidden_layers'].string_value == '8'  # A list, joined.
  assert hparams['shuffle'].bool_value is True
  assert 'epochs' not in hparams  # Unset.
  experiment = records[hparams_metadata.EXPERIMENT_TAG]
  assert {h.name for h in experiment.hparam_infos} == set(hparams)
  metrics = {(m.name.group, m.name.tag) for m in experiment.metric_infos}
  assert {
    ('train', 'loss'),
    ('train', 'gradient_norm'),
    ('train', 'learning_rate'),
    ('train', 'steps_per_sec'),
    ('eval', 'loss'),
    ('eval', 'accuracy'),
  } <= metrics
  end = records[hparams_metadata.SESSION_END_INFO_TAG]
  assert end.status == api_pb2.STATUS_SUCCESS


def test_a_profiler_server_listens_on_the_port_asked(run):
  # Gematria's --gematria_run_tf_profiler: TensorBoard captures from it.
  _, lines = run
  assert any(
    f'Profiler server on port {PROFILER_PORT}' in line for line in lines
  )
  with socket.create_connection(('127.0.0.1', PROFILER_PORT), timeout=5):
    pass


def test_profile_of_the_asked_steps(run):
  output, lines = run
  traces = glob.glob(
    str(
      output
      / 'summaries'
      / 'train'
      / 'plugins'
      / 'profile'
      / '*'
      / '*.xplane.pb'
    )
  )
  assert len(traces) == 1
  assert 'Profiling steps 5 to 7' in lines
  try:
    from tsl.profiler.protobuf import xplane_pb2
  except ImportError:
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
  space = xplane_pb2.XSpace()
  with open(traces[0], 'rb') as f:
    space.ParseFromString(f.read())
  calls = 0
  for plane in space.planes:
    names = {m.id: m.name for m in plane.event_metadata.values()}
    calls += sum(
      names.get(e.metadata_id) == 'loop'
      for line in plane.lines
      for e in line.events
    )
  # One call of the training loop (steps 5 to 7, the cadence split it
  # there): not the calls around it, not the log, checkpoint, evaluation.
  assert calls == 1


def test_model_summary_is_logged_before_training(run):
  output, lines = run
  start = lines.index(
    'Model FeedForwardClassification under the default strategy: 2 '
    'variable groups'
  )
  summary = lines[start + 1 : start + 5]
  # Iris: 4 inputs -> 8 hidden units -> 3 classes.
  assert summary[1].split() == [
    'hidden1',
    '40',
    'kernel',
    '4x8,',
    'bias',
    '8',
    'CPU:0',
  ]
  assert summary[2].split() == [
    'output',
    '27',
    'kernel',
    '8x3,',
    'bias',
    '3',
    'CPU:0',
  ]
  assert summary[3] == '  total 67 parameters (67 trainable, 0 not)'
  # Adam: m and v per parameter, and its iteration count.
  assert lines[start + 5] == '  optimizer state 135 values (not parameters)'
  assert start < lines.index('Training from step 0 to 12, 16 examples per step')
  text = [
    value
    for _, tag, plugin, value in _events(output / 'summaries' / 'train')
    if tag == 'model_summary' and plugin == 'text'
  ]
  assert len(text) == 1
  assert 'hidden1' in tf.make_ndarray(text[0].tensor).item().decode()


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _request(port, path, body=None, timeout=10):
  data = json.dumps(body).encode() if body is not None else None
  request = urllib.request.Request(
    f'http://127.0.0.1:{port}{path}',
    data=data,
    headers={'Content-Type': 'application/json'},
  )
  with urllib.request.urlopen(request, timeout=timeout) as response:
    content = response.read()
    if response.headers.get('Content-Encoding') == 'gzip':
      content = gzip.decompress(content)
    return content


@pytest.mark.release
@pytest.mark.slow
def test_tensorboard_shows_one_hparams_row_per_run(run, iris_dataset_factory):
  first, _ = run
  logdir = first.parent
  _train(
    logdir / 'second',
    iris_dataset_factory(),
    '--max-steps',
    '4',
    '--log-interval-steps',
    '4',
    '--learning-rate',
    '0.2',
  )
  port = _free_port()
  server = subprocess.Popen(
    [
      sys.executable,
      '-m',
      'tensorboard.main',
      '--logdir',
      str(logdir),
      '--host',
      '127.0.0.1',
      '--port',
      str(port),
      '--load_fast',
      'false',
    ],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
  )
  try:
    deadline = time.monotonic() + 120
    while True:
      try:
        runs = json.loads(_request(port, '/data/runs'))
        if 'second/summaries/eval' in runs:
          break
      except OSError:
        pass
      assert server.poll() is None and time.monotonic() < deadline
      time.sleep(0.5)
    groups = json.loads(
      _request(
        port,
        '/data/plugin/hparams/session_groups',
        {
          'experimentName': '',
          'startIndex': 0,
          'sliceSize': 100,
          'allowedStatuses': [
            'STATUS_UNKNOWN',
            'STATUS_SUCCESS',
            'STATUS_FAILURE',
            'STATUS_RUNNING',
          ],
          'colParams': [
            {'hparam': 'learning_rate'},
            {'metric': {'group': 'eval', 'tag': 'accuracy'}},
          ],
        },
      )
    )['sessionGroups']
    rows = {g['sessions'][0]['name']: g for g in groups}
    assert set(rows) == {'first/summaries', 'second/summaries'}
    assert rows['second/summaries']['hparams']['learning_rate'] == 0.2
    accuracy = {
      (m['name']['group'], m['name']['tag']): m
      for m in rows['second/summaries']['metricValues']
    }[('eval', 'accuracy')]
    final = _scalars(logdir / 'second' / 'summaries' / 'eval')['accuracy']
    assert (accuracy['trainingStep'], accuracy['value']) == pytest.approx(
      final[-1]
    )
    try:
      import tensorboard_plugin_profile  # noqa: F401  (importable is what is checked)
    except ImportError:
      return  # The profile extra is not installed here.
    # The profile extra's plugin lists the profile of the first run.
    profiles = json.loads(_request(port, '/data/plugin/profile/runs'))
    assert any(name.startswith('first/summaries/train') for name in profiles), (
      profiles
    )
  finally:
    server.terminate()
    try:
      server.wait(timeout=20)
    except subprocess.TimeoutExpired:
      server.kill()
      server.wait()


@pytest.mark.parametrize('value', ['0,3', '7,5', 'a,b', '1,2,3', ''])
def test_profile_steps_are_checked(value):
  if value == '':
    # An empty value is no profile, not an error.
    assert (
      _settings.Settings.from_args(
        training.ModelArguments.parse(['--profile-steps', value])
      ).summaries.profile_steps
      is None
    )
    return
  with pytest.raises(
    ConfigurationError,
    match=f'--profile-steps must be FIRST,LAST.*Received: '
    f'--profile-steps={value}',
  ):
    training.ModelArguments.parse(['--profile-steps', value])


def test_one_step_profiles_that_step():
  settings = _settings.Settings.from_args(
    training.ModelArguments.parse(['--profile-steps', '9'])
  )
  assert settings.summaries.profile_steps == (9, 9)


class _Context:
  stop_requested = False
  stop_reason = None
  exit_code = None


class _Callbacks:
  context = _Context()

  def __init__(self, events):
    self.events = events

  def on_step_end(self, step, logs):
    self.events.append(('log', step))

  def on_train_begin(self, logs):
    pass


def test_step_hooks_split_the_calls_and_run_between_them():
  events, position = [], [0]

  def steps(num_steps):
    events.append(('call', position[0], position[0] + num_steps))
    position[0] += num_steps
    return _loop.StepResult(step=position[0], ran=num_steps, loss=1.0)

  loop = _loop.TrainingLoop(
    steps,
    lambda: position[0],
    _cadence.Cadence(
      max_steps=12,
      log_every=4,
      checkpoint_secs=1e9,
      measured=False,
      validate=False,
    ),
    _Callbacks(events),
    save=lambda: (position[0], None),
    evaluate=lambda step: None,
  )
  loop.at_step(4, lambda step: events.append(('before', step)), when='before')
  loop.at_step(7, lambda step: events.append(('after', step)))
  loop.run()
  assert events == [
    ('call', 0, 4),
    ('log', 4),
    ('before', 4),
    ('call', 4, 7),
    ('after', 7),
    ('call', 7, 8),
    ('log', 8),
    ('call', 8, 12),
    ('log', 12),
  ]


def test_model_summary_counts_unnamed_variables_apart():
  # Two unnamed scalars share the name `Variable`: they are two variables,
  # not the shards of one.
  from tensorfx.training._callbacks import model_summary

  group = model_summary.Group('model')
  for _ in range(2):
    group.add('Variable', tf.Variable(1.0))
  group.add('kernel', tf.Variable(tf.zeros([3, 2])))
  assert group.parameters == 8
  assert dict(group.shapes) == {
    'Variable': [],
    'Variable_1': [],
    'kernel': [3, 2],
  }


def _records(directory):
  return [
    (step, tag, value.metadata.SerializeToString(), value.tensor)
    for step, tag, _, value in _events(directory)
  ]


def test_scalars_and_text_are_tensorboards_own_records(tmp_path):
  from tensorfx.training._run import summaries

  ours = summaries.Summaries(str(tmp_path / 'ours'))
  ours.scalars('train', 7, {'loss': 0.25, 'steps': tf.constant(3, tf.int64)})
  ours.text('train', 0, 'model_summary', '| layer | size |')
  ours.close()
  writer = tf.summary.create_file_writer(str(tmp_path / 'plugins' / 'train'))
  with writer.as_default():
    tf.summary.scalar('loss', 0.25, step=7)
    tf.summary.scalar('steps', tf.constant(3, tf.int64), step=7)
    tf.summary.text('model_summary', '| layer | size |', step=0)
  writer.close()
  written = _records(tmp_path / 'ours' / 'train')
  assert [r[:2] for r in written] == [
    (7, 'loss'),
    (7, 'steps'),
    (0, 'model_summary'),
  ]
  assert written == _records(tmp_path / 'plugins' / 'train')


def test_writing_summaries_imports_no_tensorboard_summary_module(tmp_path):
  # tf.summary.scalar/text would import tensorboard.summary (every plugin's
  # helpers, boto3): 0.3 s of each training process's start.
  code = (
    'from tensorfx.training._run import summaries\n'
    f's = summaries.Summaries({str(tmp_path)!r})\n'
    "s.scalars('train', 1, {'loss': 0.5})\n"
    "s.text('train', 0, 'model_summary', 'text')\n"
    's.close()\n'
  )
  assert modules_imported(code, ('boto3', 'tensorboard.summary')) == []
  assert len(_events(tmp_path / 'train')) == 2
