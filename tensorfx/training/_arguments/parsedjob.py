"""ParsedJob: what `ModelArguments.parse(parse_job=True)` returns.

tensorfx (like the original tensorfx's first versions) returns the pair
`(args, output)`; the original's last version returned the arguments alone,
with the job's output as `args.output`. A `ParsedJob` is both: a pair that
unpacks as before, whose attributes are the arguments'.

This module must not import TensorFlow (see `tensorfx.training._arguments.args`).
"""

from typing import Any, Self


class ParsedJob(tuple):
  """The pair `(args, output)` that also reads and writes as `args`.

  Example:
    >>> job = ParsedJob(args, 'gs://bucket/job')  # doctest: +SKIP
    >>> arguments, output = job                   # tensorfx's form
    >>> job.batch_size, job.output                # the original's form
    (32, 'gs://bucket/job')

  Builders and `ModelTrainer.train` given a `ParsedJob` use its arguments.
  """

  __slots__ = ()

  def __new__(cls, args: Any, output: Any) -> Self:
    return super().__new__(cls, (args, output))

  def __getnewargs__(self) -> tuple:
    return tuple(self)

  @property
  def args(self) -> Any:
    """The parsed arguments."""
    return tuple.__getitem__(self, 0)

  def __getattr__(self, name: str) -> Any:
    return getattr(tuple.__getitem__(self, 0), name)

  def __setattr__(self, name: str, value: Any) -> None:
    setattr(tuple.__getitem__(self, 0), name, value)

  def __dir__(self) -> list:
    return sorted(set(dir(tuple.__getitem__(self, 0))) | {'args'})


def arguments_of(args: Any) -> Any:
  """The arguments themselves, when `args` is a `ParsedJob`."""
  return args.args if isinstance(args, ParsedJob) else args
