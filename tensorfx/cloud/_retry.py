"""Retries of Cloud calls: transient failures are waited out, to a deadline.

Every call tensorfx makes to Cloud Storage, Vertex AI and Cloud Logging
(staging uploads, job create/get/cancel, log reads, the status poll) goes
through `call`: a `google.api_core.retry.Retry` that retries what a
service says will pass (429 Too Many Requests, 500, 502, 503, 504) and a
connection refused, reset or timed out, with exponential backoff (1 s
doubling to 32 s, jittered) up to a deadline, then gives up with a
`CloudError` that says how long it tried. Any other error (403, 404, a bad
request) is raised at once, for the caller to explain.

A single call tries for up to 2 minutes; one read of a job that is being
followed (`wait`, `status`, `logs --follow`) for up to 15 minutes, so a
follower outlasts an API outage of minutes.

A create is retried too: a 429 or 503 means the service did not take the
request. A connection reset after the request was sent could, rarely, hide
a job that was created; the retry then creates a second one, which the
console lists under the same display name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tensorfx._logging import logger
from tensorfx.cloud._errors import CloudError

# Seconds a single call, and one read of a followed job, may keep retrying.
CALL_DEADLINE = 120.0
POLL_DEADLINE = 900.0
# The backoff: the first wait, its growth and its ceiling (seconds).
INITIAL = 1.0
MULTIPLIER = 2.0
MAXIMUM = 32.0

_T = TypeVar('_T')


def transient(error: BaseException) -> bool:
  """Whether `error` is worth retrying: throttling, a 5xx, a lost connection.

  Example:
    >>> from google.api_core import exceptions
    >>> transient(exceptions.ServiceUnavailable('down'))
    True
    >>> transient(exceptions.NotFound('no such job'))
    False
  """
  from google.api_core import exceptions
  from google.auth import exceptions as auth_exceptions
  import requests

  return isinstance(
    error,
    (
      exceptions.TooManyRequests,
      exceptions.InternalServerError,
      exceptions.BadGateway,
      exceptions.ServiceUnavailable,
      exceptions.GatewayTimeout,
      requests.exceptions.ConnectionError,
      requests.exceptions.Timeout,
      requests.exceptions.ChunkedEncodingError,
      auth_exceptions.TransportError,
      ConnectionError,
      TimeoutError,
    ),
  )


def call(
  what: str,
  function: Callable[..., _T],
  *args: Any,
  deadline: float | None = None,
  **kwargs: Any,
) -> _T:
  """`function(*args, **kwargs)`, retried while it fails transiently.

  Example:
    >>> call('Vertex AI: reading the job', client.get_custom_job,
    ...      name=name)  # doctest: +SKIP

  Args:
    what: the call, for the log and the error (`Cloud Storage: uploading
      trainer.tar.gz`).
    function: the call to make.
    *args: its positional arguments.
    deadline: seconds to keep retrying (default `CALL_DEADLINE`).
    **kwargs: its keyword arguments.

  Returns:
    What `function` returned.

  Raises:
    CloudError: it still failed transiently at the deadline.
    Exception: what `function` raised, when it is not transient.
  """
  from google.api_core import exceptions
  from google.api_core import retry

  deadline = CALL_DEADLINE if deadline is None else deadline

  def note(error: BaseException) -> None:
    logger.warning('%s failed (%s); retrying', what, _describe(error))

  policy = retry.Retry(
    predicate=transient,
    initial=INITIAL,
    maximum=MAXIMUM,
    multiplier=MULTIPLIER,
    timeout=deadline,
    on_error=note,
  )
  try:
    return policy(function)(*args, **kwargs)
  except exceptions.RetryError as e:
    raise CloudError(
      f'{what} failed, still after retrying for '
      f'{deadline:.0f} s: {_describe(e.cause or e)}'
    ) from None


def _describe(error: BaseException) -> str:
  code = getattr(error, 'code', None)
  message = (
    getattr(error, 'message', None) or str(error) or type(error).__name__
  )
  return f'{code} {message}' if isinstance(code, int) else message
