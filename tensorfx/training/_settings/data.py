"""Data settings: where the data is, what it means, which records to keep."""

import argparse
import dataclasses
from typing import Any, Optional, Self, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.data import _filters
from tensorfx.training._arguments import listflags as _listflags
from tensorfx.training._settings import _section


def add_arguments(parser: argparse.ArgumentParser) -> None:
  data = _section.group(parser, 'data')
  _listflags.add_list_argument(
    data,
    '--data-train',
    metavar='PATH',
    help='training data files or patterns (local or gs://)',
  )
  _listflags.add_list_argument(
    data,
    '--data-eval',
    metavar='PATH',
    help='evaluation data files or patterns (local or gs://)',
  )
  data.add_argument(
    '--data-schema', metavar='PATH', help='the schema of the data (YAML)'
  )
  data.add_argument(
    '--data-metadata',
    metavar='PATH',
    help='the metadata of the data (an analysis output)',
  )
  data.add_argument(
    '--data-features', metavar='PATH', help='the features of the model (YAML)'
  )
  data.add_argument(
    '--skip-bad-records',
    action='store_true',
    help='skip bad records (CSV: wrong column count, '
    'unparsable values, a missing target; TFRecord: not a '
    'tf.Example, a feature of the wrong type or count, a '
    'missing required feature) instead of failing the job; '
    'they are counted in the log and the summaries',
  )


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
  # After the job's flags, where --help and job.yaml have always had it.
  _listflags.add_list_argument(
    _section.group(parser, 'data'),
    '--data-filter',
    metavar='FIELD=REGEX',
    help='keep only the records whose FIELD matches REGEX (re.search; '
    'any value of a multivalent field); several must all match',
  )
  _listflags.add_list_argument(
    _section.group(parser, 'data'),
    '--data-vocabulary',
    metavar='FEATURE=PATH',
    help='the vocabulary of a onehot or embedding feature from a file of '
    'one token per line (its line is its index; other values go to the '
    "feature's OOV buckets) instead of the analysis; Gematria's "
    '--gematria_tokens_file is tokens=PATH',
  )


def check(args: Any) -> None:
  _filters.parse_filters(_section.read(args, 'data_filter'))
  vocabularies(_section.read(args, 'data_vocabulary'))


def vocabularies(items: Any) -> dict[str, str]:
  """`--data-vocabulary FEATURE=PATH` items as a dict, checked."""
  found = {}
  for item in items or ():
    name, sep, path = str(item).partition('=')
    if not sep or not name.strip() or not path.strip():
      raise ConfigurationError(
        '--data-vocabulary expects FEATURE=PATH (e.g. tokens=tokens.txt). '
        f'Received: --data-vocabulary={item}'
      )
    found[name.strip()] = path.strip()
  return found


@dataclasses.dataclass(frozen=True)
class DataSettings:
  """Where the data is and which of it is read.

  Attributes:
    train: training data files or patterns (`--data-train`).
    eval: evaluation data files or patterns (`--data-eval`).
    schema: the schema file (`--data-schema`).
    metadata: an analysis output (`--data-metadata`).
    features: the feature set file (`--data-features`).
    skip_bad_records: skip and count bad records instead of failing
      (`--skip-bad-records`).
    filters: `FIELD=REGEX` record filters, all of which must match
      (`--data-filter`).
    vocabularies: `(feature, file)` pairs: vocabularies read from files
      (`--data-vocabulary`).
  """

  train: Tuple[str, ...] = ()
  eval: Tuple[str, ...] = ()
  schema: Optional[str] = None
  metadata: Optional[str] = None
  features: Optional[str] = None
  skip_bad_records: bool = False
  filters: Tuple[str, ...] = ()
  vocabularies: Tuple[Tuple[str, str], ...] = ()

  @classmethod
  def from_args(cls, args: Any) -> Self:
    read = _section.read
    return cls(
      train=tuple(read(args, 'data_train', ())),
      eval=tuple(read(args, 'data_eval', ())),
      schema=read(args, 'data_schema'),
      metadata=read(args, 'data_metadata'),
      features=read(args, 'data_features'),
      skip_bad_records=bool(read(args, 'skip_bad_records', False)),
      filters=tuple(read(args, 'data_filter', ())),
      vocabularies=tuple(
        vocabularies(read(args, 'data_vocabulary', ())).items()
      ),
    )
