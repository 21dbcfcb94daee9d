"""`load_config`: what a `--config` YAML file says.

The config file is either form a user already has:

- Vertex AI's (what `gcloud ai custom-jobs create --config` and
  `gcloud ai hp-tuning-jobs create --config` read): `workerPoolSpecs`,
  `scheduling`, `serviceAccount`, `baseOutputDirectory`, ..., and for tuning
  `studySpec` with `maxTrialCount`/`parallelTrialCount` (optionally the job
  under `trialJobSpec`); read by `_vertexconfig`;
- legacy AI Platform Training's (`gcloud ai-platform jobs submit training
  --config`; the service was shut down on 2025-01-31): `trainingInput` with
  `scaleTier`, `masterType`, `workerType`, `parameterServerType`,
  `evaluatorType`, their counts and `*Config`s, and `hyperparameters`.
  It is translated (`_legacyconfig`): legacy machine names (`standard`,
  `large_model`, `complex_model_m`, `standard_gpu`, ...) become the Compute
  Engine machine types (and GPUs) they stood for, scale tiers become worker
  pools.

Every key is checked: an unknown or misspelled key, a negative count or a
bad value is an error naming the file, line and key, raised before anything
is built or uploaded.
"""

import dataclasses
import os
import types

from tensorfx import _yaml
from tensorfx._errors import ConfigurationError
from tensorfx._errors import DataError
from tensorfx.cloud import _checks
from tensorfx.cloud import _legacyconfig
from tensorfx.cloud import _vertexconfig


@dataclasses.dataclass(frozen=True)
class ConfigFile:
  """What a `--config` file says, before flags are applied.

  Attributes:
    source: the file's path.
    fields: `JobSpec` keyword arguments the file sets (region, job_dir,
      args, python_module, package_uris, labels, service_account, network,
      timeout_seconds, display_name, study).
    pools: role -> pool settings (dicts of `WorkerPool` fields), for the
      pools the file describes; empty when it describes none.
  """

  source: str
  fields: types.MappingProxyType
  pools: types.MappingProxyType


def load_config(path):
  """Reads a `--config` file (Vertex AI or legacy AI Platform form).

  Example:
    >>> config = load_config('config.yaml')  # doctest: +SKIP
    >>> config.pools['workers']['replica_count']  # doctest: +SKIP
    9

  Args:
    path: a local YAML file.

  Returns:
    A `ConfigFile`.

  Raises:
    ConfigurationError: the file does not exist, is not valid YAML, or has
      an unknown key or a bad value; the message names the file, line and
      key.
  """
  path = os.fspath(path)
  if not os.path.isfile(path):
    raise ConfigurationError(
      f'--config: no such file. Received: config={path!r}'
    )
  with open(path) as f:
    text = f.read()
  try:
    doc = _yaml.load_yaml(text, path)
  except DataError as e:
    raise ConfigurationError(str(e)) from None
  where = _yaml.root(doc, path)
  if not isinstance(doc, dict) or not doc:
    raise _checks.fail(
      where,
      'expected a mapping with trainingInput (legacy '
      'AI Platform) or workerPoolSpecs/studySpec (Vertex AI)',
      doc if doc is not None else {},
    )
  if 'trainingInput' in doc:
    fields, pools = _legacyconfig.read(where, doc)
  else:
    fields, pools = _vertexconfig.read(where, doc)
  return ConfigFile(
    path, types.MappingProxyType(fields), types.MappingProxyType(pools)
  )
