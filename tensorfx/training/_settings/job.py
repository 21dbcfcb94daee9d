"""Job settings: the output, the action, and how long to wait for a cluster."""

import dataclasses
from typing import Any, Optional

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

ACTIONS = ('train', 'evaluate', 'export', 'predict')

# Flags without a field: `ModelArguments.parse` reads them before the
# settings are built.
_CONFIG = _section.Flag(
  ('--config',),
  'job',
  dict(
    metavar='PATH',
    help='a run configuration (YAML) giving any of these '
    'flags; flags on the command line override it',
  ),
)
_PRINT_CONFIG = _section.Flag(
  ('--print-config',),
  'job',
  dict(
    action='store_true',
    help='print the fully resolved configuration (defaults, '
    'the --config file and these flags) as YAML, ready to '
    'save as a run.yaml, and exit',
  ),
)


# The flags' order in --help (and --print-config).
_HELP_ORDER = (
  'config',
  'output',
  'print_config',
  'action',
  'follow',
  'eval_interval_secs',
  'checkpoint',
  'export_dir',
  'cluster_timeout_secs',
  'min_shard_bytes',
)


@dataclasses.dataclass(frozen=True)
class JobSettings(_section.Section):
  """What the job does and where its outputs go.

  Attributes:
    output: the job's output directory (`--output`, `--job-dir`).
    action: `train`, `evaluate`, `export` or `predict` (`--action`).
    follow: with `evaluate`, evaluate each new checkpoint until the job
      ends (`--follow`).
    checkpoint: the checkpoint `evaluate`/`export`/`predict` read
      (`--checkpoint`); None for the latest.
    export_dir: where `export` writes the model (`--export-dir`).
    cluster_timeout_secs: how long a task waits for the rest of the
      cluster and for the chief's analysis (`--cluster-timeout-secs`).
    min_shard_bytes: with parameter servers, the size above which a
      variable is split across them (`--min-shard-bytes`).
    eval_interval_secs: with `follow`, seconds between looks for new
      checkpoints (`--eval-interval-secs`).
  """

  EXTRA_FLAGS = (_CONFIG, _PRINT_CONFIG)

  # Cloud training services pass the output directory as --job-dir.
  output: Optional[str] = _section.setting(
    '--output',
    '--job-dir',
    group='job',
    metavar='PATH',
    help='the job output directory (local or gs://): '
    'checkpoints, summaries and the model go there',
  )
  action: str = _section.setting(
    '--action',
    group='job',
    type=str.lower,
    choices=ACTIONS,
    default='train',
    help='what ModelTrainer.train() does: train; evaluate '
    'a checkpoint (--checkpoint, default the latest) on the '
    'validation targets without training, then exit (with '
    '--follow: each new checkpoint until the job ends); '
    'export a checkpoint as the SavedModel; or predict the '
    'instances of --predict-input with a checkpoint, then '
    'exit (default: %(default)s)',
  )
  follow: bool = _section.setting(
    '--follow',
    group='job',
    action='store_true',
    default=False,
    convert=bool,
    help='with --action evaluate: evaluate each new '
    'checkpoint of the job once, as the evaluator task does '
    '(the steps done are kept in summaries/eval/'
    'evaluated.json), until the job records its end',
  )
  checkpoint: Optional[str] = _section.setting(
    '--checkpoint',
    group='job',
    metavar='PATH',
    help='the checkpoint --action evaluate/export/predict '
    'reads: a '
    'prefix (OUTPUT/checkpoints/ckpt-200), a directory (its '
    'latest) (default: the latest of OUTPUT/checkpoints)',
  )
  export_dir: Optional[str] = _section.setting(
    '--export-dir',
    group='job',
    metavar='PATH',
    help='where --action export writes the SavedModel (default: OUTPUT/model)',
  )
  cluster_timeout_secs: float = _section.setting(
    '--cluster-timeout-secs',
    group='job',
    type=int,
    default=300,
    convert=float,
    metavar='S',
    check=_section.positive(),
    help='how long a task waits for the rest of the '
    "cluster (and for the chief's data analysis) before "
    'failing with the address it could not reach (default: '
    '%(default)s)',
  )
  min_shard_bytes: int = _section.setting(
    '--min-shard-bytes',
    group='job',
    type=int,
    default=256 << 10,
    convert=int,
    metavar='BYTES',
    check=_section.positive(),
    help='with parameter servers: variables larger than this '
    'are split across them (default: %(default)s)',
  )
  eval_interval_secs: float = _section.setting(
    '--eval-interval-secs',
    group='job',
    type=float,
    default=1.0,
    convert=float,
    metavar='S',
    check=_section.positive(expected='a positive number'),
    help='with --follow: seconds between looks for new '
    "checkpoints (Gematria's --gematria_eval_interval_secs; "
    'default: %(default)s)',
  )

  @classmethod
  def ordered_flags(cls) -> list[_section.Flag]:
    # --help lists the flags as before the fields were declared: --config
    # and --print-config among them, --eval-interval-secs after --follow.
    return sorted(
      super().ordered_flags(), key=lambda f: _HELP_ORDER.index(f.dest)
    )

  @classmethod
  def check(cls, args: Any) -> None:
    """Checks the flags, and that --follow goes with --action evaluate."""
    super().check(args)
    settings = cls.from_args(args)
    if settings.follow and settings.action != 'evaluate':
      raise ConfigurationError(
        "--follow follows a job's checkpoints with --action evaluate. "
        f'Received: --follow --action={settings.action}'
      )
