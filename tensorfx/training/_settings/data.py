"""Data settings: where the data is, what it means, which records to keep."""

import argparse
import dataclasses
from typing import Any, Optional, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.data import _filters
from tensorfx.training._settings import _section


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


def _filters_check(name: str, value: Any) -> None:
  _filters.parse_filters(value)


def _vocabularies_check(name: str, value: Any) -> None:
  vocabularies(value)


def _vocabularies(value: Any) -> Tuple[Tuple[str, str], ...]:
  return tuple(vocabularies(value).items())


@dataclasses.dataclass(frozen=True)
class DataSettings(_section.Section):
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

  train: Tuple[str, ...] = _section.listed(
    '--data-train',
    group='data',
    metavar='PATH',
    help='training data files or patterns (local or gs://)',
  )
  eval: Tuple[str, ...] = _section.listed(
    '--data-eval',
    group='data',
    metavar='PATH',
    help='evaluation data files or patterns (local or gs://)',
  )
  schema: Optional[str] = _section.setting(
    '--data-schema',
    group='data',
    metavar='PATH',
    help='the schema of the data (YAML)',
  )
  metadata: Optional[str] = _section.setting(
    '--data-metadata',
    group='data',
    metavar='PATH',
    help='the metadata of the data (an analysis output)',
  )
  features: Optional[str] = _section.setting(
    '--data-features',
    group='data',
    metavar='PATH',
    help='the features of the model (YAML)',
  )
  skip_bad_records: bool = _section.setting(
    '--skip-bad-records',
    group='data',
    action='store_true',
    default=False,
    convert=bool,
    help='skip bad records (CSV: wrong column count, '
    'unparsable values, a missing target; TFRecord: not a '
    'tf.Example, a feature of the wrong type or count, a '
    'missing required feature) instead of failing the job; '
    'they are counted in the log and the summaries',
  )
  filters: Tuple[str, ...] = _section.listed(
    '--data-filter',
    group='data',
    metavar='FIELD=REGEX',
    check=_filters_check,
    help='keep only the records whose FIELD matches REGEX (re.search; '
    'any value of a multivalent field); several must all match',
  )
  vocabularies: Tuple[Tuple[str, str], ...] = _section.listed(
    '--data-vocabulary',
    group='data',
    metavar='FEATURE=PATH',
    check=_vocabularies_check,
    convert=_vocabularies,
    help='the vocabulary of a onehot or embedding feature from a file of '
    'one token per line (its line is its index; other values go to the '
    "feature's OOV buckets) instead of the analysis; Gematria's "
    '--gematria_tokens_file is tokens=PATH',
  )

  @classmethod
  def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
    """Adds the section's flags but `--data-filter` and `--data-vocabulary`.

    Those come after the job's flags, where `--help` and job.yaml have
    always had them: `add_filter_arguments` adds them.
    """
    _add(parser, after_job=False)


# The fields whose flags `add_filter_arguments` adds.
_AFTER_JOB = ('filters', 'vocabularies')


def _add(parser: argparse.ArgumentParser, after_job: bool) -> None:
  for name, flag in _section.flags(DataSettings):
    if (name in _AFTER_JOB) == after_job:
      flag.add_to(parser)


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
  """Adds `--data-filter` and `--data-vocabulary`, after the job's flags."""
  _add(parser, after_job=True)
