"""Job settings: the output, the action, and how long to wait for a cluster."""

import argparse
import dataclasses
from typing import Any, Optional, Self

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section

ACTIONS = ('train', 'evaluate', 'export', 'predict')


def add_arguments(parser: argparse.ArgumentParser) -> None:
  job = _section.group(parser, 'job')
  job.add_argument(
    '--config',
    metavar='PATH',
    help='a run configuration (YAML) giving any of these '
    'flags; flags on the command line override it',
  )
  # Cloud training services pass the output directory as --job-dir.
  job.add_argument(
    '--output',
    '--job-dir',
    dest='output',
    metavar='PATH',
    help='the job output directory (local or gs://): '
    'checkpoints, summaries and the model go there',
  )
  job.add_argument(
    '--print-config',
    action='store_true',
    help='print the fully resolved configuration (defaults, '
    'the --config file and these flags) as YAML, ready to '
    'save as a run.yaml, and exit',
  )
  job.add_argument(
    '--action',
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
  job.add_argument(
    '--follow',
    action='store_true',
    help='with --action evaluate: evaluate each new '
    'checkpoint of the job once, as the evaluator task does '
    '(the steps done are kept in summaries/eval/'
    'evaluated.json), until the job records its end',
  )
  job.add_argument(
    '--eval-interval-secs',
    type=float,
    default=1.0,
    metavar='S',
    help='with --follow: seconds between looks for new '
    "checkpoints (Gematria's --gematria_eval_interval_secs; "
    'default: %(default)s)',
  )
  job.add_argument(
    '--checkpoint',
    metavar='PATH',
    help='the checkpoint --action evaluate/export/predict '
    'reads: a '
    'prefix (OUTPUT/checkpoints/ckpt-200), a directory (its '
    'latest) (default: the latest of OUTPUT/checkpoints)',
  )
  job.add_argument(
    '--export-dir',
    metavar='PATH',
    help='where --action export writes the SavedModel (default: OUTPUT/model)',
  )
  job.add_argument(
    '--cluster-timeout-secs',
    type=int,
    default=300,
    metavar='S',
    help='how long a task waits for the rest of the '
    "cluster (and for the chief's data analysis) before "
    'failing with the address it could not reach (default: '
    '%(default)s)',
  )
  job.add_argument(
    '--min-shard-bytes',
    type=int,
    default=256 << 10,
    metavar='BYTES',
    help='with parameter servers: variables larger than this '
    'are split across them (default: %(default)s)',
  )


def check(args: Any) -> None:
  if (
    getattr(args, 'follow', False)
    and _section.read(args, 'action', 'train') != 'evaluate'
  ):
    raise ConfigurationError(
      "--follow follows a job's checkpoints with --action evaluate. "
      f'Received: --follow --action={args.action}'
    )
  _section.check_positive(args, 'cluster_timeout_secs')
  _section.check_positive(args, 'min_shard_bytes')
  _section.check_positive(
    args, 'eval_interval_secs', expected='a positive number'
  )


@dataclasses.dataclass(frozen=True)
class JobSettings:
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

  output: Optional[str] = None
  action: str = 'train'
  follow: bool = False
  checkpoint: Optional[str] = None
  export_dir: Optional[str] = None
  cluster_timeout_secs: float = 300.0
  min_shard_bytes: int = 256 << 10
  eval_interval_secs: float = 1.0

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      output=read(args, 'output'),
      action=read(args, 'action', 'train'),
      follow=bool(read(args, 'follow', False)),
      checkpoint=read(args, 'checkpoint'),
      export_dir=read(args, 'export_dir'),
      cluster_timeout_secs=float(read(args, 'cluster_timeout_secs', 300)),
      min_shard_bytes=int(read(args, 'min_shard_bytes', 256 << 10)),
      eval_interval_secs=float(read(args, 'eval_interval_secs', 1.0)),
    )
