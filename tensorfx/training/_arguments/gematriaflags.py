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

from collections.abc import Callable, Sequence

from tensorfx._errors import ConfigurationError

_ACTIONS = {
  'train': ['--action', 'train'],
  'eval': ['--action', 'evaluate', '--follow'],
  'predict': ['--action', 'predict'],
  'export_graph_def': ['--action', 'export'],
}
_SCHEDULES = {
  'none': 'constant',
  'exponential_decay': 'exponential',
  'inverse_time_decay': 'inverse-time',
  'natural_exp_decay': 'natural-exp',
  'polynomial_decay': 'polynomial',
  'cosine_decay': 'cosine',
  'cosine_decay_restarts': 'cosine-restarts',
  'linear_cosine_decay': 'linear-cosine',
}
_BOOLEANS = (
  'gematria_drop_invalid_blocks',
  'gematria_load_global_step_from_ckpt',
  'gematria_training_randomize_batches',
  'gematria_synchronous_training',
  'gematria_use_seq2seq_loss',
)
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


def is_gematria(token: str) -> bool:
  """Whether a command-line token is one of Gematria's flags."""
  name = token[2:].partition('=')[0] if token.startswith('--') else ''
  return name.startswith(('gematria_', 'nogematria_')) or name == 'master'


def _split(argv: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
  """Gematria's flags as `(name, value)` pairs; the other tokens kept."""
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
    name, sep, value = token[2:].partition('=')
    if name.startswith('nogematria_') and name[2:] in _BOOLEANS and not sep:
      flags.append((name[2:], 'false'))
      continue
    if not sep:
      if name in _BOOLEANS and (
        index >= len(tokens) or tokens[index].startswith('--')
      ):
        value = 'true'
      elif index < len(tokens):
        value = tokens[index]
        index += 1
      else:
        raise ConfigurationError(f'--{name} needs a value. Received: --{name}')
    flags.append((name, value))
  return flags, rest


def translate(argv: Sequence[str]) -> list[str]:
  """Rewrites Gematria's flags in `argv` into tensorfx's.

  Example:
    >>> translate(['--gematria_action=train', '--gematria_input_file',
    ...            'a.tfrecord,b.tfrecord',
    ...            '--gematria_max_blocks_in_batch=100'])
    ['--action', 'train', '--data-train', 'a.tfrecord', 'b.tfrecord',
     '--batch-size', '100']

  Returns:
    The arguments, each Gematria flag replaced by the tensorfx flags of the
    same meaning, the others unchanged and first.

  Raises:
    ConfigurationError: a Gematria flag without a tensorfx meaning, or a
      value tensorfx cannot take, naming the flag.
  """
  flags, rest = _split(argv)
  if not flags:
    return list(argv)
  action = 'train'
  for name, value in flags:
    if name == 'gematria_action':
      action = value.strip().lower()
      if action not in _ACTIONS:
        raise ConfigurationError(
          f'--gematria_action must be one of {", ".join(_ACTIONS)}. '
          f'Received: --gematria_action={value}'
        )
  out: list[str] = []
  filters: list[str] = []
  task_names: list[str] = []
  for name, value in flags:
    if name in _NO_MEANING and not (
      name == 'gematria_synchronous_training' and _bool(name, value)
    ):
      raise _no_meaning(name)
    handler = _HANDLERS.get(name)
    if handler is None:
      if name == 'gematria_throughput_source_filter':
        filters.append(value)
        continue
      if name == 'gematria_task_names':
        task_names.extend(v for v in value.split(',') if v)
        continue
      raise ConfigurationError(
        f'--{name} is not a Gematria flag tensorfx knows (see '
        'docs/migrating/gematria.md for the flags it maps). Received: '
        f'--{name}={value}'
      )
    out.extend(handler(name, value, action))
  out.extend(_tasks(filters, task_names))
  return rest + out


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
    raise ConfigurationError(
      f'--gematria_action={action} reads no input. Received: --{name}={value}'
    )
  return [flag, *files]


def _epochs(name: str, value: str, action: str) -> list[str]:
  steps = int(value)
  # Gematria: zero or negative trains until interrupted; here 0.
  return ['--max-steps', str(max(steps, 0))]


def _batch(name: str, value: str, action: str) -> list[str]:
  if action == 'predict':
    return ['--predict-batch-size', value]
  return ['--batch-size', value, '--eval-batch-size', value]


def _enum(
  flag: str, values: dict[str, str] | None = None
) -> Callable[[str, str, str], list[str]]:
  def handle(name, value, action):
    key = value.strip().lower()
    if values is not None:
      if key not in values:
        raise ConfigurationError(
          f'--{name}={value} has no tensorfx equivalent (it takes '
          f'{", ".join(v.upper() for v in values)}).'
        )
      key = values[key]
    return [flag, key]

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


def _seq2seq(name: str, value: str, action: str) -> list[str]:
  # Gematria: "no effect for models that are not seq2seq"; none here is.
  _bool(name, value)
  return []


def _trained(name: str, value: str, action: str) -> list[str]:
  groups = [v for v in value.split(',') if v]
  return ['--trainable-pattern', '|'.join(groups)] if groups else []


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
  'gematria_eval_interval_secs': _plain('--eval-interval-secs'),
  'gematria_checkpoint_max_to_keep': _plain('--keep-checkpoints'),
  'gematria_save_checkpoint_secs': _plain('--checkpoint-interval-secs'),
  'gematria_save_checkpoint_epochs': _plain('--checkpoint-interval-steps'),
  'gematria_save_summaries_epochs': _plain('--log-interval-steps'),
  'gematria_grad_clip_norm': _plain('--clip-norm'),
  'gematria_optimizer_type': _enum(
    '--optimizer', {'adam': 'adam', 'sgd': 'sgd', 'rmsprop': 'rmsprop'}
  ),
  'gematria_learning_rate_schedule': _enum(
    '--learning-rate-schedule', _SCHEDULES
  ),
  'gematria_decay_steps': _plain('--decay-steps'),
  'gematria_decay_rate': _plain('--decay-rate'),
  'gematria_random_seed': _seed,
  'gematria_collected_percentile_ranks': lambda name, value, action: [
    '--percentile-ranks',
    *[v for v in value.split(',') if v],
  ],
  'gematria_use_seq2seq_loss': _seq2seq,
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
