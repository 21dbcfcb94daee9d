"""Errors of the cloud layer: a failed API call, a job that did not succeed."""

from tensorfx._errors import TensorFXError


class CloudError(TensorFXError, RuntimeError):
  """A Cloud Storage or Vertex AI call failed (access, quota, a bad request).

  The message names the call and repeats the service's own explanation.
  """


class JobFailedError(CloudError):
  """A Vertex AI job ended without succeeding (failed, cancelled, expired).

  Attributes:
    job: the job resource as the service last returned it (a JSON dict).
    state: the job's final state, e.g. 'JOB_STATE_FAILED'.
  """

  def __init__(
    self, message: str, job: dict | None = None, state: str | None = None
  ) -> None:
    super().__init__(message)
    self.job = job
    self.state = state
