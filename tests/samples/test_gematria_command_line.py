"""Every flag of Gematria's command line, given to the Gematria sample.

The flags are those Gematria's own binaries define (google/gematria at
935cbf4): `gematria/model/python/main_function.py`,
`gematria/model/python/token_model_flags.py` and the sequence model's
`gematria/sequence/python/run_sequence_model.py`. Each is either honoured
or refused in one line that names it and says what to do instead.
"""

import re

import pytest

import gematria_sample
from tensorfx import ConfigurationError

trainer = gematria_sample.module('trainer')

# Each flag with a value Gematria's docs or defaults give it.
MAIN_FUNCTION = {
  'gematria_action': 'train',
  'gematria_input_file': 'a.tfrecord,b.tfrecord',
  'gematria_input_file_scaling': '2.0',
  'gematria_grad_clip_norm': '1.0',
  'gematria_load_global_step_from_ckpt': 'true',
  'gematria_throughput_source_filter': 'ithemal: kind=KIND_MEASURED',
  'gematria_task_names': 'default',
  'gematria_model_name': 'hlstm',
  'gematria_output_file': 'out.tfrecord',
  'master': 'local',
  'gematria_max_blocks_in_batch': '100',
  'gematria_max_instructions_in_batch': '1000000',
  'gematria_training_num_epochs': '100',
  'gematria_training_randomize_batches': 'true',
  'gematria_drop_invalid_blocks': 'true',
  'gematria_training_throughput_selection': 'MEAN',
  'gematria_numpy_print_edgeitems': '20',
  'gematria_random_seed': '123456789',
  'gematria_checkpoint_dir': '/tmp/model',
  'gematria_checkpoint_max_to_keep': '100',
  'gematria_checkpoint_file': '/tmp/model/checkpoints/ckpt-5',
  'gematria_warmstart_checkpoint_file': '/tmp/other/ckpt-1',
  'gematria_warmstart_checkpoint_dir': '/tmp/other',
  'gematria_resume_from_dir': '/tmp/a',
  'gematria_resume_to_dir': '/tmp/b',
  'gematria_collected_percentile_ranks': '50,90,95,99',
  'gematria_summary_dir': '/tmp/summaries',
  'gematria_save_checkpoint_epochs': '100',
  'gematria_save_summaries_epochs': '100',
  'gematria_eval_interval_secs': '60',
  'gematria_training_task': '0',
  'gematria_training_ps_tasks': '0',
  'gematria_synchronous_training': 'true',
  'gematria_loss_normalization': 'PERCENTAGE_ERROR',
  'gematria_loss_type': 'HUBER',
  'gematria_trained_variables': 'token_embedding',
  'gematria_learning_rate': '0.001',
  'gematria_optimizer_type': 'SGD',
  'gematria_decay_steps': '1000',
  'gematria_decay_rate': '0.5',
  'gematria_learning_rate_schedule': 'NONE',
  'gematria_num_training_worker_replicas': '1',
  'gematria_num_training_worker_replicas_to_aggregate': '1',
  'gematria_use_seq2seq_loss': 'false',
  'gematria_run_tf_profiler': 'true',
  'gematria_tf_profiler_port': '6009',
}
TOKEN_MODEL_FLAGS = {
  'gematria_tokens_file': 'tokens.txt',
  'gematria_annotation_names_file': 'annotations.txt',
  'gematria_out_of_vocabulary_replacement_token': '_UNKNOWN_',
  'gematria_out_of_vocabulary_injection_probability': '0.1',
}
RUN_SEQUENCE_MODEL = {
  'gematria_token_embedding_size': '256',
  'gematria_instruction_embedding_size': '256',
  'gematria_block_embedding_size': '256',
  'gematria_output_layers': '256,256',
  'gematria_task_output_layers': '128',
  'gematria_bidirectional': 'true',
  'gematria_seq2seq': 'false',
}
FLAGS = {**MAIN_FUNCTION, **TOKEN_MODEL_FLAGS, **RUN_SEQUENCE_MODEL}
# What has no meaning in tensorfx or in the sample's model.
REFUSED = {
  'gematria_input_file_scaling',
  'master',
  'gematria_max_instructions_in_batch',
  'gematria_numpy_print_edgeitems',
  'gematria_resume_from_dir',
  'gematria_resume_to_dir',
  'gematria_summary_dir',
  'gematria_training_task',
  'gematria_training_ps_tasks',
  'gematria_num_training_worker_replicas',
  'gematria_num_training_worker_replicas_to_aggregate',
  'gematria_annotation_names_file',
}


def test_gematria_defines_57_flags():
  assert (len(MAIN_FUNCTION), len(TOKEN_MODEL_FLAGS)) == (46, 4)
  assert len(RUN_SEQUENCE_MODEL) == 7


@pytest.mark.parametrize('flag', sorted(FLAGS))
def test_each_flag_is_honoured_or_refused_in_one_line(flag):
  argv = [f'--{flag}={FLAGS[flag]}', '--gematria_checkpoint_dir=/tmp/m']
  if flag in REFUSED:
    with pytest.raises(ConfigurationError) as refused:
      trainer.SequenceModelArguments.parse(argv)
    message = str(refused.value)
    assert f'--{flag}' in message and '\n' not in message
    return
  trainer.SequenceModelArguments.parse(argv)


def test_the_sequence_models_flags_shape_the_model():
  args = trainer.SequenceModelArguments.parse(
    [
      f'--{name}={value}'
      for name, value in RUN_SEQUENCE_MODEL.items()
      if name != 'gematria_seq2seq'
    ]
    + ['--gematria_seq2seq', '--nogematria_use_seq2seq_loss']
    + ['--gematria_out_of_vocabulary_injection_probability=0.25']
  )
  assert (
    args.token_embedding_size,
    args.instruction_embedding_size,
    args.block_embedding_size,
  ) == (256, 256, 256)
  assert (args.output_layers, args.task_output_layers) == ([256, 256], [128])
  assert args.bidirectional and args.seq2seq and not args.seq2seq_loss
  assert args.oov_injection_probability == 0.25


@pytest.mark.parametrize(
  'argv,message',
  [
    (['--gematria_block_embedding_size=255'], 'positive even number'),
    (['--gematria_output_layers=256,-1'], 'positive layer sizes'),
    (
      ['--gematria_out_of_vocabulary_injection_probability=2'],
      'within \\[0, 1\\]',
    ),
    # Gematria's seq2seq loss reads each prefix's throughputs.
    (['--gematria_seq2seq'], 'add --no-seq2seq-loss'),
    (
      ['--gematria_out_of_vocabulary_replacement_token='],
      'out-of-vocabulary bucket',
    ),
  ],
)
def test_bad_model_flags_say_what_is_wrong(argv, message, capsys):
  with pytest.raises((ConfigurationError, SystemExit)) as stopped:
    trainer.SequenceModelArguments.parse(argv)
  text = str(stopped.value) + capsys.readouterr().err
  assert re.search(message, text), text
