"""Gematria's --gematria_* flags, accepted verbatim by every trainer."""

import shlex

import pytest

from tensorfx import ConfigurationError
from tensorfx.training import ModelArguments
from tensorfx.training._arguments import gematriaflags as _gematriaflags

# Gematria's documented example command line (only the binary differs).
SEED = """--gematria_action=train --gematria_tokens_file /tmp/tokens.txt
--gematria_input_file /tmp/blocks.tfrecord
--gematria_throughput_source_filter="ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL"
--gematria_training_num_epochs=0 --gematria_learning_rate=0.01
--gematria_loss_type=MEAN_ABSOLUTE_ERROR
--gematria_loss_normalization=PERCENTAGE_ERROR
--gematria_max_blocks_in_batch=100 --gematria_checkpoint_dir=/tmp/hlstm_model"""


def test_the_documented_command_line_parses_into_tensorfx_flags():
  args, output = ModelArguments.parse(SEED, parse_job=True)
  assert output == '/tmp/hlstm_model'
  assert args.action == 'train' and args.max_steps == 0
  assert args.data_train == ['/tmp/blocks.tfrecord']
  # Anchored at the start, as Gematria's re.match.
  assert args.data_filter == [
    'source=^(?:ithemal: kind=KIND_MEASURED, uarch=ARCH_HASWELL)'
  ]
  assert (args.learning_rate, args.batch_size, args.eval_batch_size) == (
    0.01,
    100,
    100,
  )
  assert (args.loss, args.loss_normalization) == (
    'mean_absolute_error',
    'percentage_error',
  )
  assert args.data_vocabulary == ['tokens=/tmp/tokens.txt']


def test_flag_equals_value_and_flag_space_value_are_the_same():
  spaced = ModelArguments.parse(shlex.split(SEED.replace('=', ' ', 1)))
  joined = ModelArguments.parse(
    '--gematria_tokens_file=/tmp/tokens.txt --gematria_input_file='
    '/tmp/blocks.tfrecord --gematria_max_blocks_in_batch 100'
  )
  assert spaced.data_train == joined.data_train == ['/tmp/blocks.tfrecord']
  assert spaced.data_vocabulary == joined.data_vocabulary
  assert joined.batch_size == 100


@pytest.mark.parametrize(
  'action,expected',
  [
    ('eval', ['--action', 'evaluate', '--follow', '--data-eval', 'a', 'b']),
    ('predict', ['--action', 'predict', '--predict-input', 'a', 'b']),
    ('export_graph_def', ['--action', 'export']),
  ],
)
def test_the_action_decides_what_the_input_files_are(action, expected):
  argv = [f'--gematria_action={action}']
  if action != 'export_graph_def':
    argv.append('--gematria_input_file=a,b')
  assert _gematriaflags.translate(argv) == expected


def test_predict_writes_the_output_file_with_the_checkpoint():
  args = ModelArguments.parse(
    '--gematria_action=predict --gematria_input_file in.tfrecord '
    '--gematria_output_file out.tfrecord --gematria_checkpoint_file '
    '/tmp/m/checkpoints/ckpt-5 --gematria_model_name hlstm '
    '--gematria_max_blocks_in_batch=7'
  )
  assert (args.action, args.predict_input, args.predict_output) == (
    'predict',
    ['in.tfrecord'],
    'out.tfrecord',
  )
  assert args.checkpoint == '/tmp/m/checkpoints/ckpt-5'
  assert (args.predict_source, args.predict_batch_size) == ('hlstm', 7)


