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
  # Gematria's export_graph_def reads no input data and ignores the files.
  argv = [f'--gematria_action={action}', '--gematria_input_file=a,b']
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
    '--gematria_learning_rate_schedule=COSINE '
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
    ConfigurationError,
    match="--gematria_colour is not a flag of Gematria's main_function",
  ):
    ModelArguments.parse(['--gematria_colour=red'])
  with pytest.raises(ConfigurationError, match='--gematria_action must be'):
    ModelArguments.parse(['--gematria_action=fly'])
  with pytest.raises(
    ConfigurationError,
    match='NOISY_LINEAR_COSINE has no tensorfx schedule .* use LINEAR_COSINE',
  ):
    ModelArguments.parse(
      ['--gematria_learning_rate_schedule=NOISY_LINEAR_COSINE']
    )
  # Names Gematria never had are not taken.
  with pytest.raises(
    ConfigurationError,
    match="member of Gematria's LearningRateScheduleType: NONE, COSINE, "
    'EXPONENTIAL',
  ):
    ModelArguments.parse(['--gematria_learning_rate_schedule=COSINE_DECAY'])
  with pytest.raises(ConfigurationError, match='--gematria_random_seed takes'):
    ModelArguments.parse(['--gematria_random_seed=abc'])


# Gematria's LearningRateScheduleType, as its options.py defines it.
@pytest.mark.parametrize(
  'gematria,tensorfx',
  [
    ('NONE', 'constant'),
    ('COSINE', 'cosine'),
    ('EXPONENTIAL', 'exponential'),
    ('INVERSE_TIME', 'inverse-time'),
    ('LINEAR_COSINE', 'linear-cosine'),
    ('NATURAL_EXP', 'natural-exp'),
    ('POLYNOMIAL', 'polynomial'),
    ('COSINE_RESTARTS', 'cosine-restarts'),
  ],
)
def test_learning_rate_schedules_take_gematrias_names(gematria, tensorfx):
  args = ModelArguments.parse(
    [
      f'--gematria_learning_rate_schedule={gematria.lower()}',
      '--gematria_decay_steps=10',
      '--gematria_decay_rate=0.5',
    ]
  )
  assert args.learning_rate_schedule == tensorfx


def test_flags_read_as_absl_reads_them():
  # One dash or two; booleans bare, negated or =value, never `--flag value`;
  # a list flag repeated keeps its last; a multi_string appends.
  args = ModelArguments.parse(
    [
      '-gematria_drop_invalid_blocks',
      '--nogematria_training_randomize_batches',
      '--gematria_input_file=old.tfrecord',
      '--gematria_input_file=a.tfrecord,b.tfrecord',
      '--gematria_throughput_source_filter=x',
      '--gematria_throughput_source_filter=y',
      '--gematria_task_names=hsw',
      '--gematria_task_names=skl',
    ]
  )
  assert args.skip_bad_records and args.shuffle is False
  assert args.data_train == ['a.tfrecord', 'b.tfrecord']
  assert args.task_names == ['hsw', 'skl']


def test_the_profiler_flags_start_a_profiler_server():
  args = ModelArguments.parse(
    ['--gematria_run_tf_profiler', '--gematria_tf_profiler_port=7007']
  )
  assert args.profiler_port == 7007
  # Gematria's default port, and no server without the switch.
  assert (
    ModelArguments.parse(['--gematria_run_tf_profiler']).profiler_port == 6009
  )
  assert (
    ModelArguments.parse(['--gematria_tf_profiler_port=7007']).profiler_port
    is None
  )


def test_a_checkpoint_file_alone_names_its_job_directory():
  # Gematria's inference guide names only --gematria_checkpoint_file.
  args = ModelArguments.parse(
    '--gematria_action=predict --gematria_input_file in.tfrecord '
    '--gematria_output_file out.tfrecord '
    '--gematria_checkpoint_file=/tmp/m/checkpoints/ckpt-5',
    parse_job=True,
  )
  assert (
    args.output == '/tmp/m' and args.checkpoint == '/tmp/m/checkpoints/ckpt-5'
  )
  # Gematria's own layout keeps checkpoints in the job directory itself.
  args = ModelArguments.parse(
    '--gematria_action=export_graph_def '
    '--gematria_checkpoint_file=gs://b/granite_model/model.ckpt-10000',
    parse_job=True,
  )
  assert args.output == 'gs://b/granite_model' and args.action == 'export'


def test_sequence_model_flags_need_a_trainer_that_defines_them():
  with pytest.raises(
    ConfigurationError,
    match="--gematria_block_embedding_size is a flag of Gematria's sequence "
    'model, which this trainer reads as --block-embedding-size; it defines '
    'no --block-embedding-size',
  ):
    ModelArguments.parse(['--gematria_block_embedding_size=256'])
  # Gematria: the seq2seq loss has no effect on a model that is not seq2seq.
  assert ModelArguments.parse(['--gematria_use_seq2seq_loss=false'])


def test_a_command_line_error_is_one_line_and_exit_2(capsys, monkeypatch):
  monkeypatch.setattr('sys.argv', ['trainer.py', '--gematria_summary_dir=/s'])
  with pytest.raises(SystemExit) as stopped:
    ModelArguments.parse()
  assert stopped.value.code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 2 and err[0].startswith('usage:')
  assert 'error: --gematria_summary_dir is a Gematria flag without' in err[1]


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
