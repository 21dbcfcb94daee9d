"""Gematria's command-line flags, spelled as Gematria spells them.

Any trainer accepts the flags of Gematria's `main_function.py`
(`--gematria_action=train`, `--gematria_input_file /tmp/blocks.tfrecord`,
...): `translate` rewrites each into the tensorfx flags of the same meaning
before the arguments are parsed, so a Gematria command line runs unchanged
(only the binary differs). Both `--flag=value` and `--flag value` are
read, and absl's booleans (`--flag`, `--noflag`, `--flag=false`). A
Gematria flag with no meaning here is an error that says what to do
instead, never silently dropped.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

from collections.abc import Callable, Collection, Sequence
import posixpath

from tensorfx._errors import ConfigurationError

_ACTIONS = {
  'train': ['--action', 'train'],
  'eval': ['--action', 'evaluate', '--follow'],
  'predict': ['--action', 'predict'],
  'export_graph_def': ['--action', 'export'],
}
# Gematria's LearningRateScheduleType members, as tensorfx's schedules.
_SCHEDULES = {
  'none': 'constant',
  'cosine': 'cosine',
  'exponential': 'exponential',
  'inverse_time': 'inverse-time',
  'linear_cosine': 'linear-cosine',
  'natural_exp': 'natural-exp',
  'polynomial': 'polynomial',
  'cosine_restarts': 'cosine-restarts',
}
# Gematria's boolean flags (absl: `--flag`, `--noflag`, `--flag=false`).
_BOOLEANS = (
  'gematria_drop_invalid_blocks',
  'gematria_load_global_step_from_ckpt',
  'gematria_training_randomize_batches',
  'gematria_synchronous_training',
  'gematria_use_seq2seq_loss',
  'gematria_run_tf_profiler',
  'gematria_bidirectional',
  'gematria_seq2seq',
)
# The flags of Gematria's sequence model (its run_sequence_model binary and
# token_model_flags.py), as the trainer flags a model of that kind defines
# (the Gematria sample's do): `--gematria_X` becomes `--X`, checked against
# the trainer's parser.
_MODEL = {
  'gematria_token_embedding_size': '--token-embedding-size',
  'gematria_instruction_embedding_size': '--instruction-embedding-size',
  'gematria_block_embedding_size': '--block-embedding-size',
  'gematria_output_layers': '--output-layers',
  'gematria_task_output_layers': '--task-output-layers',
  'gematria_bidirectional': '--bidirectional',
  'gematria_seq2seq': '--seq2seq',
  'gematria_use_seq2seq_loss': '--seq2seq-loss',
  'gematria_out_of_vocabulary_injection_probability': (
    '--oov-injection-probability'
  ),
}
# Flags Gematria takes that mean nothing here: what to do instead.
_NO_MEANING = {
  'master': (
    'the cluster comes from TF_CONFIG (Vertex AI writes it); locally '
    '`tensorfx train --cluster ps=N,workers=N`'
  ),
  'gematria_training_ps_tasks': (
    'parameter servers come from TF_CONFIG or `tensorfx train --cluster ps=N`'
  ),
  'gematria_num_training_worker_replicas': (
    'workers come from TF_CONFIG or `tensorfx train --cluster workers=N`'
  ),
  'gematria_num_training_worker_replicas_to_aggregate': (
    'workers train asynchronously with parameter servers and '
    'synchronously (all replicas) without'
  ),
  'gematria_synchronous_training': (
    'training is synchronous without parameter servers, asynchronous with'
  ),
  'gematria_training_task': 'the task comes from TF_CONFIG',
  'gematria_summary_dir': (
    'summaries are written to OUTPUT/summaries (--gematria_checkpoint_dir)'
  ),
  'gematria_save_summaries_secs': (
    'summaries are written every --log-interval-steps steps'
  ),
  'gematria_input_file_scaling': (
    'scale the target when writing the data, or in the feature set'
  ),
  'gematria_max_instructions_in_batch': (
    'batches count records (--gematria_max_blocks_in_batch)'
  ),
  'gematria_numpy_print_edgeitems': 'nothing is printed with numpy',
  'gematria_resume_to_dir': (
    'copy the job directory and train with --gematria_checkpoint_dir the copy'
  ),
  'gematria_resume_from_dir': (
    'copy the job directory and train with --gematria_checkpoint_dir the copy'
  ),
  'gematria_annotation_names_file': (
    "Gematria's sequence model reads no instruction annotations (its graph "
    'models do); they pass through prediction unchanged'
  ),
  'gematria_graph_def_file': (
    '--gematria_action=export_graph_def writes a SavedModel to '
    'OUTPUT/model (--gematria_checkpoint_dir); tf.lite.TFLiteConverter.'
    'from_saved_model converts it'
  ),
  'gematria_log_device_placement': (
    'TensorFlow 2 logs placements with tf.debugging.set_log_device_placement'
  ),
}


def _no_meaning(name: str) -> ConfigurationError:
  return ConfigurationError(
    f'--{name} is a Gematria flag without a tensorfx meaning: '
    f'{_NO_MEANING[name]}. Received: --{name}'
  )


def _bool(name: str, text: str) -> bool:
  lowered = text.strip().lower()
  if lowered in ('1', 'true', 't', 'yes', 'y'):
    return True
  if lowered in ('0', 'false', 'f', 'no', 'n'):
    return False
  raise ConfigurationError(
    f'--{name} takes true or false. Received: --{name}={text}'
  )


def _name(token: str) -> str:
  # absl takes one dash or two: `-gematria_x` is `--gematria_x`.
  if token.startswith('--'):
    return token[2:].partition('=')[0]
  if token.startswith('-') and not token.startswith('-', 1):
    return token[1:].partition('=')[0]
  return ''


def is_gematria(token: str) -> bool:
  """Whether a command-line token is one of Gematria's flags."""
  name = _name(token)
  return name.startswith(('gematria_', 'nogematria_')) or name == 'master'


