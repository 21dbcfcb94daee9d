"""Summary settings: what a run adds to TensorBoard besides its scalars."""

import dataclasses
from typing import Any, Optional, Tuple

from tensorfx._errors import ConfigurationError
from tensorfx.training._settings import _section


def parse_profile_steps(value: Any) -> tuple[int, int] | None:
  """Parses `--profile-steps FIRST[,LAST]` (or a pair) into `(first, last)`.

  Example:
    >>> parse_profile_steps('10,20'), parse_profile_steps('5')
    ((10, 20), (5, 5))

  Returns:
    `(first, last)` with `1 <= first <= last`, or None for none.

  Raises:
    ConfigurationError: naming the flag and the value received.
  """
  if value is None or value == '':
    return None
  if isinstance(value, (tuple, list)):
    parts = [str(v) for v in value]
  else:
    parts = str(value).split(',')
  try:
    steps = [int(p.strip()) for p in parts]
  except ValueError:
    steps = []
  if len(steps) == 1:
    steps *= 2
  if len(steps) != 2 or not 1 <= steps[0] <= steps[1]:
    raise ConfigurationError(
      '--profile-steps must be FIRST,LAST (or one STEP), steps counted '
      'from 1 with FIRST <= LAST, e.g. --profile-steps 10,20. Received: '
      f'--profile-steps={value}'
    )
  return steps[0], steps[1]


def _profile_steps(name: str, value: Any) -> None:
  parse_profile_steps(value)


def _port(name: str, value: Any) -> None:
  if not 0 < value < 65536:
    raise ConfigurationError(
      f'{name} must be a TCP port, 1 to 65535. Received: {name}={value}'
    )


@dataclasses.dataclass(frozen=True)
class SummarySettings(_section.Section):
  """What the run writes for TensorBoard besides loss and metrics.

  Attributes:
    profile_steps: `(first, last)`: the training steps profiled
      (`--profile-steps`), both included; None for no profile.
    profiler_port: the port of the profiler server each training process
      starts (`--profiler-port`, Gematria's `--gematria_run_tf_profiler`),
      for TensorBoard's "Capture profile"; None for no server.
  """

  profile_steps: Optional[Tuple[int, int]] = _section.setting(
    '--profile-steps',
    group='logging',
    metavar='FIRST[,LAST]',
    check=_profile_steps,
    convert=parse_profile_steps,
    help='write a profile of training steps FIRST to '
    'LAST (counted from 1, like the global step) to '
    "summaries/train/plugins/profile/, for TensorBoard's "
    'Profile tab '
    '(pip install "tensorboard-plugin-profile>=2.20,<2.23") '
    '(default: none)',
  )
  profiler_port: Optional[int] = _section.setting(
    '--profiler-port',
    group='logging',
    type=int,
    metavar='PORT',
    check=_section.optional(_port),
    help='start a profiler server on PORT in each training process, '
    "from which TensorBoard's Profile tab captures a profile on demand "
    '(Capture profile, host:PORT) (default: none)',
  )