def test_the_other_flags_with_a_meaning():
  args = ModelArguments.parse(
    '--gematria_eval_interval_secs=30 --gematria_checkpoint_max_to_keep 3 '
    '--gematria_save_checkpoint_secs=20 --gematria_grad_clip_norm=1.5 '
    '--gematria_optimizer_type=RMSPROP --gematria_random_seed=4 '
    '--gematria_learning_rate_schedule=COSINE_DECAY '
    '--gematria_decay_steps=100 --gematria_drop_invalid_blocks '
    '--nogematria_training_randomize_batches '
    '--gematria_use_seq2seq_loss=false'
  )
  assert (
    args.eval_interval_secs,
    args.keep_checkpoints,
    args.checkpoint_interval_secs,
    args.clip_norm,
  ) == (30, 3, 20, 1.5)
  assert (
    args.optimizer,
    args.seed,
    args.learning_rate_schedule,
    args.decay_steps,
  ) == ('rmsprop', 4, 'cosine', 100)
  assert args.skip_bad_records and args.shuffle is False
  # Gematria: a negative seed means no fixed seed.
  assert ModelArguments.parse('--gematria_random_seed=-1').seed is None


@pytest.mark.parametrize(
  'flag,message',
  [
    ('--gematria_summary_dir=/tmp/s', 'OUTPUT/summaries'),
    ('--master=local', 'TF_CONFIG'),
    ('--gematria_training_ps_tasks=2', '--cluster ps=N'),
    ('--gematria_max_instructions_in_batch=10', 'batches count records'),
  ],
)
def test_a_flag_without_a_tensorfx_meaning_is_an_error_saying_so(flag, message):
  name = flag.partition('=')[0]
  with pytest.raises(
    ConfigurationError,
    match=f'{name} is a Gematria flag without a tensorfx meaning: .*{message}',
  ):
    ModelArguments.parse([flag])


def test_unknown_and_unsupported_values_are_errors_naming_the_flag():
  with pytest.raises(
    ConfigurationError, match='--gematria_colour is not a Gematria flag'
  ):
    ModelArguments.parse(['--gematria_colour=red'])
  with pytest.raises(ConfigurationError, match='--gematria_action must be'):
    ModelArguments.parse(['--gematria_action=fly'])
  with pytest.raises(
    ConfigurationError,
    match='NOISY_LINEAR_COSINE_DECAY has no tensorfx equivalent',
  ):
    ModelArguments.parse(
      ['--gematria_learning_rate_schedule=NOISY_LINEAR_COSINE_DECAY']
    )


def test_several_source_filters_are_tasks():
  # As Gematria: one task per filter, named by --gematria_task_names.
  args = ModelArguments.parse(
    [
      '--gematria_throughput_source_filter=hsw',
      '--gematria_throughput_source_filter',
      'skl',
      '--gematria_task_names=haswell',
      '--gematria_task_names',
      'skylake',
    ]
  )
  assert args.task_sources == ['hsw', 'skl']
  assert args.task_names == ['haswell', 'skylake']
  assert not args.data_filter
  # Unnamed, they are Gematria's task_1, task_2, ...
  args = ModelArguments.parse(
    [
      '--gematria_throughput_source_filter=a',
      '--gematria_throughput_source_filter=b',
      '--gematria_throughput_source_filter=c',
    ]
  )
  assert args.task_names == ['task_1', 'task_2', 'task_3']
  # One filter with its name: one task, its records kept by the filter.
  args = ModelArguments.parse(
    ['--gematria_throughput_source_filter=a', '--gematria_task_names=only']
  )
  assert args.data_filter == ['source=^(?:a)'] and args.task_names == ['only']


def test_task_names_must_match_the_source_filters():
  with pytest.raises(
    ConfigurationError,
    match='--gematria_task_names must have as many names as '
    '--gematria_throughput_source_filter has filters. '
    r'Received: 3 names \(a, b, c\), 2 filters',
  ):
    ModelArguments.parse(
      [
        '--gematria_throughput_source_filter=x',
        '--gematria_throughput_source_filter=y',
        '--gematria_task_names=a',
        '--gematria_task_names=b',
        '--gematria_task_names=c',
      ]
    )
  with pytest.raises(ConfigurationError, match='2 names .*, 0 filters'):
    ModelArguments.parse(['--gematria_task_names=a', '--gematria_task_names=b'])


def test_tensorfx_flags_pass_through_beside_gematria_ones():
  args = ModelArguments.parse(
    ['--gematria_learning_rate=0.5', '--batch-size', '8']
  )
  assert (args.learning_rate, args.batch_size) == (0.5, 8)