def _split(argv: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
  """Gematria's flags as `(name, value)` pairs; the other tokens kept.

  As absl reads them: a boolean is `--flag`, `--noflag` or `--flag=VALUE`
  (never `--flag VALUE`); any other flag is `--flag=VALUE` or
  `--flag VALUE`.
  """
  flags = []
  rest = []
  tokens = list(argv)
  index = 0
  while index < len(tokens):
    token = tokens[index]
    index += 1
    if not is_gematria(token):
      rest.append(token)
      continue
    name, sep, value = token.lstrip('-').partition('=')
    if name.startswith('nogematria_') and name[2:] in _BOOLEANS and not sep:
      flags.append((name[2:], 'false'))
      continue
    if not sep:
      if name in _BOOLEANS:
        value = 'true'
      elif index < len(tokens):
        value = tokens[index]
        index += 1
      else:
        raise ConfigurationError(f'--{name} needs a value. Received: --{name}')
    flags.append((name, value))
  return flags, rest


def translate(
  argv: Sequence[str], options: Collection[str] | None = None
) -> list[str]:
  """Rewrites Gematria's flags in `argv` into tensorfx's.

  Example:
    >>> translate(['--gematria_action=train', '--gematria_input_file',
    ...            'a.tfrecord,b.tfrecord',
    ...            '--gematria_max_blocks_in_batch=100'])
    ['--action', 'train', '--data-train', 'a.tfrecord', 'b.tfrecord',
     '--batch-size', '100', '--eval-batch-size', '100']

  Args:
    argv: the command line's arguments.
    options: the option strings the trainer's parser defines; the flags of
      Gematria's sequence model are checked against them. None: not
      checked.

  Returns:
    The arguments, each Gematria flag replaced by the tensorfx flags of the
    same meaning, the others unchanged and first.

  Raises:
    ConfigurationError: a Gematria flag without a tensorfx meaning, or a
      value tensorfx cannot take, naming the flag and saying what to use
      instead.
  """
  flags, rest = _split(argv)
  if not flags:
    return list(argv)
  given = dict(flags)  # The last of a repeated flag, as absl keeps.
  last = {name: at for at, (name, _) in enumerate(flags)}
  action = given.get('gematria_action', 'train').strip().lower()
  if action not in _ACTIONS:
    raise ConfigurationError(
      f'--gematria_action must be one of {", ".join(_ACTIONS)} (or the '
      f'same in capitals). Received: --gematria_action={given["gematria_action"]}'
    )
  out: list[str] = []
  filters: list[str] = []
  task_names: list[str] = []
  for at, (name, value) in enumerate(flags):
    if name in _NO_MEANING and not (
      name == 'gematria_synchronous_training' and _bool(name, value)
    ):
      raise _no_meaning(name)
    if name == 'gematria_throughput_source_filter':
      filters.append(value)
    elif name == 'gematria_task_names':
      # absl's multi_string: one name per occurrence, commas kept.
      task_names.append(value)
    elif name in _MODEL:
      out.extend(_model(name, value, options))
    elif name in _HANDLERS:
      if name in _LISTS and last[name] != at:
        continue  # absl's list flags: the last occurrence replaces.
      try:
        out.extend(_HANDLERS[name](name, value, action))
      except ConfigurationError:
        raise
      except ValueError:  # int() of a number flag's value
        raise ConfigurationError(
          f'--{name} takes a number. Received: --{name}={value}'
        ) from None
    elif name not in _TOGETHER:
      raise ConfigurationError(
        f"--{name} is not a flag of Gematria's main_function, "
        'token_model_flags or sequence model (docs/migrating/gematria.md '
        f'lists the flags tensorfx reads). Received: --{name}={value}'
      )
  out.extend(_profiler(given))
  out.extend(_checkpoint_file(given, rest))
  out.extend(_tasks(filters, task_names))
  return rest + out


def _model(name: str, value: str, options: Collection[str] | None) -> list[str]:
  """A flag of Gematria's sequence model, as the trainer's flag of it."""
  flag = _MODEL[name]
  if name == 'gematria_use_seq2seq_loss' and (
    options is not None and flag not in options
  ):
    _bool(name, value)
    return []  # Gematria: "no effect for models that are not seq2seq".
  if name in _BOOLEANS:
    argv = [flag if _bool(name, value) else '--no-' + flag[2:]]
  else:
    argv = [flag, value]
  if options is not None and argv[0] not in options:
    raise ConfigurationError(
      f"--{name} is a flag of Gematria's sequence model, which this "
      f'trainer reads as {flag}; it defines no {argv[0]} (the Gematria '
      f'sample does). Received: --{name}={value}'
    )
  return argv


def _profiler(given: dict[str, str]) -> list[str]:
  """`--gematria_run_tf_profiler` (with its port) as `--profiler-port`."""
  if not _bool(
    'gematria_run_tf_profiler', given.get('gematria_run_tf_profiler', 'false')
  ):
    return []
  return ['--profiler-port', given.get('gematria_tf_profiler_port', '6009')]


def _checkpoint_file(given: dict[str, str], rest: Sequence[str]) -> list[str]:
  """The job directory of `--gematria_checkpoint_file` when none is named.

  Gematria's inference guide names only the checkpoint file; a tensorfx
  job reads its analysis beside it: the directory that holds
  `checkpoints/`, or the checkpoint's own directory (Gematria's layout).
  """
  checkpoint = given.get('gematria_checkpoint_file')
  if (
    not checkpoint
    or 'gematria_checkpoint_dir' in given
    or any(a.split('=')[0] in ('--output', '--job-dir') for a in rest)
  ):
    return []
  directory = posixpath.dirname(checkpoint.rstrip('/'))
  if posixpath.basename(directory) == 'checkpoints':
    directory = posixpath.dirname(directory)
  return ['--output', directory or '.']


def _tasks(filters: list[str], names: list[str]) -> list[str]:
  """The source filters: one keeps records; several are Gematria's tasks.

  One filter (or none) keeps the examples of the matching sources
  (`--data-filter`); several make one task each (`--task-sources`), named
  by `--gematria_task_names` or, as Gematria names them, `task_1`,
  `task_2`, ...
  """
  given = filters or ['.*']  # Gematria's default filter.
  if names and len(names) != len(given):
    raise ConfigurationError(
      '--gematria_task_names must have as many names as '
      '--gematria_throughput_source_filter has filters. Received: '
      f'{len(names)} names ({", ".join(names)}), {len(filters)} filters'
    )
  if len(filters) > 1:
    return [
      '--task-sources',
      *filters,
      '--task-names',
      *(names or [f'task_{i}' for i in range(1, len(filters) + 1)]),
    ]
  out = ['--task-names', *names] if names else []
  if not filters or filters[0] in ('', '.*'):
    return out
  # Gematria matches at the start of the source (re.match).
  return ['--data-filter', f'source=^(?:{filters[0]})', *out]


def _plain(flag: str) -> Callable[[str, str, str], list[str]]:
  return lambda name, value, action: [flag, value]


def _input(name: str, value: str, action: str) -> list[str]:
  files = [v for v in value.split(',') if v]
  flag = {
    'train': '--data-train',
    'eval': '--data-eval',
    'predict': '--predict-input',
  }.get(action)
  if flag is None:
    # Gematria lists export_graph_def among the actions without input data
    # and ignores the files; so does tensorfx.
    return []
  return [flag, *files]


def _epochs(name: str, value: str, action: str) -> list[str]:
  steps = int(value)
  # Gematria's training guide passes 0 to train until stopped; here the
  # run then ends when the data does (or --max-steps).
  return ['--max-steps', str(max(steps, 0))]


def _batch(name: str, value: str, action: str) -> list[str]:
  if action == 'predict':
    return ['--predict-batch-size', value]
  return ['--batch-size', value, '--eval-batch-size', value]


def _enum(
  flag: str, values: dict[str, str], name_of: str
) -> Callable[[str, str, str], list[str]]:
  """An absl enum_class flag (member names, any case) as a tensorfx flag."""

  def handle(name, value, action):
    key = value.strip().lower()
    if key not in values:
      raise ConfigurationError(
        f"--{name} takes a member of Gematria's {name_of}: "
        f'{", ".join(v.upper() for v in values)}. Received: --{name}={value}'
      )
    return [flag, values[key]]

  return handle


def _seed(name: str, value: str, action: str) -> list[str]:
  # Gematria: negative means no fixed seed.
  return [] if int(value) < 0 else ['--seed', value]


def _boolean(
  flag: str, negative: str | None = None
) -> Callable[[str, str, str], list[str]]:
  def handle(name, value, action):
    if _bool(name, value):
      return [flag]
    return [negative] if negative else []

  return handle


def _selection(name: str, value: str, action: str) -> list[str]:
  if value.strip().upper() != 'MEAN':
    raise ConfigurationError(
      f"--{name}={value}: tensorfx reads the mean of a source's "
      'measurements (MEAN); choose others when writing the data.'
    )
  return []


def _schedule(name: str, value: str, action: str) -> list[str]:
  if value.strip().lower() == 'noisy_linear_cosine':
    raise ConfigurationError(
      f'--{name}=NOISY_LINEAR_COSINE has no tensorfx schedule (TensorFlow 2 '
      'and Keras have no noisy linear cosine decay); use LINEAR_COSINE. '
      f'Received: --{name}={value}'
    )
  return _enum(
    '--learning-rate-schedule', _SCHEDULES, 'LearningRateScheduleType'
  )(name, value, action)


def _oov_token(name: str, value: str, action: str) -> list[str]:
  if not value:
    raise ConfigurationError(
      f'--{name} empty (out-of-vocabulary tokens are errors) has no tensorfx '
      "meaning: a trainer reads them as its vocabulary's out-of-vocabulary "
      'bucket. Leave the flag out.'
    )
  # Any replacement token: tensorfx's vocabularies give every token out of
  # the vocabulary one shared id, the out-of-vocabulary bucket, which plays
  # the replacement token's part.
  return []


def _trained(name: str, value: str, action: str) -> list[str]:
  groups = [v for v in value.split(',') if v]
  return ['--trainable-pattern', '|'.join(groups)] if groups else []


# Gematria's list flags (absl DEFINE_list): a repeated flag replaces.
_LISTS = ('gematria_input_file', 'gematria_collected_percentile_ranks')
# Read with another flag (_profiler, _checkpoint_file) rather than alone.
_TOGETHER = ('gematria_run_tf_profiler', 'gematria_tf_profiler_port')

_HANDLERS: dict[str, Callable[[str, str, str], list[str]]] = {
  'gematria_action': lambda name, value, action: list(_ACTIONS[action]),
  'gematria_input_file': _input,
  'gematria_output_file': _plain('--predict-output'),
  'gematria_checkpoint_dir': _plain('--output'),
  'gematria_checkpoint_file': _plain('--checkpoint'),
  'gematria_training_num_epochs': _epochs,
  'gematria_max_blocks_in_batch': _batch,
  'gematria_learning_rate': _plain('--learning-rate'),
  'gematria_loss_type': _plain('--loss'),
  'gematria_loss_normalization': _plain('--loss-normalization'),
  'gematria_tokens_file': lambda name, value, action: [
    '--data-vocabulary',
    f'tokens={value}',
  ],
  'gematria_out_of_vocabulary_replacement_token': _oov_token,
  'gematria_eval_interval_secs': _plain('--eval-interval-secs'),
  'gematria_checkpoint_max_to_keep': _plain('--keep-checkpoints'),
  'gematria_save_checkpoint_secs': _plain('--checkpoint-interval-secs'),
  'gematria_save_checkpoint_epochs': _plain('--checkpoint-interval-steps'),
  'gematria_save_summaries_epochs': _plain('--log-interval-steps'),
  'gematria_grad_clip_norm': _plain('--clip-norm'),
  'gematria_optimizer_type': _enum(
    '--optimizer',
    {'adam': 'adam', 'sgd': 'sgd', 'rmsprop': 'rmsprop'},
    'OptimizerType',
  ),
  'gematria_learning_rate_schedule': _schedule,
  'gematria_decay_steps': _plain('--decay-steps'),
  'gematria_decay_rate': _plain('--decay-rate'),
  'gematria_random_seed': _seed,
  'gematria_collected_percentile_ranks': lambda name, value, action: [
    '--percentile-ranks',
    *[v for v in value.split(',') if v],
  ],
  'gematria_drop_invalid_blocks': _boolean('--skip-bad-records'),
  'gematria_warmstart_checkpoint_file': _plain('--warm-start'),
  'gematria_warmstart_checkpoint_dir': _plain('--warm-start'),
  'gematria_load_global_step_from_ckpt': _boolean('--restore-global-step'),
  'gematria_training_randomize_batches': _boolean('--shuffle', '--no-shuffle'),
  'gematria_training_throughput_selection': _selection,
  'gematria_trained_variables': _trained,
  'gematria_model_name': _plain('--predict-source'),
  'gematria_synchronous_training': lambda name, value, action: [],
}
